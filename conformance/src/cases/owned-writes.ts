/**
 * Ownership-checked writes beyond §14 (§5.0, §5.11–§5.16): the ownership
 * predicate (strict lease), the attempt fence, heartbeat_batch's scope, each
 * settlement's assignments, and cancel-wins on every exit from running.
 */
import type { Task } from "@cairnq/protocol";
import { LostLease } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { at, EXPIRY_WAIT_MS, LEASE_MS, SHORT_LEASE_MS } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";

/** Every owned write of `taskId` as `workerId` (with `attempt`, if given), each expected to raise LostLease. */
async function expectEveryOwnedWriteLost(t: CaseContext, taskId: string, workerId: string, why: string, attempt?: number): Promise<void> {
  const own = attempt === undefined ? { taskId, workerId } : { taskId, workerId, attempt };
  const writes: [string, () => Promise<unknown>][] = [
    ["heartbeat", () => t.store.heartbeat({ ...own, leaseMs: LEASE_MS })],
    ["progress", () => t.store.progress({ ...own, progress: 0.9, message: "stale" })],
    ["succeed", () => t.store.succeed({ ...own, result: { stale: true } })],
    ["complete", () => t.store.complete({ ...own, result: { stale: true } })],
    ["fail", () => t.store.fail({ ...own, error: { stale: true }, retryable: false })],
  ];
  for (const [op, write] of writes) {
    const err = await t.rejects(write(), LostLease, `${op} ${why}`);
    t.expect(err.taskId).toBe(taskId);
  }
}

const needsCompleteRef = (c: { completeRef?: boolean }): string | null =>
  c.completeRef === true ? null : "completeRef (RefCompleteTaskStore: complete answering { id, status })";

export const ownedWriteCases: readonly ConformanceCase[] = [
  {
    id: "owned-writes-by-non-owner-lost-lease",
    title: "heartbeat, progress, succeed, complete and fail by another worker raise LostLease(taskId) and write nothing",
    spec: "§5.0",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await expectEveryOwnedWriteLost(t, task.id, t.w2, "by a non-owner");
      t.expect(await t.get(task.id)).toEqual(task);
    },
  },
  {
    id: "owned-writes-need-live-lease",
    title: "once the lease has passed (even before any recovery) every owned write by the owner raises LostLease and heartbeatBatch omits the task",
    spec: "§5.0 (strict lease_until_ms > now), §5.12",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", {}, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      await expectEveryOwnedWriteLost(t, task.id, t.w1, "after the lease expired");
      t.expect([...(await t.store.heartbeatBatch({ taskIds: [task.id], workerId: t.w1, leaseMs: LEASE_MS }))]).toEqual([]);
      t.expect(await t.get(task.id)).toEqual(task);
    },
  },
  {
    id: "owned-writes-on-unknown-or-settled-lost-lease",
    title: "owned writes of an unknown task, a queued task or a settled task raise LostLease",
    spec: "§5.0",
    async run(t) {
      await expectEveryOwnedWriteLost(t, "task_00000000000000000000000000", t.w1, "of an unknown task");
      const queued = await t.submit("idle");
      await expectEveryOwnedWriteLost(t, queued.id, t.w1, "of a queued task");
      const task = await t.submitAndClaim(t.w1);
      const done = await t.store.complete({ taskId: task.id, workerId: t.w1, result: { ok: true } });
      await expectEveryOwnedWriteLost(t, task.id, t.w1, "of a settled task");
      t.expect(await t.get(task.id)).toEqual(done);
    },
  },
  {
    id: "attempt-fence",
    title: "an owned write naming a stale attempt raises LostLease even for the same worker; the current attempt or none passes",
    spec: "store.ts OwnedInput.attempt, §5.0",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      await t.store.fail({ taskId: task.id, workerId: t.w1, attempt: 1, error: {}, retryable: true });
      const again = await t.claimOne(t.w1);
      t.fields(again, { id: task.id, attempt: 2, worker_id: t.w1 });
      await expectEveryOwnedWriteLost(t, task.id, t.w1, "with the stale attempt 1", 1);
      t.expect(await t.get(task.id)).toEqual(again);
      t.fields(await t.store.heartbeat({ taskId: task.id, workerId: t.w1, attempt: 2, leaseMs: LEASE_MS }), { status: "running", attempt: 2 });
      t.fields(await t.store.progress({ taskId: task.id, workerId: t.w1, attempt: 2, progress: 0.5 }), { progress: 0.5 });
      t.fields(await t.store.progress({ taskId: task.id, workerId: t.w1, attempt: null, message: "unfenced" }), { message: "unfenced" });
      t.fields(await t.store.complete({ taskId: task.id, workerId: t.w1, attempt: 2, result: { n: 2 } }), { status: "succeeded", result: { n: 2 } });
    },
  },
  {
    id: "heartbeat-returns-row-with-flag",
    title: "heartbeat returns the full running row, where the worker reads the cancel flag",
    spec: "§5.11",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      t.expect((await t.store.heartbeat({ taskId: task.id, workerId: t.w1 })).cancel_requested_at_ms).toBeNull();
      await t.store.cancel(task.id);
      const beat = await t.store.heartbeat({ taskId: task.id, workerId: t.w1, leaseMs: LEASE_MS });
      t.fields(beat, { status: "running", worker_id: t.w1, attempt: 1 });
      t.expect(beat.cancel_requested_at_ms).not.toBeNull();
      t.expect(Math.abs((beat.lease_until_ms as number) - beat.updated_at_ms - LEASE_MS)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
    },
  },
  {
    id: "heartbeat-batch-scope-and-order",
    title: "heartbeatBatch renews only listed owned rows, answers in request order, and leaves unlisted rows untouched",
    spec: "§5.12",
    async run(t) {
      for (let i = 0; i < 4; i++) await t.submit("job");
      const mine = await t.claim(t.w1, { limit: 3 });
      const theirs = await t.claimOne(t.w2);
      const [a, b, c] = [at(mine, 0), at(mine, 1), at(mine, 2)];
      await t.sleep(10);
      const out = await t.store.heartbeatBatch({ taskIds: [c.id, theirs.id, "task_00000000000000000000000000", a.id], workerId: t.w1, leaseMs: LEASE_MS * 2 });
      t.expect([...out.keys()]).toEqual([c.id, a.id]);
      for (const row of [a, c]) {
        const now = await t.get(row.id);
        t.expect(Math.abs((now.lease_until_ms as number) - now.updated_at_ms - LEASE_MS * 2)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
      }
      t.expect(await t.get(b.id)).toEqual(b);
      t.expect(await t.get(theirs.id)).toEqual(theirs);
    },
  },
  {
    id: "progress-unbounded",
    title: "progress has no range check: values above 1 and below 0 are stored as given",
    spec: "§5.13, §3.1",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      t.fields(await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 1.5 }), { progress: 1.5, message: null });
      t.fields(await t.store.progress({ taskId: task.id, workerId: t.w1, progress: -0.25 }), { progress: -0.25 });
      t.fields(await t.get(task.id), { progress: -0.25, lease_until_ms: task.lease_until_ms });
    },
  },
  {
    id: "succeed-ignores-flag",
    title: "raw succeed ignores the cancel flag: succeeded with the result, progress 1.0, flag kept",
    spec: "§5.14 (T5), §4",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await t.store.cancel(task.id);
      const done = await t.store.succeed({ taskId: task.id, workerId: t.w1, result: { anyway: true } });
      t.fields(done, { status: "succeeded", result: { anyway: true }, progress: 1, worker_id: t.w1, lease_until_ms: null });
      t.expect(done.cancel_requested_at_ms).not.toBeNull();
      t.expect(done.completed_at_ms).not.toBeNull();
      t.expect(await t.store.retry(task.id)).toBeNull();
    },
  },
  {
    id: "succeed-message-coalesce",
    title: "succeed's message replaces the old one when given and keeps it when null; a null result is stored as NULL",
    spec: "§5.14, §2.2",
    async run(t) {
      const a = await t.submitAndClaim(t.w1, "a");
      await t.store.progress({ taskId: a.id, workerId: t.w1, message: "working" });
      t.fields(await t.store.succeed({ taskId: a.id, workerId: t.w1, result: null, message: "done" }), { message: "done", result: null, progress: 1 });
      const b = await t.submitAndClaim(t.w1, "b");
      await t.store.progress({ taskId: b.id, workerId: t.w1, message: "working" });
      t.fields(await t.store.succeed({ taskId: b.id, workerId: t.w1, message: null }), { message: "working", result: null });
    },
  },
  {
    id: "complete-keeps-message-error-worker",
    title: "complete (both branches) keeps message, error and worker_id; a null or absent result is stored as NULL",
    spec: "§5.15, §2.2",
    async run(t) {
      const a = await t.submitAndClaim(t.w1, "a", { maxAttempts: 2 });
      await t.store.fail({ taskId: a.id, workerId: t.w1, error: { code: "first" }, retryable: true });
      await t.claimOne(t.w1, { names: ["a"] });
      await t.store.progress({ taskId: a.id, workerId: t.w1, message: "m" });
      t.fields(await t.store.complete({ taskId: a.id, workerId: t.w1 }), { status: "succeeded", result: null, message: "m", error: { code: "first" }, worker_id: t.w1, progress: 1 });
      const b = await t.submitAndClaim(t.w1, "b");
      await t.store.progress({ taskId: b.id, workerId: t.w1, message: "m" });
      await t.store.cancel(b.id);
      t.fields(await t.store.complete({ taskId: b.id, workerId: t.w1, result: { x: 1 } }), { status: "canceled", result: null, message: "m", worker_id: t.w1, progress: null });
    },
  },
  {
    id: "result-json-scalars",
    title: "JSON scalar and array results (a string, false, 0, [], nested) round-trip, distinct from NULL",
    spec: "§2.2",
    async run(t) {
      for (const result of ["hello", "", false, true, 0, -1.25, [], [1, "two", null], { nested: { deep: ["x"] } }]) {
        const task = await t.submitAndClaim(t.w1);
        t.fields(await t.store.complete({ taskId: task.id, workerId: t.w1, result }), { result });
        t.fields(await t.get(task.id), { result });
      }
    },
  },
  {
    id: "fail-branches",
    title: "fail: requeue clears worker and keeps attempt; a non-retryable fail with attempts left is final and keeps the worker; error null → {}",
    spec: "§5.16 (T9, T10), §2.2",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      const requeued = await t.store.fail({ taskId: task.id, workerId: t.w1, error: null, retryable: true, delayMs: 0 });
      t.fields(requeued, { status: "queued", worker_id: null, attempt: 1, error: {}, completed_at_ms: null });
      await t.claimOne(t.w2);
      const final = await t.store.fail({ taskId: task.id, workerId: t.w2, retryable: false });
      t.fields(final, { status: "failed", worker_id: t.w2, attempt: 2, error: {}, run_at_ms: requeued.run_at_ms });
      t.expect(final.completed_at_ms).not.toBeNull();
      const defaulted = await t.submitAndClaim(t.w1, "defaults", { maxAttempts: 2 });
      t.fields(await t.store.fail({ taskId: defaulted.id, workerId: t.w1, error: { e: 1 } }), { status: "queued", error: { e: 1 } });
    },
  },
  {
    id: "fail-unencodable-error-falls-back",
    title: "a fail whose error cannot be encoded stores the §5.16 fallback envelope instead of failing",
    spec: "§5.16",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      const error = { type: "Upstream", code: "bad_gateway", message: "502", details: { when: Number.NaN } };
      const row = await t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: false });
      t.fields(row, { status: "failed" });
      t.expect(row.error).toEqual({ type: "Upstream", code: "bad_gateway", message: "502", retryable: false, details: {} });
      const other = await t.submitAndClaim(t.w1, "other", { maxAttempts: 3 });
      const big = await t.store.fail({ taskId: other.id, workerId: t.w1, error: { count: 10n }, retryable: true });
      t.fields(big, { status: "queued", error: { type: "TaskError", code: "task_error", message: "", retryable: true, details: {} } });
    },
  },
  {
    id: "cancel-wins-on-every-exit",
    title: "a flagged task ends canceled on complete, on retryable and non-retryable fail, and on lease recovery; never requeued, attempt unchanged",
    spec: "§4 cancel wins (T7, T8, T11)",
    async run(t) {
      const exits: [string, (task: Task) => Promise<unknown>][] = [
        ["complete", (task) => t.store.complete({ taskId: task.id, workerId: t.w1, result: { r: 1 } })],
        ["retryable fail", (task) => t.store.fail({ taskId: task.id, workerId: t.w1, error: { e: 1 }, retryable: true })],
        ["permanent fail", (task) => t.store.fail({ taskId: task.id, workerId: t.w1, error: { e: 1 }, retryable: false })],
      ];
      for (const [label, exit] of exits) {
        const task = await t.submitAndClaim(t.w1, label, { maxAttempts: 5 });
        await t.store.cancel(task.id);
        await exit(task);
        t.expect({ label, ...pick(await t.get(task.id)) }).toEqual({ label, status: "canceled", attempt: 1, result: null });
      }
      const expiring = await t.submitAndClaim(t.w1, "recovery", { maxAttempts: 5 }, SHORT_LEASE_MS);
      await t.store.cancel(expiring.id);
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { limit: 10 })).toEqual([]);
      t.expect({ label: "recovery", ...pick(await t.get(expiring.id)) }).toEqual({ label: "recovery", status: "canceled", attempt: 1, result: null });
      t.expect((await t.all()).filter((row) => row.status !== "canceled")).toEqual([]);
    },
  },
  {
    id: "complete-ref-writes-what-complete-writes",
    title: "completeRef writes exactly what complete writes and answers only { id, status }: succeeded, or canceled when a cancel was requested (cancel wins)",
    spec: "store.ts RefCompleteTaskStore, §5.15",
    skipUnless: needsCompleteRef,
    async run(t) {
      for (const flagged of [false, true]) {
        const viaRef = await t.submitAndClaim(t.w1);
        const viaComplete = await t.submitAndClaim(t.w1);
        for (const task of [viaRef, viaComplete]) {
          await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.5, message: "half" });
          if (flagged) await t.store.cancel(task.id);
        }
        const ref = await t.store.completeRef({ taskId: viaRef.id, workerId: t.w1, attempt: 1, result: { n: 1 } });
        const done = await t.store.complete({ taskId: viaComplete.id, workerId: t.w1, attempt: 1, result: { n: 1 } });
        t.expect(ref).toEqual({ id: viaRef.id, status: flagged ? "canceled" : "succeeded" });
        const written = await t.get(viaRef.id);
        t.expect(written.status).toBe(ref.status);
        t.expect(settledShape(written)).toEqual(settledShape(done));
        t.expect(await t.store.getStatus(viaRef.id)).toEqual(ref);
      }
    },
  },
  {
    id: "complete-ref-lost-lease",
    title: "completeRef by a non-owner, with a stale attempt, after the lease passed, of a settled or an unknown task raises LostLease(taskId) and writes nothing",
    spec: "store.ts RefCompleteTaskStore, §5.0, §5.15",
    skipUnless: needsCompleteRef,
    async run(t) {
      const lost = async (taskId: string, workerId: string, why: string, attempt?: number): Promise<void> => {
        const input = attempt === undefined ? { taskId, workerId, result: { stale: true } } : { taskId, workerId, attempt, result: { stale: true } };
        const err = await t.rejects(t.store.completeRef(input), LostLease, `completeRef ${why}`);
        t.expect(err.taskId).toBe(taskId);
      };
      await lost("task_00000000000000000000000000", t.w1, "of an unknown task");
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      await lost(task.id, t.w2, "by a non-owner");
      await lost(task.id, t.w1, "with a stale attempt", 2);
      t.expect(await t.get(task.id)).toEqual(task);
      const expiring = await t.submitAndClaim(t.w1, "job", {}, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      await lost(expiring.id, t.w1, "after the lease expired");
      t.expect(await t.get(expiring.id)).toEqual(expiring);
      t.expect(await t.store.completeRef({ taskId: task.id, workerId: t.w1, attempt: 1, result: { ok: true } })).toEqual({ id: task.id, status: "succeeded" });
      const done = await t.get(task.id);
      await lost(task.id, t.w1, "of a settled task");
      t.expect(await t.get(task.id)).toEqual(done);
    },
  },
  {
    id: "complete-ref-concurrent",
    title: "concurrent completeRefs each get their own answer, matched by id: succeeded, canceled for a flagged task, LostLease for another worker's",
    spec: "store.ts RefCompleteTaskStore, §5.0, §5.15",
    skipUnless: needsCompleteRef,
    async run(t) {
      for (let i = 0; i < 6; i++) await t.submit("job", { payload: { i } });
      const mine = await t.claim(t.w1, { limit: 5 });
      const theirs = await t.claimOne(t.w2);
      t.expect(mine).toHaveLength(5);
      const flagged = at(mine, 2);
      await t.store.cancel(flagged.id);
      const outcomes = await Promise.allSettled([
        ...mine.map((task) => t.store.completeRef({ taskId: task.id, workerId: t.w1, attempt: task.attempt, result: { id: task.id } })),
        t.store.completeRef({ taskId: theirs.id, workerId: t.w1, result: { stolen: true } }),
      ]);
      mine.forEach((task, i) => {
        const outcome = outcomes[i];
        t.expect(outcome?.status).toBe("fulfilled");
        t.expect(outcome?.status === "fulfilled" ? outcome.value : null).toEqual({ id: task.id, status: task.id === flagged.id ? "canceled" : "succeeded" });
      });
      const stolen = outcomes[mine.length];
      t.expect(stolen?.status === "rejected" && stolen.reason instanceof LostLease ? stolen.reason.taskId : null).toBe(theirs.id);
      for (const task of mine) {
        const canceled = task.id === flagged.id;
        t.fields(await t.get(task.id), { status: canceled ? "canceled" : "succeeded", result: canceled ? null : { id: task.id } });
      }
      t.expect(await t.get(theirs.id)).toEqual(theirs);
    },
  },
];

/** The fields a settlement writes, without what differs between two tasks (ids, instants). */
function settledShape(row: Task): Record<string, unknown> {
  return {
    status: row.status,
    attempt: row.attempt,
    result: row.result,
    error: row.error,
    progress: row.progress,
    message: row.message,
    worker_id: row.worker_id,
    lease_until_ms: row.lease_until_ms,
    cancel_requested: row.cancel_requested_at_ms !== null,
    completed: row.completed_at_ms !== null,
  };
}

function pick(row: Task): { status: string; attempt: number; result: unknown } {
  return { status: row.status, attempt: row.attempt, result: row.result };
}
