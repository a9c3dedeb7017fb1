/**
 * A few client paths on a real SQLite file (WAL, group commit, the store's
 * own wake sleeps), where the MemoryStore tests cannot show timing or
 * transaction effects.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineTask, QueueFull, TaskFailed, TaskTimeout } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CairnQ, WaitInterrupted } from "../src/index.js";
import { claimWhenQueued, delay } from "./support.js";

let dir: string;
let clients: CairnQ[] = [];

function open(options?: ConstructorParameters<typeof CairnQ>[1]): CairnQ {
  const client = new CairnQ(new SQLiteStore(join(dir, "cairnq.db")), options);
  clients.push(client);
  return client;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-client-"));
});

afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  clients = [];
  rmSync(dir, { recursive: true, force: true });
});

describe("on SQLite", () => {
  it("call resolves with the result a worker stored through another connection", async () => {
    const double = defineTask<{ n: number }, { n: number }>("double", { queue: "math" });
    const api = open();
    const worker = open();
    const calling = api.call(double, { n: 21 }, { pollMs: 5, maxPollMs: 20 });
    const task = await claimWhenQueued(worker.store, "math");
    await worker.store.complete({ taskId: task.id, workerId: task.workerId, result: { n: (task.payload as { n: number }).n * 2 } });
    expect(await calling).toEqual({ n: 42 });
  });

  it("call maps a failure to TaskFailed and a stuck task to TaskTimeout", async () => {
    const api = open();
    const failing = api.call("charge", {}, { pollMs: 5 }).catch((e: unknown) => e);
    const task = await claimWhenQueued(api.store);
    await api.store.fail({ taskId: task.id, workerId: task.workerId, error: { type: "Declined", code: "declined", message: "no", retryable: false, details: {} }, retryable: false });
    expect(await failing).toMatchObject({ name: "TaskFailed", code: "declined", taskId: task.id });
    expect(await failing).toBeInstanceOf(TaskFailed);

    const timeout = await api.call("nobody-handles-this", {}, { waitTimeoutMs: 30, pollMs: 5 }).catch((e: unknown) => e);
    expect(timeout).toBeInstanceOf(TaskTimeout);
    expect((timeout as TaskTimeout).message).toContain("queued and never claimed");
  });

  it("a TaskTimeout of a task at its group's groupConcurrency names the group's counts, read from the database", async () => {
    const api = open();
    const first = await api.submit("export", {}, { group: "acme" });
    const second = await api.submit("export", {}, { group: "acme" });
    const workerId = "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XP";
    const claim = () => api.store.claim({ queues: ["default"], workerId, leaseMs: 60_000, names: ["export"], limit: 10, flowControl: { export: { groupConcurrency: 1 } } });
    const claimed = await claim();
    expect(claimed).toHaveLength(1);
    expect(await claim()).toEqual([]);
    // Submitted in one millisecond, either may be drawn first: wait for the one left queued.
    const left = claimed[0]?.id === first.id ? second : first;
    const timeout = await api.wait(left.id, { timeoutMs: 30, pollMs: 5 }).catch((e: unknown) => e);
    expect(timeout).toBeInstanceOf(TaskTimeout);
    expect((timeout as TaskTimeout).message).toBe(
      `task ${left.id} ('export') did not finish within 30ms: queued, waiting on its group's limit: group acme: 1 of 1 running ` +
        `(groupConcurrency of 'export'), 1 queued — it is claimed when one of them ends`,
    );
  });

  it("waitByKey follows a replace made by another client", async () => {
    const a = open();
    const b = open();
    await a.submit("job", {}, { key: "k" });
    const waiting = a.waitByKey("k", { pollMs: 5, maxPollMs: 5 });
    const replacement = await b.submit("job", { v: 2 }, { key: "k", conflict: "replace" });
    const task = await claimWhenQueued(b.store);
    expect(task.id).toBe(replacement.id);
    await b.store.complete({ taskId: task.id, workerId: task.workerId, result: "second" });
    expect(await waiting).toMatchObject({ id: replacement.id, status: "succeeded", result: "second" });
  });

  it("the gate rejects with QueueFull at the deadline, nothing enqueued", async () => {
    const client = open({ maxQueueDepth: 2, maxQueueWaitMs: 30, queuePollIntervalMs: 5 });
    await client.submit("job", {}, { queue: "q" });
    await client.submit("job", {}, { queue: "q" });
    await expect(client.submit("job", {}, { queue: "q" })).rejects.toBeInstanceOf(QueueFull);
    expect((await client.stats("q")).q?.queued).toBe(2);
  });

  it("close() cuts a pending call's and wait's waits short with WaitInterrupted carrying the task id; the task stays queued", async () => {
    const api = open();
    const calling = api.call("report", {}, { queue: "idle", key: "report:1", waitTimeoutMs: 10_000 }).catch((err: unknown) => err);
    const reader = open();
    const queued = await (async () => {
      for (let i = 0; i < 500; i += 1) {
        const row = await reader.getByKey("report:1");
        if (row !== null) return row;
        await delay(2);
      }
      throw new Error("the call never submitted its task");
    })();
    const waiting = api.wait(queued.id, { timeoutMs: 10_000 }).catch((err: unknown) => err);
    const byKey = api.waitByKey("report:1", { timeoutMs: 10_000 }).catch((err: unknown) => err);
    await delay(20);
    await api.close();
    const [call, wait, waitByKey] = await Promise.all([calling, waiting, byKey]);
    expect(call).toBeInstanceOf(WaitInterrupted);
    expect(call).toMatchObject({ taskId: queued.id, key: "report:1" });
    expect((call as Error).message).toBe(
      `call: close() on this client cut short the wait for task ${queued.id}; the task was submitted and is still in the database ` +
        `(a worker may still run it), so wait for it with client.wait('${queued.id}') on a client that is open`,
    );
    expect((call as Error).cause).toMatchObject({ message: expect.stringContaining("store is closed") as unknown });
    expect(wait).toMatchObject({ name: "WaitInterrupted", taskId: queued.id, key: null });
    expect(waitByKey).toMatchObject({ name: "WaitInterrupted", taskId: null, key: "report:1" });
    expect((await reader.get(queued.id))?.status).toBe("queued");
  });
});
