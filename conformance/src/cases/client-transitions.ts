/**
 * Client transitions beyond §14: cancel and retry guards and assignments
 * (§5.7, §5.8), and purge's eligibility, order and limit (§5.9), with the
 * extension that keeps a waiting parent's finished children (`PARENT_WAITING`).
 */
import { InvalidArgument } from "@cairnq/protocol";
import type { ConformanceCase } from "../case.js";
import { ids, sortedIds } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";

export const clientTransitionCases: readonly ConformanceCase[] = [
  {
    id: "cancel-terminal-returns-null",
    title: "cancel of a succeeded, failed or canceled task → null, row untouched",
    spec: "§5.7",
    async run(t) {
      const ok = await t.submitAndClaim(t.w1, "ok");
      await t.store.complete({ taskId: ok.id, workerId: t.w1, result: 1 });
      const bad = await t.submitAndClaim(t.w1, "bad");
      await t.store.fail({ taskId: bad.id, workerId: t.w1, error: {}, retryable: false });
      const gone = await t.submit("gone");
      await t.store.cancel(gone.id);
      const before = await t.all();
      for (const row of before) t.expect(await t.store.cancel(row.id)).toBeNull();
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "cancel-repeat-refreshes-flag",
    title: "a repeat cancel of a running task refreshes the flag and keeps it running",
    spec: "§5.7 (T4)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const first = await t.store.cancel(task.id);
      await t.sleep(10);
      const second = await t.store.cancel(task.id);
      t.fields(second, { status: "running", worker_id: t.w1, lease_until_ms: task.lease_until_ms });
      t.expect(second?.cancel_requested_at_ms).toBeGreaterThan(first?.cancel_requested_at_ms as number);
    },
  },
  {
    id: "cancel-by-key-running-sets-flag",
    title: "cancelByKey of a running task sets the flag and returns the running row",
    spec: "§5.7",
    async run(t) {
      const task = await t.submit("job", { key: "k" });
      await t.claimOne(t.w1);
      const flagged = await t.store.cancelByKey("k");
      t.fields(flagged, { id: task.id, status: "running" });
      t.expect(flagged?.cancel_requested_at_ms).not.toBeNull();
      t.expect([...(await t.store.heartbeatBatch({ taskIds: [task.id], workerId: t.w1 }))]).toEqual([[task.id, true]]);
    },
  },
  {
    id: "retry-guards",
    title: "retry of a queued, running or succeeded task → null, row untouched",
    spec: "§5.8",
    async run(t) {
      const queued = await t.submit("queued", { key: "kq" });
      const running = await t.submitAndClaim(t.w1, "running");
      const ok = await t.submitAndClaim(t.w1, "ok", { key: "ks" });
      await t.store.complete({ taskId: ok.id, workerId: t.w1, result: { v: 1 } });
      const before = await t.all();
      for (const id of [queued.id, running.id, ok.id]) {
        t.expect(await t.store.retry(id)).toBeNull();
        t.expect(await t.store.retry(id, { resetAttempt: true })).toBeNull();
      }
      t.expect(await t.store.retryByKey("kq")).toBeNull();
      t.expect(await t.store.retryByKey("ks")).toBeNull();
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "retry-clears-fields-keeps-attempt",
    title: "retry clears error, worker, lease, flag, completion, progress and message, sets run_at_ms = now, keeps attempt unless reset",
    spec: "§5.8 (T14)",
    async run(t) {
      const failed = await t.submitAndClaim(t.w1, "failed", { maxAttempts: 1 });
      await t.store.progress({ taskId: failed.id, workerId: t.w1, progress: 0.3, message: "m" });
      await t.store.fail({ taskId: failed.id, workerId: t.w1, error: { code: "x" }, retryable: false });
      const retried = await t.store.retry(failed.id);
      t.fields(retried, {
        status: "queued",
        error: null,
        worker_id: null,
        lease_until_ms: null,
        cancel_requested_at_ms: null,
        completed_at_ms: null,
        progress: null,
        message: null,
        result: null,
        attempt: 1,
      });
      t.expect(Math.abs((retried?.run_at_ms as number) - (retried?.updated_at_ms as number))).toBeLessThanOrEqual(CLOCK_SLACK_MS);

      const flagged = await t.submitAndClaim(t.w1, "flagged");
      await t.store.cancel(flagged.id);
      await t.store.complete({ taskId: flagged.id, workerId: t.w1, result: null });
      const back = await t.store.retry(flagged.id, { resetAttempt: true });
      t.fields(back, { status: "queued", cancel_requested_at_ms: null, worker_id: null, completed_at_ms: null, attempt: 0 });
      const again = await t.claimOne(t.w2, { names: ["flagged"] });
      t.fields(again, { attempt: 1, cancel_requested_at_ms: null });
      t.fields(await t.store.complete({ taskId: again.id, workerId: t.w2, result: { second: true } }), { status: "succeeded", result: { second: true } });
    },
  },
  {
    id: "retry-exhausted-gets-one-more-attempt",
    title: "without reset an exhausted task gets exactly one more attempt: after its claim attempt > max_attempts and even a retryable fail is final",
    spec: "§5.8",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      await t.store.fail({ taskId: task.id, workerId: t.w1, error: { n: 1 }, retryable: true });
      t.fields(await t.get(task.id), { status: "failed", attempt: 1 });
      t.fields(await t.store.retry(task.id), { status: "queued", attempt: 1 });
      const again = await t.claimOne(t.w1);
      t.fields(again, { attempt: 2, max_attempts: 1 });
      t.fields(await t.store.fail({ taskId: task.id, workerId: t.w1, error: { n: 2 }, retryable: true }), { status: "failed", attempt: 2, error: { n: 2 } });
    },
  },
  {
    id: "purge-never-deletes-live-tasks",
    title: "purge never deletes queued or running tasks, whatever the filters",
    spec: "§5.9",
    async run(t) {
      await t.submit("job");
      await t.submitAndClaim(t.w1, "busy");
      await t.sleep(20);
      t.expect(await t.store.purge({})).toEqual([]);
      t.expect(await t.store.purge({ name: "busy" })).toEqual([]);
      t.expect(await t.store.purge({ queue: "default", limit: 10 })).toEqual([]);
      t.expect(await t.all()).toHaveLength(2);
    },
  },
  {
    id: "retry-purge-unknown-options-refused",
    title: "retry and purge refuse an option they do not know (a misspelt filter would widen a purge to every finished task), naming it and changing nothing",
    spec: "§5.8, §5.9 (one input, one meaning on every backend)",
    async run(t) {
      const failed = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      await t.store.fail({ taskId: failed.id, workerId: t.w1, error: { code: "boom" }, retryable: false });
      const kept = await t.submit("job", { queue: "keep" });
      await t.store.cancel(kept.id);
      await t.sleep(20);
      for (const [promise, argument, what] of [
        [t.store.retry(failed.id, { reset: true } as never), "reset", "retry with { reset: true }"],
        [t.store.purge({ olderThanMs: 0, queues: ["scratch"] } as never), "queues", "purge with { queues }"],
        [t.store.purge({ stauts: "failed" } as never), "stauts", "purge with { stauts }"],
      ] as const) {
        const err = await t.rejects(promise, InvalidArgument, what);
        t.expect({ what, argument: err.argument }).toEqual({ what, argument });
      }
      t.fields(await t.get(failed.id), { status: "failed", attempt: 1 });
      t.fields(await t.get(kept.id), { status: "canceled" });
    },
  },
  {
    id: "purge-keeps-children-of-waiting-parents",
    title: "purge keeps a finished child while its parent is queued (parked on a join) or running, and deletes it once the parent is terminal",
    spec: "§5.9 (extension: PARENT_WAITING in store.ts purge)",
    async run(t) {
      // A parked parent is queued; a parent still running may join next. A finished root and a child
      // whose parent is gone (purged) are deleted as before.
      const parked = await t.submit("parent");
      const running = await t.submitAndClaim(t.w1, "runner");
      const children: string[] = [];
      for (const parent of [parked, running]) {
        const child = await t.submitAndClaim(t.w2, "child", { parentId: parent.id, rootId: parent.id });
        await t.store.complete({ taskId: child.id, workerId: t.w2, result: { of: parent.id } });
        children.push(child.id);
      }
      const orphan = await t.submitAndClaim(t.w2, "child", { parentId: "task_purged_parent" });
      await t.store.complete({ taskId: orphan.id, workerId: t.w2, result: 0 });
      await t.sleep(20);
      t.expect(await t.store.purge({})).toEqual([orphan.id]);
      t.expect(sortedIds(children)).toEqual(sortedIds((await t.all()).filter((row) => row.name === "child")));
      // The parents end: their children go with the next purge whose cutoff covers them.
      await t.store.cancel(parked.id);
      await t.store.complete({ taskId: running.id, workerId: t.w1, result: null });
      await t.sleep(20);
      t.expect(sortedIds(await t.store.purge({ name: "child" }))).toEqual(sortedIds(children));
      t.expect(sortedIds(await t.store.purge({}))).toEqual(sortedIds([parked.id, running.id]));
    },
  },
  {
    id: "purge-limit-oldest-first",
    title: "purge deletes at most limit rows, oldest completion first",
    spec: "§5.9",
    async run(t) {
      const order: string[] = [];
      for (let i = 0; i < 3; i++) {
        const task = await t.submitAndClaim(t.w1, "job");
        await t.store.complete({ taskId: task.id, workerId: t.w1, result: i });
        order.push(task.id);
        await t.sleep(5);
      }
      await t.sleep(20);
      t.expect(await t.store.purge({ limit: 1 })).toEqual([order[0]]);
      t.expect(sortedIds(await t.store.purge({ limit: 5 }))).toEqual(sortedIds(order.slice(1)));
      t.expect(ids(await t.all())).toEqual([]);
    },
  },
];
