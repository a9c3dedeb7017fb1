/**
 * submit and the key-conflict strategies beyond §14 (§5.1): defaults,
 * options, the backpressure gate hook, every strategy × status, and keyed
 * submits racing each other.
 */
import type { QueueDepthGate, Task, TaskStore } from "@cairnq/protocol";
import { AlreadyExists, QueueFull } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { ids, sortedIds } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";

/** `n` concurrent submits of one key with `conflict`, settled. */
async function race(t: CaseContext, n: number, conflict: "reuse" | "reject" | "replace" | "reuse-succeeded"): Promise<PromiseSettledResult<Task>[]> {
  return Promise.allSettled(Array.from({ length: n }, (_, i) => t.submit("raced", { key: "hot", conflict, payload: { i } })));
}

function reuseRace(n: number): ConformanceCase {
  return {
    id: `key-concurrent-reuse-${n}`,
    title: `${n} concurrent 'reuse' submits of one key yield one task`,
    spec: "§5.1, §13",
    async run(t) {
      const settled = await race(t, n, "reuse");
      const rows = settled.map((s) => {
        if (s.status === "rejected") throw s.reason;
        return s.value;
      });
      t.expect(new Set(ids(rows)).size).toBe(1);
      const all = await t.all();
      t.expect(all).toHaveLength(1);
      t.fields(await t.store.getByKey("hot"), { id: all[0]?.id, status: "queued" });
    },
  };
}

function rejectRace(n: number): ConformanceCase {
  return {
    id: `key-concurrent-reject-${n}`,
    title: `${n} concurrent 'reject' submits of one key: exactly one succeeds, the others get AlreadyExists`,
    spec: "§5.1, §13",
    async run(t) {
      const settled = await race(t, n, "reject");
      const won = settled.filter((s): s is PromiseFulfilledResult<Task> => s.status === "fulfilled");
      const lost = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
      t.expect(won).toHaveLength(1);
      for (const s of lost) {
        if (!(s.reason instanceof AlreadyExists)) throw s.reason;
        t.expect(s.reason.key).toBe("hot");
      }
      t.expect(ids(await t.all())).toEqual([won[0]?.value.id]);
      t.fields(await t.store.getByKey("hot"), { id: won[0]?.value.id });
    },
  };
}

export const submitCases: readonly ConformanceCase[] = [
  {
    id: "submit-defaults",
    title: "an unkeyed submit with only a name gets every documented default",
    spec: "§5.1, §3.1",
    async run(t) {
      const task = await t.submit("plain");
      t.fields(task, {
        queue: "default",
        status: "queued",
        payload: {},
        metadata: {},
        result: null,
        error: null,
        progress: null,
        message: null,
        attempt: 0,
        max_attempts: 3,
        priority: 0,
        worker_id: null,
        lease_until_ms: null,
        cancel_requested_at_ms: null,
        parent_id: null,
        root_id: task.id,
        correlation_id: null,
        completed_at_ms: null,
      });
      t.expect(Math.abs(task.run_at_ms - task.created_at_ms)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
      t.expect(Math.abs(task.updated_at_ms - task.created_at_ms)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
      t.expect(await t.get(task.id)).toEqual(task);
    },
  },
  {
    id: "submit-options-stored",
    title: "queue, priority, maxAttempts, metadata, parentId, rootId, correlationId and runAtDelayMs are stored",
    spec: "§5.1, §2.4",
    async run(t) {
      const parent = await t.submit("parent", { correlationId: "corr" });
      const child = await t.submit("child", {
        queue: "jobs",
        payload: { n: 1 },
        priority: -5,
        maxAttempts: 7,
        metadata: { tenant: "acme" },
        parentId: parent.id,
        rootId: parent.root_id,
        correlationId: "corr",
        runAtDelayMs: 60_000,
      });
      t.fields(child, {
        queue: "jobs",
        payload: { n: 1 },
        priority: -5,
        max_attempts: 7,
        metadata: { tenant: "acme" },
        parent_id: parent.id,
        root_id: parent.id,
        correlation_id: "corr",
      });
      t.expect(Math.abs(child.run_at_ms - child.created_at_ms - 60_000)).toBeLessThanOrEqual(CLOCK_SLACK_MS);
      t.expect(await t.get(child.id)).toEqual(child);
    },
  },
  {
    id: "submit-null-payload-and-metadata",
    title: "payload and metadata null or absent are stored as {}",
    spec: "§2.2, §5.1",
    async run(t) {
      t.fields(await t.submit("a", { payload: null, metadata: null }), { payload: {}, metadata: {} });
      t.fields(await t.submit("b", { payload: undefined, metadata: undefined }), { payload: {}, metadata: {} });
      for (const row of await t.all()) t.fields(row, { payload: {}, metadata: {} });
    },
  },
  {
    id: "submit-gate-acquired-after-validation",
    title: "the queueDepthGate is acquired once per submit for the resolved queue (keyed reuses too), after validation; a QueueFull writes nothing",
    spec: "§5.1, §5.6",
    async run(t) {
      const calls: string[] = [];
      let full = false;
      const gate: QueueDepthGate = {
        acquire: (queue: string, store: TaskStore) => {
          calls.push(queue);
          t.expect(typeof store.queueDepth).toBe("function");
          return full ? Promise.reject(new QueueFull(queue, 1, 0)) : Promise.resolve();
        },
      };
      t.store.queueDepthGate = gate;
      try {
        await t.submit("a");
        await t.submit("b", { queue: "jobs" });
        const keyed = await t.submit("c", { key: "k", queue: "jobs" });
        t.expect((await t.submit("c", { key: "k", queue: "jobs" })).id).toBe(keyed.id);
        t.expect(calls).toEqual(["default", "jobs", "jobs", "jobs"]);
        await t.rejectsAny(t.submit("bad", { maxAttempts: 0 }), "invalid submit behind a gate");
        t.expect(calls).toHaveLength(4);
        full = true;
        await t.rejects(t.submit("d", { queue: "jobs" }), QueueFull, "submit through a full gate");
        await t.rejects(t.submit("e", { queue: "jobs", key: "k2" }), QueueFull, "keyed submit through a full gate");
        t.expect(await t.store.getByKey("k2")).toBeNull();
        t.expect(await t.all()).toHaveLength(3);
      } finally {
        t.store.queueDepthGate = null;
      }
    },
  },
  {
    id: "key-reuse-ignores-new-input",
    title: "'reuse' returns the live task unchanged: the new name, payload, queue and options are ignored, not compared",
    spec: "§5.1",
    async run(t) {
      const first = await t.submit("job", { key: "k", payload: { v: 1 }, priority: 1 });
      const again = await t.submit("other", { key: "k", payload: { v: 2 }, queue: "elsewhere", priority: 9, maxAttempts: 1 });
      t.expect(again).toEqual(first);
      t.expect(await t.get(first.id)).toEqual(first);
    },
  },
  {
    id: "key-reuse-returns-running-task",
    title: "'reuse' and 'reuse-succeeded' return a running task unchanged",
    spec: "§5.1",
    async run(t) {
      const task = await t.submit("job", { key: "k" });
      const running = await t.claimOne(t.w1);
      t.fields(await t.submit("job", { key: "k", conflict: "reuse" }), { id: task.id, status: "running", worker_id: t.w1 });
      t.fields(await t.submit("job", { key: "k", conflict: "reuse-succeeded" }), { id: task.id, status: "running" });
      t.expect(await t.get(task.id)).toEqual(running);
    },
  },
  {
    id: "key-declined-terminal-untouched",
    title: "reuse strategies decline failed and canceled tasks, 'reuse' declines succeeded; a declined terminal task is left untouched",
    spec: "§5.1",
    async run(t) {
      const failed = await t.submit("f", { key: "kf", maxAttempts: 1 });
      await t.claimOne(t.w1, { names: ["f"] });
      const failedRow = await t.store.fail({ taskId: failed.id, workerId: t.w1, error: { code: "x" }, retryable: false });
      const canceled = await t.submit("c", { key: "kc" });
      const canceledRow = await t.store.cancel(canceled.id);
      const succeeded = await t.submit("s", { key: "ks" });
      await t.claimOne(t.w1, { names: ["s"] });
      const succeededRow = await t.store.complete({ taskId: succeeded.id, workerId: t.w1, result: { ok: 1 } });

      const viaReuseSucceeded = await t.submit("f", { key: "kf", conflict: "reuse-succeeded" });
      t.expect(viaReuseSucceeded.id).not.toBe(failed.id);
      const viaReuse = await t.submit("c", { key: "kc", conflict: "reuse" });
      t.expect(viaReuse.id).not.toBe(canceled.id);
      const overSuccess = await t.submit("s", { key: "ks", conflict: "reuse" });
      t.expect(overSuccess.id).not.toBe(succeeded.id);
      for (const row of [viaReuseSucceeded, viaReuse, overSuccess]) t.fields(row, { status: "queued" });
      t.expect(await t.get(failed.id)).toEqual(failedRow);
      t.expect(await t.get(canceled.id)).toEqual(canceledRow);
      t.expect(await t.get(succeeded.id)).toEqual(succeededRow);
      t.fields(await t.store.getByKey("ks"), { id: overSuccess.id });
    },
  },
  {
    id: "key-reject-any-status",
    title: "'reject' raises AlreadyExists whatever the existing task's status, writing nothing",
    spec: "§5.1",
    async run(t) {
      const queued = await t.submit("q", { key: "kq" });
      const canceled = await t.submit("c", { key: "kc" });
      await t.store.cancel(canceled.id);
      const running = await t.submit("r", { key: "kr" });
      await t.claimOne(t.w1, { names: ["r"] });
      const done = await t.submit("s", { key: "ks" });
      await t.claimOne(t.w1, { names: ["s"] });
      await t.store.complete({ taskId: done.id, workerId: t.w1, result: null });
      const before = await t.all();
      for (const key of ["kq", "kc", "kr", "ks"]) {
        const err = await t.rejects(t.submit("again", { key, conflict: "reject" }), AlreadyExists, `reject over ${key}`);
        t.expect(err.key).toBe(key);
      }
      t.expect(await t.all()).toEqual(before);
      t.expect([queued.id, running.id].every((id) => before.some((row) => row.id === id))).toBe(true);
    },
  },
  {
    id: "key-replace-running-flags-old",
    title: "'replace' over a running task flags it (it stays running and ends canceled when settled) and repoints the key",
    spec: "§5.1, §5.7, §5.15",
    async run(t) {
      const old = await t.submit("job", { key: "k" });
      await t.claimOne(t.w1);
      const fresh = await t.submit("job", { key: "k", conflict: "replace" });
      t.expect(fresh.id).not.toBe(old.id);
      const flagged = await t.get(old.id);
      t.fields(flagged, { status: "running", worker_id: t.w1 });
      t.expect(flagged.cancel_requested_at_ms).not.toBeNull();
      t.fields(await t.store.getByKey("k"), { id: fresh.id, status: "queued" });
      t.fields(await t.store.complete({ taskId: old.id, workerId: t.w1, result: { late: true } }), { status: "canceled", result: null });
      t.fields(await t.store.getByKey("k"), { id: fresh.id });
    },
  },
  {
    id: "key-replace-terminal-keeps-old",
    title: "'replace' over a terminal task leaves it untouched",
    spec: "§5.1",
    async run(t) {
      const old = await t.submit("job", { key: "k" });
      await t.claimOne(t.w1);
      const done = await t.store.complete({ taskId: old.id, workerId: t.w1, result: { v: 1 } });
      const fresh = await t.submit("job", { key: "k", conflict: "replace" });
      t.expect(fresh.id).not.toBe(old.id);
      t.expect(await t.get(old.id)).toEqual(done);
    },
  },
  reuseRace(2),
  reuseRace(10),
  rejectRace(2),
  rejectRace(10),
  {
    id: "key-concurrent-replace-10",
    title: "10 concurrent 'replace' submits of one key: the key points at the one live task; every other is canceled",
    spec: "§5.1, §13",
    async run(t) {
      const settled = await race(t, 10, "replace");
      for (const s of settled) if (s.status === "rejected") throw s.reason;
      const all = await t.all();
      t.expect(all).toHaveLength(10);
      const live = all.filter((row) => row.status === "queued");
      t.expect(live).toHaveLength(1);
      t.expect(all.filter((row) => row.status === "canceled")).toHaveLength(9);
      t.fields(await t.store.getByKey("hot"), { id: live[0]?.id });
    },
  },
  {
    id: "key-concurrent-reuse-succeeded-10",
    title: "10 concurrent 'reuse-succeeded' submits of one key yield one task",
    spec: "§5.1, §13",
    async run(t) {
      const settled = await race(t, 10, "reuse-succeeded");
      for (const s of settled) if (s.status === "rejected") throw s.reason;
      t.expect(new Set(settled.map((s) => (s as PromiseFulfilledResult<Task>).value.id)).size).toBe(1);
      t.expect(await t.all()).toHaveLength(1);
    },
  },
  {
    id: "key-purge-cascade-frees-key",
    title: "purging a keyed task removes its key: by-key reads and writes see nothing, and 'reject' may take the key again",
    spec: "§5.9, §3.2",
    async run(t) {
      const task = await t.submit("job", { key: "k" });
      await t.claimOne(t.w1);
      await t.store.fail({ taskId: task.id, workerId: t.w1, error: {}, retryable: false });
      await t.sleep(20);
      t.expect(await t.store.purge({})).toEqual([task.id]);
      t.expect(await t.store.getByKey("k")).toBeNull();
      t.expect(await t.store.getStatusByKey("k")).toBeNull();
      t.expect(await t.store.cancelByKey("k")).toBeNull();
      t.expect(await t.store.retryByKey("k")).toBeNull();
      const again = await t.submit("job", { key: "k", conflict: "reject" });
      t.expect(again.id).not.toBe(task.id);
      t.expect(sortedIds(await t.all())).toEqual([again.id]);
    },
  },
];
