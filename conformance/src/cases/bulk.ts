/**
 * Bulk client transitions and the keyed-submit outcome (beyond protocol v1,
 * built only from its rules): `cancelBatch` / `retryBatch` apply `CANCEL` /
 * `RETRY` to every matching row of a batch, in id order after a cursor; and
 * `submitOutcome` says whether a submit created its task.
 */
import { AlreadyExists, InvalidArgument } from "@cairnq/protocol";
import type { Task } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { sortedIds } from "../case.js";

/** Every row by id, for "untouched" comparisons. */
async function byId(t: CaseContext): Promise<Map<string, Task>> {
  return new Map((await t.all()).map((row) => [row.id, row]));
}

export const bulkCases: readonly ConformanceCase[] = [
  {
    id: "bulk-cancel-batch",
    title: "cancelBatch cancels queued rows, flags running ones, leaves terminal and unmatched rows alone, and returns the ids it changed",
    spec: "§5.7 (T3/T4) per row",
    async run(t) {
      const running = await t.submitAndClaim(t.w1, "job");
      const done = await t.submitAndClaim(t.w1, "job");
      await t.store.complete({ taskId: done.id, workerId: t.w1, result: { ok: true } });
      const queued = await t.submit("job");
      const other = await t.submit("other");
      const elsewhere = await t.submit("job", { queue: "elsewhere" });
      const before = await byId(t);

      const changed = await t.store.cancelBatch({ name: "job", queue: "default" });
      t.expect(sortedIds(changed)).toEqual(sortedIds([queued.id, running.id]));
      const after = await byId(t);
      t.fields(after.get(queued.id) ?? null, { status: "canceled", cancel_requested_at_ms: null });
      t.expect(after.get(queued.id)?.completed_at_ms).not.toBeNull();
      t.fields(after.get(running.id) ?? null, { status: "running", worker_id: t.w1, lease_until_ms: running.lease_until_ms, completed_at_ms: null });
      t.expect(after.get(running.id)?.cancel_requested_at_ms).not.toBeNull();
      for (const id of [done.id, other.id, elsewhere.id]) t.expect(after.get(id)).toEqual(before.get(id));

      // The flagged task ends canceled when its worker settles it, as after cancel(id) (T7).
      t.fields(await t.store.complete({ taskId: running.id, workerId: t.w1, result: { ok: true } }), { status: "canceled", result: null });
      t.expect(sortedIds(await t.store.cancelBatch({ status: "queued" }))).toEqual(sortedIds([other.id, elsewhere.id]));
      t.expect(await t.store.cancelBatch({})).toEqual([]);
    },
  },
  {
    id: "bulk-batch-cursor",
    title: "batches take at most limit rows in id order after afterId, so a loop visits every matching row once (running rows stay matching)",
    spec: "§5.7 per row",
    async run(t) {
      const rows: Task[] = [];
      for (let i = 0; i < 3; i++) rows.push(await t.submitAndClaim(t.w1, "job"));
      for (let i = 0; i < 2; i++) rows.push(await t.submit("job"));
      const expected = sortedIds(rows);
      const seen: string[] = [];
      let afterId: string | null = null;
      for (let batch = 0; batch < 10; batch++) {
        const ids: string[] = await t.store.cancelBatch({ limit: 2, afterId });
        t.expect(ids.length).toBeLessThanOrEqual(2);
        seen.push(...ids);
        if (ids.length < 2) break;
        afterId = sortedIds(ids).at(-1) as string;
      }
      t.expect(sortedIds(seen)).toEqual(expected);
      t.expect(new Set(seen).size).toBe(seen.length);
      // The first batch is the two smallest ids.
      t.expect(sortedIds(seen.slice(0, 2))).toEqual(expected.slice(0, 2));
      for (const row of await t.all()) t.expect(row.status === "canceled" || row.cancel_requested_at_ms !== null).toBe(true);
    },
  },
  {
    id: "bulk-retry-batch",
    title: "retryBatch requeues failed and canceled rows (resetAttempt as retry's), never queued, running or succeeded ones",
    spec: "§5.8 (T14) per row",
    async run(t) {
      const failed = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      await t.store.fail({ taskId: failed.id, workerId: t.w1, error: { code: "boom" }, retryable: false });
      const canceled = await t.submit("job");
      await t.store.cancel(canceled.id);
      const succeeded = await t.submitAndClaim(t.w1, "job");
      await t.store.complete({ taskId: succeeded.id, workerId: t.w1, result: 1 });
      const running = await t.submitAndClaim(t.w1, "job");
      const queued = await t.submit("job");
      const otherName = await t.submitAndClaim(t.w1, "other", { maxAttempts: 1 });
      await t.store.fail({ taskId: otherName.id, workerId: t.w1, error: {}, retryable: false });
      const before = await byId(t);

      t.expect(await t.store.retryBatch({ name: "job", status: "failed" })).toEqual([failed.id]);
      t.fields(await t.get(failed.id), { status: "queued", error: null, worker_id: null, completed_at_ms: null, attempt: 1 });
      t.expect(sortedIds(await t.store.retryBatch({ name: "job", resetAttempt: true }))).toEqual([canceled.id]);
      t.fields(await t.get(canceled.id), { status: "queued", completed_at_ms: null, attempt: 0 });
      for (const id of [succeeded.id, queued.id, running.id, otherName.id]) t.expect(await t.get(id)).toEqual(before.get(id));
      t.expect(await t.store.retryBatch({ name: "job" })).toEqual([]);
    },
  },
  {
    id: "bulk-bad-input",
    title: "cancelBatch / retryBatch reject unknown keys, a status their guard never admits and a bad limit with InvalidArgument, changing nothing",
    spec: "§5.4 filters",
    async run(t) {
      await t.submit("job");
      const before = await t.all();
      await t.rejects(t.store.cancelBatch({ state: "queued" } as never), InvalidArgument, "cancelBatch with an unknown key");
      await t.rejects(t.store.cancelBatch({ status: "failed" }), InvalidArgument, "cancelBatch of failed tasks");
      await t.rejects(t.store.retryBatch({ status: "queued" }), InvalidArgument, "retryBatch of queued tasks");
      await t.rejects(t.store.retryBatch({ status: "succeeded" }), InvalidArgument, "retryBatch of succeeded tasks");
      await t.rejects(t.store.cancelBatch({ limit: 0 }), InvalidArgument, "cancelBatch with limit 0");
      await t.rejects(t.store.retryBatch({ resetAttempt: "yes" } as never), InvalidArgument, "retryBatch with a non-boolean resetAttempt");
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "submit-outcome-created",
    title: "submitOutcome says created for an insert and not for a reused task, under every conflict strategy",
    spec: "§5.1",
    async run(t) {
      const plain = await t.store.submitOutcome({ name: "job" });
      t.expect(plain.created).toBe(true);
      t.fields(plain.task, { status: "queued", name: "job" });

      const first = await t.store.submitOutcome({ name: "job", key: "k" });
      t.expect(first.created).toBe(true);
      const again = await t.store.submitOutcome({ name: "job", key: "k", payload: { ignored: true } });
      t.expect(again.created).toBe(false);
      t.expect(again.task.id).toBe(first.task.id);
      await t.rejects(t.store.submitOutcome({ name: "job", key: "k", conflict: "reject" }), AlreadyExists, "a reject submit of a taken key");

      const claimed = await t.claimOne(t.w1);
      t.expect([plain.task.id, first.task.id]).toContain(claimed.id);
      const keyed = claimed.id === first.task.id ? claimed : await t.claimOne(t.w1);
      await t.store.complete({ taskId: keyed.id, workerId: t.w1, result: { n: 1 } });
      const reused = await t.store.submitOutcome({ name: "job", key: "k", conflict: "reuse-succeeded" });
      t.expect(reused.created).toBe(false);
      t.fields(reused.task, { id: first.task.id, status: "succeeded", result: { n: 1 } });
      const fresh = await t.store.submitOutcome({ name: "job", key: "k" });
      t.expect(fresh.created).toBe(true);
      t.expect(fresh.task.id).not.toBe(first.task.id);
      const replaced = await t.store.submitOutcome({ name: "job", key: "k", conflict: "replace" });
      t.expect(replaced.created).toBe(true);
      t.fields(await t.get(fresh.task.id), { status: "canceled" });
      t.expect((await t.store.getByKey("k"))?.id).toBe(replaced.task.id);
    },
  },
];
