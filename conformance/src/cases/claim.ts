/**
 * The claim cycle beyond §14 (§5.10): defaults, draw order, due time, the
 * `draws` planner, and lease recovery's three branches over the whole table.
 */
import type { ClaimDraw, Task } from "@cairnq/protocol";
import { LEASE_EXPIRED_ENVELOPE } from "@cairnq/protocol/adapter";
import type { ConformanceCase } from "../case.js";
import { at, DUE_LATER_MS, EXPIRY_WAIT_MS, ids, LEASE_MS, SHORT_LEASE_MS, sortedIds } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";

/** `[-priority, run_at_ms, id]`: claims must come out in ascending order of this key. */
function drawKey(row: Task): [number, number, string] {
  return [-row.priority, row.run_at_ms, row.id];
}

function compareKeys(a: [number, number, string], b: [number, number, string]): number {
  return a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
}

export const claimCases: readonly ConformanceCase[] = [
  {
    id: "claim-defaults",
    title: "claim takes one task by default with a 30000 ms lease, attempt + 1, and touches nothing else",
    spec: "§5.10",
    async run(t) {
      const a = await t.submit("job", { payload: { a: 1 }, metadata: { m: 1 } });
      await t.submit("job");
      const rows = await t.store.claim({ queues: ["default"], workerId: t.w1 });
      t.expect(rows).toHaveLength(1);
      const row = at(rows, 0);
      t.expect(Math.abs((row.lease_until_ms as number) - row.updated_at_ms - 30_000)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
      t.fields(row, { attempt: 1, worker_id: t.w1, status: "running", result: null, error: null, progress: null, message: null, completed_at_ms: null });
      const original = row.id === a.id ? a : await t.get(row.id);
      t.fields(row, {
        payload: original.payload,
        metadata: original.metadata,
        run_at_ms: original.run_at_ms,
        created_at_ms: original.created_at_ms,
        priority: original.priority,
      });
      t.expect(await t.store.claim({ queues: ["default"], workerId: t.w1, limit: 0 })).toEqual([]);
      t.expect(await t.store.claim({ queues: ["elsewhere"], workerId: t.w1, limit: 10 })).toEqual([]);
      t.expect((await t.all()).filter((r) => r.status === "queued")).toHaveLength(1);
    },
  },
  {
    id: "claim-order-priority-run-at-id",
    title: "single claims come out ordered by priority DESC, run_at_ms ASC, id ASC (ties within a millisecond fall to the id)",
    spec: "§5.10",
    async run(t) {
      await Promise.all(Array.from({ length: 24 }, (_, n) => t.submit("job", { priority: n % 3, payload: { n } })));
      const claimed: Task[] = [];
      for (let i = 0; i < 24; i++) claimed.push(await t.claimOne(t.w1));
      const keys = claimed.map(drawKey);
      t.expect(keys).toEqual([...keys].sort(compareKeys));
      t.expect(await t.claim(t.w1)).toEqual([]);
    },
  },
  {
    id: "claim-fifo-by-due-time",
    title: "claims are FIFO by due time, not creation: a retried-with-no-delay older task queues behind a newer one",
    spec: "§5.10, §5.16",
    async run(t) {
      const older = await t.submit("job");
      await t.sleep(5);
      const newer = await t.submit("job");
      await t.sleep(5);
      const first = await t.claimOne(t.w1);
      t.expect(first.id).toBe(older.id);
      await t.store.fail({ taskId: older.id, workerId: t.w1, error: {}, retryable: true, delayMs: 0 });
      t.expect((await t.claimOne(t.w1)).id).toBe(newer.id);
      t.expect((await t.claimOne(t.w1)).id).toBe(older.id);
    },
  },
  {
    id: "claim-delayed-not-claimable-until-due",
    title: "a delayed task is not claimable until run_at_ms, then is; an earlier-due later-created task goes first",
    spec: "§5.1, §5.10",
    async run(t) {
      // The delay outlasts the four calls before the sleep even on a loaded machine: with 200 ms, a gate where they took
      // longer saw the delayed task come due (rightly claimable) before the last check.
      const delayed = await t.submit("job", { runAtDelayMs: DUE_LATER_MS });
      t.expect(await t.claim(t.w1, { limit: 10 })).toEqual([]);
      const immediate = await t.submit("job");
      t.expect(ids(await t.claim(t.w1, { limit: 10 }))).toEqual([immediate.id]);
      t.expect(await t.claim(t.w1, { limit: 10 })).toEqual([]);
      await t.sleep(DUE_LATER_MS + 50);
      t.fields(await t.claimOne(t.w1), { id: delayed.id, attempt: 1 });
    },
  },
  {
    id: "claim-fail-delay-defers-requeue",
    title: "a retryable fail with delayMs requeues with run_at_ms = now + delay; the task is not claimable before then",
    spec: "§5.16 (T9), §6",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const requeued = await t.store.fail({ taskId: task.id, workerId: t.w1, error: {}, retryable: true, delayMs: DUE_LATER_MS });
      t.fields(requeued, { status: "queued", attempt: 1 });
      t.expect(Math.abs(requeued.run_at_ms - requeued.updated_at_ms - DUE_LATER_MS)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
      t.expect(await t.claim(t.w1)).toEqual([]);
      await t.sleep(DUE_LATER_MS + 50);
      t.fields(await t.claimOne(t.w1), { id: task.id, attempt: 2 });
    },
  },
  {
    id: "claim-keeps-last-error",
    title: "a re-claimed task still shows the last error, and so does the task once it succeeds",
    spec: "§4, §5.10",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const error = { code: "first", message: "attempt 1 failed" };
      await t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: true });
      t.fields(await t.claimOne(t.w2), { id: task.id, error, attempt: 2 });
      t.fields(await t.store.complete({ taskId: task.id, workerId: t.w2, result: { ok: true } }), { status: "succeeded", error });
    },
  },
  {
    id: "draws-several-in-one-cycle",
    title: "a draws planner runs several draws in one cycle; each sees the rows drawn so far and its index, and null ends the cycle",
    spec: "§5.10 step 5, §8.3",
    async run(t) {
      for (const name of ["a", "a", "b", "b", "c"]) await t.submit(name);
      const seen: { index: number; sofar: string[] }[] = [];
      const plan: ClaimDraw[] = [
        { names: ["a"], limit: 1 },
        { names: ["b"], limit: 5 },
        { names: ["a"], limit: 5 },
      ];
      const rows = await t.store.claim({
        queues: ["default"],
        workerId: t.w1,
        leaseMs: LEASE_MS,
        limit: 99,
        draws: (sofar, index) => {
          seen.push({ index, sofar: ids(sofar) });
          return plan[index] ?? null;
        },
      });
      t.expect(rows.map((row) => row.name)).toEqual(["a", "b", "b", "a"]);
      t.expect(seen.map((s) => s.index)).toEqual([0, 1, 2, 3]);
      t.expect(seen.map((s) => s.sofar.length)).toEqual([0, 1, 3, 4]);
      t.expect(at(seen, 3).sofar).toEqual(ids(rows));
      t.expect(new Set(ids(rows)).size).toBe(4);
      const left = await t.all();
      t.expect(left.filter((row) => row.status === "queued").map((row) => row.name)).toEqual(["c"]);
    },
  },
  {
    id: "draws-empty-names-or-zero-limit-take-nothing",
    title: "a draw with names [] or limit 0 takes nothing, and later draws in the same cycle still run",
    spec: "§5.10 step 5",
    async run(t) {
      await t.submit("a");
      await t.submit("b");
      const plan: ClaimDraw[] = [
        { names: [], limit: 10 },
        { names: null, limit: 0 },
        { names: ["b"], limit: 10 },
      ];
      const rows = await t.store.claim({ queues: ["default"], workerId: t.w1, leaseMs: LEASE_MS, draws: (_s, i) => plan[i] ?? null });
      t.expect(rows.map((row) => row.name)).toEqual(["b"]);
      const nothing = await t.store.claim({ queues: ["default"], workerId: t.w1, leaseMs: LEASE_MS, draws: (_s, i) => (i < 3 ? { names: [], limit: 5 } : null) });
      t.expect(nothing).toEqual([]);
      t.fields((await t.store.list({ name: "a" }))[0] ?? null, { status: "queued", attempt: 0 });
    },
  },
  {
    id: "draws-see-recovered-tasks",
    title: "recovery runs before the draws of the same cycle: a just-recovered task is drawn, by any draw",
    spec: "§5.10 steps 4–5",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", {}, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      const rows = await t.store.claim({ queues: ["default"], workerId: t.w2, leaseMs: LEASE_MS, draws: (_s, i) => (i === 0 ? { names: ["nothing"], limit: 1 } : i === 1 ? { names: ["job"], limit: 1 } : null) });
      t.expect(ids(rows)).toEqual([task.id]);
      t.fields(at(rows, 0), { worker_id: t.w2, attempt: 2 });
    },
  },
  {
    id: "recovery-requeue-fields",
    title: "recovery with attempts left requeues: worker NULL, run_at_ms = now, progress/message NULL, error kept, attempt unchanged",
    spec: "§5.10 step 4 (T12)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { queue: "a", maxAttempts: 3 });
      const error = { code: "first" };
      await t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: true });
      const second = await t.claimOne(t.w1, { queues: ["a"], leaseMs: SHORT_LEASE_MS });
      await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.7, message: "m" });
      await t.sleep(EXPIRY_WAIT_MS);
      // A claim elsewhere recovers (recovery spans every queue and name) but does not draw it.
      t.expect(await t.claim(t.w2, { queues: ["b"], names: ["unrelated"] })).toEqual([]);
      const row = await t.get(task.id);
      t.fields(row, { status: "queued", worker_id: null, lease_until_ms: null, progress: null, message: null, error, attempt: 2, completed_at_ms: null });
      t.expect(row.run_at_ms).toBeGreaterThan(second.run_at_ms);
      t.expect(Math.abs(row.run_at_ms - row.updated_at_ms)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
    },
  },
  {
    id: "recovery-exhausted-fails-with-envelope",
    title: "recovery with attempts exhausted fails the task with the exact lease-expired envelope, keeping worker, progress and message",
    spec: "§5.10 step 4 (T13)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { queue: "a", maxAttempts: 1 }, SHORT_LEASE_MS);
      await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.2, message: "stuck" });
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { queues: ["b"] })).toEqual([]);
      const row = await t.get(task.id);
      t.fields(row, { status: "failed", worker_id: t.w1, progress: 0.2, message: "stuck", attempt: 1, lease_until_ms: null, run_at_ms: task.run_at_ms });
      t.expect(row.error).toEqual({ ...LEASE_EXPIRED_ENVELOPE });
      t.expect(row.error).toEqual({
        type: "LeaseExpired",
        code: "lease_expired",
        message: "task lease expired and max attempts reached",
        retryable: false,
        details: {},
      });
      t.expect(row.completed_at_ms).not.toBeNull();
      t.expect(await t.claim(t.w2, { queues: ["a"] })).toEqual([]);
    },
  },
  {
    id: "recovery-flagged-cancels",
    title: "recovery of a flagged task cancels it, keeping worker, run_at_ms, error, progress and message",
    spec: "§5.10 step 4 (T11)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      await t.store.fail({ taskId: task.id, workerId: t.w1, error: { code: "e1" }, retryable: true });
      const second = await t.claimOne(t.w1, { leaseMs: SHORT_LEASE_MS });
      await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.5, message: "half" });
      await t.store.cancel(task.id);
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { limit: 5 })).toEqual([]);
      t.fields(await t.get(task.id), {
        status: "canceled",
        worker_id: t.w1,
        run_at_ms: second.run_at_ms,
        error: { code: "e1" },
        progress: 0.5,
        message: "half",
        attempt: 2,
        lease_until_ms: null,
      });
    },
  },
  {
    id: "recovery-spans-whole-table",
    title: "one claim recovers expired leases in every queue and name, whatever its own filters",
    spec: "§5.10 steps 2 and 4",
    async run(t) {
      const a = await t.submitAndClaim(t.w1, "x", { queue: "qa" }, SHORT_LEASE_MS);
      const b = await t.submitAndClaim(t.w1, "y", { queue: "qb" }, SHORT_LEASE_MS);
      const c = await t.submitAndClaim(t.w1, "z", { queue: "qc", maxAttempts: 1 }, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { queues: ["elsewhere"], names: ["none"] })).toEqual([]);
      t.fields(await t.get(a.id), { status: "queued" });
      t.fields(await t.get(b.id), { status: "queued" });
      t.fields(await t.get(c.id), { status: "failed" });
      t.expect(sortedIds(await t.claim(t.w2, { queues: ["qa", "qb"], limit: 5 }))).toEqual(sortedIds([a, b]));
    },
  },
  {
    id: "claim-reprobe-reports-what-is-left",
    title: "with reprobe, claim says once, after its draws, whether anything was left to claim in its queues and names (due rows only; an empty cycle says false)",
    spec: "store.ts ClaimInput.reprobe, §5.10 step 2",
    skipUnless: needsClaimReprobe,
    async run(t) {
      const { heard, reprobe } = reprobeRecorder();
      await Promise.all([t.submit("job"), t.submit("job"), t.submit("job"), t.submit("other"), t.submit("job", { runAtDelayMs: 600_000 })]);
      t.expect(await t.claim(t.w1, { names: ["job"], limit: 2, reprobe })).toHaveLength(2);
      t.expect(heard).toEqual([true]);
      t.expect(await t.claim(t.w1, { names: ["job"], limit: 2, reprobe })).toHaveLength(1);
      // The other name's task and the job due in ten minutes are not claimable by this claim.
      t.expect(heard).toEqual([true, false]);
      t.expect(await t.claim(t.w1, { names: ["job"], limit: 2, reprobe })).toEqual([]);
      t.expect(await t.claim(t.w1, { names: ["job"], limit: 2, probe: false, reprobe })).toEqual([]);
      t.expect(heard).toEqual([true, false, false, false]);
      // A draw of nothing leaves the other name's task claimable, and says so.
      t.expect(await t.claim(t.w1, { names: ["job", "other"], limit: 0, reprobe })).toEqual([]);
      t.expect(heard).toEqual([true, false, false, false, true]);
      // Without reprobe nothing is called; null is the same as leaving it out.
      t.expect(await t.claim(t.w1, { names: ["other"], limit: 1, reprobe: null })).toHaveLength(1);
      t.expect(heard).toHaveLength(5);
    },
  },
  {
    id: "claim-reprobe-after-recovery-and-planned-draws",
    title: "reprobe answers after lease recovery and after every draw of a planner: a recovered task is claimable, one taken by a later draw is not",
    spec: "store.ts ClaimInput.reprobe, §5.10 steps 4 and 5",
    skipUnless: needsClaimReprobe,
    async run(t) {
      const { heard, reprobe } = reprobeRecorder();
      const expired = await t.submitAndClaim(t.w1, "a", {}, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { names: ["a"], limit: 0, reprobe })).toEqual([]);
      t.expect(heard).toEqual([true]);
      t.fields(await t.get(expired.id), { status: "queued" });
      await Promise.all([t.submit("b"), t.submit("b")]);
      const draws = (_claimed: readonly Task[], index: number): ClaimDraw | null => (index === 0 ? { names: ["a"], limit: 5 } : index === 1 ? { names: ["b"], limit: 1 } : null);
      t.expect(await t.claim(t.w2, { names: ["a", "b"], draws, reprobe })).toHaveLength(2);
      t.expect(heard).toEqual([true, true]);
      const last = (_claimed: readonly Task[], index: number): ClaimDraw | null => (index === 0 ? { names: ["b"], limit: 5, last: true } : null);
      t.expect(await t.claim(t.w2, { names: ["a", "b"], draws: last, reprobe })).toHaveLength(1);
      t.expect(heard).toEqual([true, true, false]);
    },
  },
  {
    id: "claim-concurrent-leave-nothing-due",
    title: "two claims at once over two queues, with room for every due task between them, take every one: a claim skips only rows the other takes, never rows it merely read",
    spec: "store.ts TaskStore.claim, §5.10, §13",
    async run(t) {
      // Found by lifecycle-random-walk seed 802 on MariaDB: the second claim came back empty with two due tasks queued
      // (the other claim's draw sorted every due row of both queues and kept them all locked).
      for (let round = 0; round < 20; round++) {
        const submitted: string[] = [];
        for (const [queue, priority] of [["q1", 9], ["q1", -1], ["q1", 1], ["q0", 1], ["q0", 1]] as const) submitted.push((await t.submit("job", { queue, priority })).id);
        const [a, b] = await Promise.all([t.claim(t.w1, { queues: ["q0", "q1"], limit: 3 }), t.claim(t.w2, { queues: ["q0", "q1"], limit: 3 })]);
        const taken = [...a, ...b].map((row) => row.id);
        t.expect({ round, taken: [...taken].sort(), overlap: a.filter((row) => b.some((other) => other.id === row.id)).length }).toEqual({ round, taken: [...submitted].sort(), overlap: 0 });
        for (const row of [...a, ...b]) await t.store.complete({ taskId: row.id, workerId: row.worker_id as string, result: null });
      }
    },
  },
  {
    id: "claim-repeated-queue-not-short",
    title: "a queue named twice in a claim is one queue: the claim takes as many rows as its limit allows, each once, the first in claim order",
    spec: "store.ts TaskStore.claim, §5.10",
    async run(t) {
      // Found in review: a store reading a window per named queue saw each row twice and came back with half its limit.
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push((await t.submit("job", { queue: "q1", priority: 6 - i })).id);
      const rows = await t.claim(t.w1, { queues: ["q1", "q1", "q0", "q1"], limit: 4 });
      // A multi-row draw returns its rows in no particular order (§5): compared as a set.
      t.expect(rows.map((row) => row.id).sort()).toEqual(ids.slice(0, 4).sort());
    },
  },
  {
    id: "claim-reprobe-throwing-keeps-rows",
    title: "a reprobe that throws changes nothing: the claim still returns the rows it committed",
    spec: "store.ts ClaimInput.reprobe",
    skipUnless: needsClaimReprobe,
    async run(t) {
      const task = await t.submit("job");
      const rows = await t.claim(t.w1, {
        reprobe: () => {
          throw new Error("a reprobe listener failed");
        },
      });
      t.expect(rows.map((row) => row.id)).toEqual([task.id]);
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w1 });
    },
  },
];

/** A `reprobe` callback and the answers it was given, in order. */
function reprobeRecorder(): { heard: boolean[]; reprobe: (claimable: boolean) => void } {
  const heard: boolean[] = [];
  return { heard, reprobe: (claimable) => void heard.push(claimable) };
}

/** The `reprobe` cases need a store that declares it honours `ClaimInput.reprobe`. */
function needsClaimReprobe(capabilities: { claimReprobe?: boolean }): string | null {
  return capabilities.claimReprobe === true ? null : "claimReprobe (ClaimInput.reprobe: the probe again after the draws)";
}
