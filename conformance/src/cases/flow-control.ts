/**
 * Flow control across processes (an extension of v1, `ClaimInput.flowControl`;
 * rules in `@cairnq/protocol` `flow-control.ts`): `globalConcurrency` and
 * `rateLimit` bound what claims take, concurrent claims included, and lease
 * recovery frees a slot. Run only for stores declaring `flowControl`.
 */
import type { ClaimInput, FlowControl, Task } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { EXPIRY_WAIT_MS, SHORT_LEASE_MS } from "../case.js";

/** Why a case needs `capabilities.flowControl`, or `null` when the store has it. */
export const needsFlowControl = (c: { flowControl?: boolean }): string | null => (c.flowControl === true ? null : "flowControl (cross-process globalConcurrency / rateLimit in claim)");

function limited(t: CaseContext, workerId: string, flowControl: Record<string, FlowControl>, extra: Partial<ClaimInput> = {}): Promise<Task[]> {
  return t.claim(workerId, { names: Object.keys(flowControl), limit: 10, flowControl, ...extra });
}

async function running(t: CaseContext, name: string): Promise<number> {
  return (await t.all()).filter((row) => row.name === name && row.status === "running").length;
}

export const flowControlCases: readonly ConformanceCase[] = [
  {
    id: "flow-global-concurrency",
    title: "globalConcurrency caps running tasks of a name across workers and queues; a settled task frees its slot; other names are not held back",
    spec: "store.ts ClaimInput.flowControl, flow-control.ts",
    skipUnless: needsFlowControl,
    async run(t) {
      for (let i = 0; i < 5; i++) await t.submit("lim");
      for (let i = 0; i < 3; i++) await t.submit("free");
      await t.submit("lim", { queue: "elsewhere" });
      const limits = { lim: { globalConcurrency: 2 } };
      // One running in another queue counts against the same name.
      await t.claimOne(t.w3, { queues: ["elsewhere"], names: ["lim"] });
      const first = await t.claim(t.w1, { names: ["lim", "free"], limit: 10, flowControl: limits });
      t.expect(first.filter((row) => row.name === "lim")).toHaveLength(1);
      t.expect(first.filter((row) => row.name === "free")).toHaveLength(3);
      t.expect(await limited(t, t.w2, limits)).toEqual([]);
      const one = first.find((row) => row.name === "lim") as Task;
      await t.store.complete({ taskId: one.id, workerId: t.w1, result: null });
      t.expect(await limited(t, t.w2, limits)).toHaveLength(1);
      t.expect(await running(t, "lim")).toBe(2);
      // A claim without limits is not held back (the limit binds only claims that carry it).
      t.expect(await t.claim(t.w2, { names: ["lim"], limit: 10 })).toHaveLength(3);
    },
  },
  {
    id: "flow-global-concurrency-concurrent-claims",
    title: "concurrent claims by many workers never take more than globalConcurrency rows of the name",
    spec: "store.ts ClaimInput.flowControl, flow-control.ts",
    skipUnless: needsFlowControl,
    async run(t) {
      for (let i = 0; i < 12; i++) await t.submit("lim");
      const limits = { lim: { globalConcurrency: 3 } };
      const workers = [t.w1, t.w2, t.w3, t.w1, t.w2, t.w3];
      const results = await Promise.all(workers.map((w) => limited(t, w, limits, { limit: 2 })));
      t.expect(results.flat()).toHaveLength(3);
      t.expect(await running(t, "lim")).toBe(3);
    },
  },
  {
    id: "flow-lease-recovery-frees-slot",
    title: "an expired lease stops counting once recovery runs: the next claim recovers it and takes the slot",
    spec: "store.ts ClaimInput.flowControl, flow-control.ts, §5.10",
    skipUnless: needsFlowControl,
    async run(t) {
      await t.submit("lim");
      await t.submit("lim");
      const limits = { lim: { globalConcurrency: 1 } };
      t.expect(await limited(t, t.w1, limits, { leaseMs: SHORT_LEASE_MS })).toHaveLength(1);
      t.expect(await limited(t, t.w2, limits)).toEqual([]);
      await t.sleep(EXPIRY_WAIT_MS);
      const rows = await limited(t, t.w2, limits);
      t.expect(rows).toHaveLength(1);
      t.expect(await running(t, "lim")).toBe(1);
    },
  },
  {
    id: "flow-rate-limit-window",
    title: "rateLimit allows at most max claims of a name in any window of perMs, across workers; the window slides",
    spec: "store.ts ClaimInput.flowControl, flow-control.ts",
    skipUnless: needsFlowControl,
    async run(t) {
      for (let i = 0; i < 6; i++) await t.submit("rl");
      const limits = { rl: { rateLimit: { max: 2, perMs: 250 } } };
      const started = Date.now();
      const first = await limited(t, t.w1, limits);
      t.expect(first).toHaveLength(2);
      // Settling does not give rate back, unlike globalConcurrency.
      for (const row of first) await t.store.complete({ taskId: row.id, workerId: t.w1, result: null });
      const second = await limited(t, t.w2, limits);
      if (Date.now() - started < 250) t.expect(second).toEqual([]);
      else t.expect(second.length).toBeLessThanOrEqual(2);
      await t.sleep(300);
      const windowStart = Date.now();
      t.expect(await limited(t, t.w2, limits)).toHaveLength(2);
      const fourth = await limited(t, t.w1, limits);
      if (Date.now() - windowStart < 250) t.expect(fourth).toEqual([]);
    },
  },
  {
    id: "flow-both-limits-and-split-draws",
    title: "with both limits the tighter wins; a draw mixing limited and unlimited names is split so the unlimited names are not capped",
    spec: "store.ts ClaimInput.flowControl, flow-control.ts",
    skipUnless: needsFlowControl,
    async run(t) {
      for (let i = 0; i < 4; i++) await t.submit("a");
      for (let i = 0; i < 2; i++) await t.submit("b");
      const flowControl = { a: { globalConcurrency: 3, rateLimit: { max: 1, perMs: 60_000 } } };
      const rows = await t.claim(t.w1, { flowControl, draws: (_rows, index) => (index === 0 ? { names: ["a", "b"], limit: 4 } : null) });
      t.expect(rows.filter((row) => row.name === "a")).toHaveLength(1);
      t.expect(rows.filter((row) => row.name === "b")).toHaveLength(2);
    },
  },
  {
    id: "flow-control-inputs",
    title: "bad flowControl and a draw without names under limits are an InvalidArgument, nothing claimed",
    spec: "store.ts ClaimInput.flowControl, flow-control.ts",
    skipUnless: needsFlowControl,
    async run(t) {
      await t.submit("lim");
      await t.rejects(t.claim(t.w1, { names: ["lim"], flowControl: { lim: { globalConcurrency: 0 } } }), InvalidArgument, "globalConcurrency 0");
      await t.rejects(t.claim(t.w1, { names: ["lim"], flowControl: { lim: { rateLimit: { max: 1 } } as never } }), InvalidArgument, "rateLimit without perMs");
      await t.rejects(t.claim(t.w1, { names: ["lim"], flowControl: { lim: { burst: 1 } as never } }), InvalidArgument, "unknown key");
      await t.rejects(t.claim(t.w1, { flowControl: { lim: { globalConcurrency: 1 } } }), InvalidArgument, "names: null under limits");
      t.expect(await running(t, "lim")).toBe(0);
    },
  },
];
