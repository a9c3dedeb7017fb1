/**
 * The rate-window reads (an extension of v1; rules in `@cairnq/protocol`
 * `rate-windows.ts`): what a store tells `explain` of a `rateLimit` or
 * `groupRateLimit` window — the limit the last claim that recorded claims
 * under it enforced, the claims in the window, and when it has room again.
 */
import type { FlowReadStore, GroupReadStore, RateWindow, Task } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";
import { needsGroups } from "./groups.js";

const needsFlowControl = (c: { flowControl?: boolean }): string | null => (c.flowControl === true ? null : "flowControl (cross-process globalConcurrency / rateLimit in claim)");

const LEASE_MS = 60_000;
/** A window no run outlasts: its claims stay in it for the whole case. */
const HOUR_MS = 3_600_000;

/**
 * Claims with `claim` and gives the bounds of the instant its rate claims were recorded at: not before the draw
 * (the rows' lease start) and not after the claim returned.
 */
async function claimedBetween(claim: () => Promise<Task[]>): Promise<{ rows: Task[]; fromMs: number; toMs: number }> {
  const rows = await claim();
  const toMs = Date.now() + CLOCK_SLACK_MS;
  const fromMs = Math.min(...rows.map((row) => (row.lease_until_ms as number) - LEASE_MS)) - CLOCK_SLACK_MS;
  return { rows, fromMs, toMs };
}

/** That `window` is the full window of `limit` with `claims`, having room again when a claim recorded in `[fromMs, toMs]` leaves it. */
function expectFull(t: CaseContext, window: RateWindow | null, limit: { max: number; perMs: number }, claims: number, at: { fromMs: number; toMs: number }): void {
  t.expect({ ...window, roomAtMs: null }).toEqual({ limit, claims, roomAtMs: null });
  t.expect(window?.roomAtMs).toBeGreaterThanOrEqual(at.fromMs + limit.perMs);
  t.expect(window?.roomAtMs).toBeLessThanOrEqual(at.toMs + limit.perMs);
}

export const rateWindowCases: readonly ConformanceCase[] = [
  {
    id: "flow-rate-window-read",
    title: "rateWindow gives a name's rateLimit as the last claim recording claims enforced it, its claims in the window and when it has room again",
    spec: "store.ts StoreCapabilities.flowControl, rate-windows.ts FlowReadStore",
    skipUnless: needsFlowControl,
    async run(t) {
      const store = t.store.inner as unknown as FlowReadStore;
      t.expect(typeof store.rateWindow).toBe("function");
      for (let i = 0; i < 4; i++) await t.submit("rl");
      t.expect(await store.rateWindow("rl")).toBeNull();
      const limit = { max: 2, perMs: HOUR_MS };
      const claim = (max: number, n: number) => () => t.claim(t.w1, { names: ["rl"], limit: n, leaseMs: LEASE_MS, flowControl: { rl: { rateLimit: { max, perMs: HOUR_MS } } } });
      const first = await claimedBetween(claim(2, 1));
      t.expect(first.rows).toHaveLength(1);
      t.expect(await store.rateWindow("rl")).toEqual({ limit, claims: 1, roomAtMs: null });
      // The second claim fills the window: it has room again when the first claim (its 2nd newest) leaves it.
      t.expect(await claim(2, 5)()).toHaveLength(1);
      expectFull(t, await store.rateWindow("rl"), limit, 2, first);
      t.expect(await claim(2, 5)()).toEqual([]);
      // A claim that takes nothing records nothing; one that takes a task under another limit records that limit.
      t.expect(await claim(3, 1)()).toHaveLength(1);
      expectFull(t, await store.rateWindow("rl"), { max: 3, perMs: HOUR_MS }, 3, first);
      t.expect(await store.rateWindow("other")).toBeNull();
    },
  },
  {
    id: "group-rate-window-read",
    title: "taskGroup gives the group's window under the name's groupRateLimit as the last claim recording claims enforced it; each group its own",
    spec: "store.ts StoreCapabilities.groups, groups.ts TaskGroupInfo.groupRateWindow, rate-windows.ts",
    skipUnless: needsGroups,
    async run(t) {
      const store = t.store.inner as unknown as GroupReadStore;
      const acme: Task[] = [];
      for (let i = 0; i < 3; i++) acme.push(await t.submit("g", { payload: { group: "acme", i }, group: "acme" }));
      const globex = await t.submit("g", { payload: { group: "globex" }, group: "globex" });
      t.expect((await store.taskGroup((acme[0] as Task).id))?.groupRateWindow).toBeNull();
      const limit = { max: 2, perMs: HOUR_MS };
      const claimed = await claimedBetween(() => t.claim(t.w1, { names: ["g"], limit: 10, leaseMs: LEASE_MS, flowControl: { g: { groupRateLimit: limit } } }));
      t.expect(claimed.rows).toHaveLength(3);
      const waiting = acme.find((row) => !claimed.rows.some((c) => c.id === row.id)) as Task;
      const info = await store.taskGroup(waiting.id);
      t.expect(info?.group).toBe("acme");
      expectFull(t, info?.groupRateWindow ?? null, limit, 2, claimed);
      t.expect((await store.taskGroup(globex.id))?.groupRateWindow).toEqual({ limit, claims: 1, roomAtMs: null });
    },
  },
];
