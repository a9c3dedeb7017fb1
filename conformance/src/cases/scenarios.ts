/**
 * Protocol v1 §14: the numbered conformance scenarios 1–29, the lifecycle of
 * a task (submit, keys, cancel, leases, settlements, claim order); 30–38 are in
 * scenarios-reads.ts. Case ids are `sNN-…` so a report reads in spec order.
 */
import type { Task } from "@cairnq/protocol";
import { AlreadyExists, LostLease } from "@cairnq/protocol";
import type { ConformanceCase } from "../case.js";
import { at, EXPIRY_WAIT_MS, ids, LEASE_MS, SHORT_LEASE_MS, sortedIds } from "../case.js";
import { runToFailure, runToSuccess } from "./scenario-runs.js";

export const scenarioCases: readonly ConformanceCase[] = [
  {
    id: "s01-submit-returns-queued",
    title: "submit returns a queued task with the name; get by id returns that id",
    spec: "§14.1, §5.1, §5.2",
    async run(t) {
      const task = await t.submit("email");
      t.fields(task, { status: "queued", name: "email" });
      t.fields(await t.store.get(task.id), { id: task.id, status: "queued", name: "email" });
    },
  },
  {
    id: "s02-claim-progress-succeed",
    title: "claim → running, owner w1, attempt 1; progress 0.5 'half'; succeed {ok:true} → succeeded, progress 1.0",
    spec: "§14.2, §5.10, §5.13, §5.14",
    async run(t) {
      const task = await t.submit("job");
      const claimed = await t.claimOne(t.w1);
      t.fields(claimed, { id: task.id, status: "running", worker_id: t.w1, attempt: 1 });
      t.fields(await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.5, message: "half" }), { progress: 0.5, message: "half", status: "running" });
      const done = await t.store.succeed({ taskId: task.id, workerId: t.w1, result: { ok: true } });
      t.fields(done, { status: "succeeded", progress: 1, result: { ok: true }, message: "half", worker_id: t.w1 });
      t.fields(await t.get(task.id), { status: "succeeded", progress: 1, result: { ok: true } });
    },
  },
  {
    id: "s03-json-round-trip",
    title: "payloads with null, nested arrays, non-ASCII, {} and [], and results with [null, {non-ASCII}] and 0 read back deep-equal",
    spec: "§14.3, §2.2",
    async run(t) {
      const payload = {
        nothing: null,
        nested: [[1, [2, [3, []]]], [{ deep: [null, true, false] }]],
        text: "café naïve — 東京 北京 ñ ü ß €",
        emptyObject: {},
        emptyArray: [],
        number: -12.5,
      };
      const metadata = { origin: "téléphone — 电话" };
      const task = await t.submit("json", { payload, metadata });
      t.fields(task, { payload, metadata });
      t.fields(await t.get(task.id), { payload, metadata });
      for (const [i, value] of [{}, []].entries()) {
        const other = await t.submit("json", { payload: value, queue: `q${i}` });
        t.fields(await t.get(other.id), { payload: value });
      }
      const result = { items: [null, { label: "Ünïcödé — 中文 — ✓" }], zero: 0 };
      t.fields(await runToSuccess(t, task, result), { result });
      t.fields(await t.get(task.id), { result });
      const zeroTask = await t.submit("zero");
      t.fields(await runToSuccess(t, zeroTask, 0), { result: 0 });
      t.fields(await t.get(zeroTask.id), { result: 0 });
    },
  },
  {
    id: "s04-retryable-fail-requeues",
    title: "max 3; a retryable fail with delay 0 → queued, attempt 1",
    spec: "§14.4, §5.16 (T9)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      const error = { type: "TaskError", code: "flaky", message: "try again", retryable: true, details: {} };
      const failed = await t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: true, delayMs: 0 });
      t.fields(failed, { status: "queued", attempt: 1, error, worker_id: null, completed_at_ms: null });
      t.fields(await t.get(task.id), { status: "queued", attempt: 1, error });
    },
  },
  {
    id: "s05-retryable-fail-last-attempt-fails",
    title: "max 1; a retryable fail → failed, error code kept",
    spec: "§14.5, §5.16 (T10)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 1 });
      const error = { type: "TaskError", code: "boom", message: "no", retryable: true, details: {} };
      t.fields(await t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: true }), { status: "failed", attempt: 1 });
      const row = await t.get(task.id);
      t.fields(row, { status: "failed", worker_id: t.w1 });
      t.expect((row.error as { code: string }).code).toBe("boom");
    },
  },
  {
    id: "s06-reuse-returns-same-task",
    title: "two 'reuse' submits of one key → the same id; the first is queued",
    spec: "§14.6, §5.1",
    async run(t) {
      const first = await t.submit("job", { key: "k", conflict: "reuse" });
      t.fields(first, { status: "queued" });
      const second = await t.submit("job", { key: "k", conflict: "reuse" });
      t.expect(second.id).toBe(first.id);
      t.fields(second, { status: "queued" });
      t.expect(await t.all()).toHaveLength(1);
    },
  },
  {
    id: "s07-reuse-succeeded-dedups",
    title: "'reuse-succeeded' dedups while queued; after complete {n:1} it returns the same id, succeeded, result {n:1}",
    spec: "§14.7, §5.1",
    async run(t) {
      const first = await t.submit("job", { key: "k", conflict: "reuse-succeeded" });
      const again = await t.submit("job", { key: "k", conflict: "reuse-succeeded" });
      t.expect(again.id).toBe(first.id);
      await runToSuccess(t, first, { n: 1 });
      const after = await t.submit("job", { key: "k", conflict: "reuse-succeeded" });
      t.fields(after, { id: first.id, status: "succeeded", result: { n: 1 } });
      t.expect(await t.all()).toHaveLength(1);
    },
  },
  {
    id: "s08-reuse-after-failure-creates-new",
    title: "after a final failure 'reuse' creates a new task; after that fails 'reuse-succeeded' creates another; the key → newest",
    spec: "§14.8, §5.1",
    async run(t) {
      const first = await t.submit("job", { key: "k", maxAttempts: 1 });
      await runToFailure(t, first);
      const second = await t.submit("job", { key: "k", conflict: "reuse", maxAttempts: 1 });
      t.expect(second.id).not.toBe(first.id);
      t.fields(second, { status: "queued" });
      t.fields(await t.store.getByKey("k"), { id: second.id });
      await runToFailure(t, second);
      const third = await t.submit("job", { key: "k", conflict: "reuse-succeeded" });
      t.expect([first.id, second.id]).not.toContain(third.id);
      t.fields(third, { status: "queued" });
      t.fields(await t.store.getByKey("k"), { id: third.id, status: "queued" });
      t.fields(await t.get(first.id), { status: "failed" });
      t.fields(await t.get(second.id), { status: "failed" });
    },
  },
  {
    id: "s09-reuse-after-success-creates-new",
    title: "after success 'reuse' creates a new task and repoints the key; the old stays succeeded with its result",
    spec: "§14.9, §5.1",
    async run(t) {
      const first = await t.submit("job", { key: "k" });
      await runToSuccess(t, first, { v: 1 });
      const second = await t.submit("job", { key: "k", conflict: "reuse" });
      t.expect(second.id).not.toBe(first.id);
      t.fields(second, { status: "queued" });
      t.fields(await t.store.getByKey("k"), { id: second.id });
      t.fields(await t.get(first.id), { status: "succeeded", result: { v: 1 } });
    },
  },
  {
    id: "s10-purge-frees-key",
    title: "succeed, wait 50 ms, purge (cutoff 0) deletes 1; a keyed submit then creates a new queued task, visible by key",
    spec: "§14.10, §5.9, §3.2",
    async run(t) {
      const first = await t.submit("job", { key: "k" });
      const claimed = await t.claimOne(t.w1);
      await t.store.succeed({ taskId: claimed.id, workerId: t.w1, result: { ok: true } });
      await t.sleep(50);
      t.expect(await t.store.purge({ olderThanMs: 0 })).toEqual([first.id]);
      t.expect(await t.store.get(first.id)).toBeNull();
      const second = await t.submit("job", { key: "k" });
      t.expect(second.id).not.toBe(first.id);
      t.fields(second, { status: "queued" });
      t.fields(await t.store.getByKey("k"), { id: second.id, status: "queued" });
    },
  },
  {
    id: "s11-reject-raises-already-exists",
    title: "a second 'reject' submit → AlreadyExists (with the key); nothing written",
    spec: "§14.11, §5.1, §12",
    async run(t) {
      const first = await t.submit("job", { key: "k", conflict: "reject" });
      const err = await t.rejects(t.submit("job", { key: "k", conflict: "reject" }), AlreadyExists, "second reject submit");
      t.expect(err.key).toBe("k");
      t.expect(ids(await t.all())).toEqual([first.id]);
      t.fields(await t.store.getByKey("k"), { id: first.id, status: "queued" });
    },
  },
  {
    id: "s12-replace-cancels-old",
    title: "a second 'replace' → a new id; the key → new; the old is canceled",
    spec: "§14.12, §5.1, §5.7",
    async run(t) {
      const first = await t.submit("job", { key: "k" });
      const second = await t.submit("job", { key: "k", conflict: "replace" });
      t.expect(second.id).not.toBe(first.id);
      t.fields(second, { status: "queued" });
      t.fields(await t.store.getByKey("k"), { id: second.id });
      t.fields(await t.get(first.id), { status: "canceled", cancel_requested_at_ms: null });
    },
  },
  {
    id: "s13-cancel-queued-and-running",
    title: "cancel queued → canceled; cancel running → returns running with the flag set",
    spec: "§14.13, §5.7 (T3, T4)",
    async run(t) {
      const queued = await t.submit("idle");
      const canceled = await t.store.cancel(queued.id);
      t.fields(canceled, { id: queued.id, status: "canceled", cancel_requested_at_ms: null, worker_id: null });
      t.fields(await t.get(queued.id), { status: "canceled" });
      const running = await t.submitAndClaim(t.w1, "busy");
      const flagged = await t.store.cancel(running.id);
      t.fields(flagged, { id: running.id, status: "running", worker_id: t.w1 });
      t.expect(flagged?.cancel_requested_at_ms).not.toBeNull();
      t.expect((await t.get(running.id)).cancel_requested_at_ms).not.toBeNull();
    },
  },
  {
    id: "s14-cancel-by-key",
    title: "cancelByKey cancels the queued task the key points at and returns it; an unknown key → null",
    spec: "§14.14, §5.7",
    async run(t) {
      const task = await t.submit("job", { key: "k" });
      t.fields(await t.store.cancelByKey("k"), { id: task.id, status: "canceled" });
      t.fields(await t.get(task.id), { status: "canceled" });
      t.expect(await t.store.cancelByKey("no-such-key")).toBeNull();
    },
  },
  {
    id: "s15-cancel-wins-on-complete",
    title: "running + cancel, complete {ok:true} → canceled, result NULL",
    spec: "§14.15, §5.15 (T7)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await t.store.progress({ taskId: task.id, workerId: t.w1, progress: 0.25 });
      await t.store.cancel(task.id);
      const done = await t.store.complete({ taskId: task.id, workerId: t.w1, result: { ok: true } });
      t.fields(done, { status: "canceled", result: null, progress: 0.25, lease_until_ms: null, worker_id: t.w1 });
      t.fields(await t.get(task.id), { status: "canceled", result: null, progress: 0.25 });
    },
  },
  {
    id: "s16-cancel-wins-on-fail",
    title: "running + cancel, retryable fail → canceled, completed_at_ms and error set; a later claim is empty; attempt 1",
    spec: "§14.16, §5.16 (T8)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", { maxAttempts: 3 });
      await t.store.cancel(task.id);
      const error = { code: "oops" };
      const done = await t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: true });
      t.fields(done, { status: "canceled", error, attempt: 1 });
      t.expect(done.completed_at_ms).not.toBeNull();
      t.expect(await t.claim(t.w1, { limit: 10 })).toEqual([]);
      t.fields(await t.get(task.id), { status: "canceled", attempt: 1, error });
    },
  },
  {
    id: "s17-cancel-wins-on-lease-recovery",
    title: "lease 150, cancel, wait 300 ms: a claim is empty; canceled, attempt 1, completed_at_ms set, error NULL",
    spec: "§14.17, §5.10 (T11)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", {}, SHORT_LEASE_MS);
      await t.store.cancel(task.id);
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { limit: 10 })).toEqual([]);
      const row = await t.get(task.id);
      t.fields(row, { status: "canceled", attempt: 1, error: null, lease_until_ms: null, worker_id: t.w1 });
      t.expect(row.completed_at_ms).not.toBeNull();
    },
  },
  {
    id: "s18-expired-lease-reclaimed",
    title: "lease 150, wait 300 ms: another worker's claim gets the task, running, owner w2, attempt 2",
    spec: "§14.18, §5.10 (T12, T2)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1, "job", {}, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      const again = await t.claimOne(t.w2);
      t.fields(again, { id: task.id, status: "running", worker_id: t.w2, attempt: 2 });
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w2, attempt: 2 });
    },
  },
  {
    id: "s19-complete-succeeds",
    title: "complete → succeeded, progress 1.0, result stored",
    spec: "§14.19, §5.15 (T6)",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const done = await t.store.complete({ taskId: task.id, workerId: t.w1, result: { answer: 42 } });
      t.fields(done, { status: "succeeded", progress: 1, result: { answer: 42 }, worker_id: t.w1, lease_until_ms: null });
      t.fields(await t.get(task.id), { status: "succeeded", progress: 1, result: { answer: 42 } });
    },
  },
  {
    id: "s20-complete-by-non-owner-lost-lease",
    title: "complete by a non-owner → LostLease; the row stays running, owner w1",
    spec: "§14.20, §5.0",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const err = await t.rejects(t.store.complete({ taskId: task.id, workerId: t.w2, result: { stolen: true } }), LostLease, "complete by w2");
      t.expect(err.taskId).toBe(task.id);
      t.fields(await t.get(task.id), { status: "running", worker_id: t.w1, result: null, lease_until_ms: task.lease_until_ms });
    },
  },
  {
    id: "s21-heartbeat-batch",
    title: "heartbeatBatch renews owned ids in request order with their flags; other worker, empty ids and settled tasks give nothing",
    spec: "§14.21, §5.12",
    async run(t) {
      for (const n of [1, 2, 3]) await t.submit("job", { payload: { n } });
      const claimed = await t.claim(t.w1, { limit: 10 });
      t.expect(claimed).toHaveLength(3);
      const [a, b, c] = [at(claimed, 0), at(claimed, 1), at(claimed, 2)];
      await t.sleep(10);
      const first = await t.store.heartbeatBatch({ taskIds: [a.id, b.id], workerId: t.w1, leaseMs: LEASE_MS });
      t.expect([...first]).toEqual([
        [a.id, false],
        [b.id, false],
      ]);
      for (const row of [a, b]) t.expect((await t.get(row.id)).lease_until_ms).toBeGreaterThan(row.lease_until_ms as number);
      t.fields(await t.get(c.id), { lease_until_ms: c.lease_until_ms });
      await t.store.cancel(a.id);
      const flagged = await t.store.heartbeatBatch({ taskIds: [a.id, b.id], workerId: t.w1, leaseMs: LEASE_MS });
      t.expect([...flagged]).toEqual([
        [a.id, true],
        [b.id, false],
      ]);
      t.expect([...(await t.store.heartbeatBatch({ taskIds: [a.id, b.id], workerId: t.w2, leaseMs: LEASE_MS }))]).toEqual([]);
      t.expect([...(await t.store.heartbeatBatch({ taskIds: [], workerId: t.w1, leaseMs: LEASE_MS }))]).toEqual([]);
      await t.store.succeed({ taskId: c.id, workerId: t.w1, result: null });
      t.expect([...(await t.store.heartbeatBatch({ taskIds: [c.id, b.id], workerId: t.w1, leaseMs: LEASE_MS }))]).toEqual([[b.id, false]]);
    },
  },
  {
    id: "s22-heartbeat-extends-lease",
    title: "after 10 ms, heartbeat → running with a strictly larger lease",
    spec: "§14.22, §5.11",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await t.sleep(10);
      const beat = await t.store.heartbeat({ taskId: task.id, workerId: t.w1, leaseMs: LEASE_MS });
      t.fields(beat, { status: "running", worker_id: t.w1 });
      t.expect(beat.lease_until_ms).toBeGreaterThan(task.lease_until_ms as number);
      t.fields(await t.get(task.id), { lease_until_ms: beat.lease_until_ms });
    },
  },
  {
    id: "s23-progress-null-keeps",
    title: "progress (0.5, 'reading') → (null, 'writing') keeps 0.5 → (0.9, null) keeps 'writing'",
    spec: "§14.23, §5.13",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      const own = { taskId: task.id, workerId: t.w1 };
      t.fields(await t.store.progress({ ...own, progress: 0.5, message: "reading" }), { progress: 0.5, message: "reading" });
      t.fields(await t.store.progress({ ...own, progress: null, message: "writing" }), { progress: 0.5, message: "writing" });
      t.fields(await t.store.progress({ ...own, progress: 0.9, message: null }), { progress: 0.9, message: "writing" });
      t.fields(await t.get(task.id), { progress: 0.9, message: "writing", status: "running" });
    },
  },
  {
    id: "s24-requeue-clears-progress",
    title: "retryable fail, retry and lease recovery each leave progress/message NULL; a permanent fail keeps them",
    spec: "§14.24, §4, §5.8, §5.10, §5.16",
    async run(t) {
      const report = (task: Task, workerId: string) => t.store.progress({ taskId: task.id, workerId, progress: 0.4, message: "busy" });

      const requeued = await t.submitAndClaim(t.w1, "requeue", { maxAttempts: 3 });
      await report(requeued, t.w1);
      t.fields(await t.store.fail({ taskId: requeued.id, workerId: t.w1, error: { code: "x" }, retryable: true }), { status: "queued", progress: null, message: null });

      const retried = await t.submitAndClaim(t.w1, "retry", { maxAttempts: 1 });
      await report(retried, t.w1);
      t.fields(await t.store.fail({ taskId: retried.id, workerId: t.w1, error: { code: "x" }, retryable: false }), { status: "failed", progress: 0.4, message: "busy" });
      t.fields(await t.store.retry(retried.id), { status: "queued", progress: null, message: null });

      const recovered = await t.submitAndClaim(t.w1, "recover", { maxAttempts: 3 }, SHORT_LEASE_MS);
      await report(recovered, t.w1);
      await t.sleep(EXPIRY_WAIT_MS);
      const reclaimed = await t.claimOne(t.w2, { names: ["recover"] });
      t.fields(reclaimed, { id: recovered.id, progress: null, message: null, attempt: 2, worker_id: t.w2 });

      const permanent = await t.submitAndClaim(t.w1, "permanent", { maxAttempts: 3 });
      await report(permanent, t.w1);
      t.fields(await t.store.fail({ taskId: permanent.id, workerId: t.w1, error: { code: "x" }, retryable: false }), { status: "failed", progress: 0.4, message: "busy" });
      t.fields(await t.get(permanent.id), { progress: 0.4, message: "busy" });
    },
  },
  {
    id: "s25-settlements-clear-lease",
    title: "succeed, complete (both branches), fail (all three) and recovery to failed leave lease_until_ms NULL; the exhausted task is not re-claimed",
    spec: "§14.25, §4, §5.10, §5.14–§5.16",
    async run(t) {
      const outcomes: Task[] = [];
      const a = await t.submitAndClaim(t.w1, "succeed");
      outcomes.push(await t.store.succeed({ taskId: a.id, workerId: t.w1, result: 1 }));
      const b = await t.submitAndClaim(t.w1, "complete");
      outcomes.push(await t.store.complete({ taskId: b.id, workerId: t.w1, result: 2 }));
      const c = await t.submitAndClaim(t.w1, "complete-flagged");
      await t.store.cancel(c.id);
      outcomes.push(await t.store.complete({ taskId: c.id, workerId: t.w1, result: 3 }));
      const d = await t.submitAndClaim(t.w1, "fail-flagged");
      await t.store.cancel(d.id);
      outcomes.push(await t.store.fail({ taskId: d.id, workerId: t.w1, error: {} }));
      const e = await t.submitAndClaim(t.w1, "fail-requeue", { maxAttempts: 2 });
      outcomes.push(await t.store.fail({ taskId: e.id, workerId: t.w1, error: {}, retryable: true }));
      const f = await t.submitAndClaim(t.w1, "fail-final");
      outcomes.push(await t.store.fail({ taskId: f.id, workerId: t.w1, error: {}, retryable: false }));
      t.expect(outcomes.map((row) => [row.status, row.lease_until_ms])).toEqual([
        ["succeeded", null],
        ["succeeded", null],
        ["canceled", null],
        ["canceled", null],
        ["queued", null],
        ["failed", null],
      ]);
      const g = await t.submitAndClaim(t.w1, "expire", { maxAttempts: 1 }, SHORT_LEASE_MS);
      await t.sleep(EXPIRY_WAIT_MS);
      t.expect(await t.claim(t.w2, { names: ["expire"], limit: 10 })).toEqual([]);
      t.fields(await t.get(g.id), { status: "failed", lease_until_ms: null, attempt: 1 });
      for (const row of [a, b, c, d, e, f]) t.expect((await t.get(row.id)).lease_until_ms).toBeNull();
    },
  },
  {
    id: "s26-status-probes",
    title: "status probes return {id, status}; by key follows a replace; the old reads canceled; unknown id/key → null",
    spec: "§14.26, §5.3",
    async run(t) {
      const first = await t.submit("job", { key: "k" });
      t.expect(await t.store.getStatus(first.id)).toEqual({ id: first.id, status: "queued" });
      t.expect(await t.store.getStatusByKey("k")).toEqual({ id: first.id, status: "queued" });
      const second = await t.submit("job", { key: "k", conflict: "replace" });
      t.expect(await t.store.getStatusByKey("k")).toEqual({ id: second.id, status: "queued" });
      t.expect(await t.store.getStatus(first.id)).toEqual({ id: first.id, status: "canceled" });
      t.expect(await t.store.getStatus("task_00000000000000000000000000")).toBeNull();
      t.expect(await t.store.getStatusByKey("no-such-key")).toBeNull();
    },
  },
  {
    id: "s27-retry-by-key-reset",
    title: "a permanent fail with bare {code:'boom'} → failed; retryByKey(reset) → same id, queued, attempt 0",
    spec: "§14.27, §5.8",
    async run(t) {
      const task = await t.submit("job", { key: "k" });
      await runToFailure(t, task, { code: "boom" });
      t.fields(await t.get(task.id), { status: "failed", error: { code: "boom" } });
      const retried = await t.store.retryByKey("k", { resetAttempt: true });
      t.fields(retried, { id: task.id, status: "queued", attempt: 0, error: null, worker_id: null });
      t.fields(await t.get(task.id), { status: "queued", attempt: 0 });
    },
  },
  {
    id: "s28-claim-name-filter",
    title: "names [alpha] claims only alpha (beta stays queued, attempt 0); [beta] takes beta; [] claims nothing; no filter takes the rest",
    spec: "§14.28, §5.10",
    async run(t) {
      const alpha = await t.submit("alpha");
      const beta = await t.submit("beta");
      const gamma = await t.submit("gamma");
      const delta = await t.submit("delta");
      t.expect(ids(await t.claim(t.w1, { names: ["alpha"], limit: 10 }))).toEqual([alpha.id]);
      t.fields(await t.get(beta.id), { status: "queued", attempt: 0 });
      t.expect(ids(await t.claim(t.w1, { names: ["beta"], limit: 10 }))).toEqual([beta.id]);
      t.expect(await t.claim(t.w1, { names: [], limit: 10 })).toEqual([]);
      t.expect(sortedIds(await t.claim(t.w1, { names: null, limit: 10 }))).toEqual(sortedIds([gamma, delta]));
      t.expect(await t.claim(t.w1, { limit: 10 })).toEqual([]);
    },
  },
  {
    id: "s29-claim-priority-order",
    title: "priorities 4,3,2,1 are claimed one each in order via one queue / two queues / queue + name / two queues + name; another name is never taken",
    spec: "§14.29, §5.10",
    async run(t) {
      const variants: { label: string; queues: string[]; names: string[] | null }[] = [
        { label: "one queue", queues: ["v1"], names: null },
        { label: "two queues", queues: ["v2a", "v2b"], names: null },
        { label: "one queue + name", queues: ["v3"], names: ["wanted"] },
        { label: "two queues + name", queues: ["v4a", "v4b"], names: ["wanted"] },
      ];
      for (const variant of variants) {
        const name = variant.names === null ? "any" : "wanted";
        const byPriority = new Map<number, string>();
        // Submitted out of order, spread over the variant's queues.
        for (const [i, priority] of [2, 4, 1, 3].entries()) {
          const queue = variant.queues[i % variant.queues.length] as string;
          byPriority.set(priority, (await t.submit(name, { queue, priority })).id);
        }
        const other = variant.names === null ? null : await t.submit("other", { queue: variant.queues[0] as string, priority: 10 });
        const order: string[] = [];
        for (let i = 0; i < 4; i++) {
          const rows = await t.claim(t.w1, { queues: variant.queues, names: variant.names, limit: 1 });
          t.expect(rows).toHaveLength(1);
          order.push(at(rows, 0).id);
        }
        t.expect({ variant: variant.label, order }).toEqual({ variant: variant.label, order: [4, 3, 2, 1].map((p) => byPriority.get(p)) });
        t.expect(await t.claim(t.w1, { queues: variant.queues, names: variant.names, limit: 10 })).toEqual([]);
        if (other !== null) t.fields(await t.get(other.id), { status: "queued", attempt: 0 });
      }
    },
  },
];
