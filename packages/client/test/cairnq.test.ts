import type { Task, TaskStore } from "@cairnq/protocol";
import { defineTask, InvalidArgument, SerializationError, TaskCanceled, TaskFailed, TaskTimeout } from "@cairnq/protocol";
import { describe, expect, expectTypeOf, it, vi } from "vitest";
import type { RetentionHook } from "../src/index.js";
import { CairnQ } from "../src/index.js";
import { claimWhenQueued, delay, MemoryStore, RecordingStore } from "./support.js";

const summarize = defineTask<{ url: string }, { summary: string }>("summarize", { queue: "llm", maxAttempts: 5, priority: 7 });

describe("construction", () => {
  it("keeps the store it was given", () => {
    const store = new MemoryStore();
    expect(new CairnQ(store).store).toBe(store);
  });

  it.each([
    [null, "store"],
    [{}, "store"],
    [{ submit() {} }, "store"],
  ])("rejects a store that is not a TaskStore (%o)", (store, argument) => {
    expect(() => new CairnQ(store as never)).toThrow(expect.objectContaining({ argument, name: "InvalidArgument" }));
  });

  it.each([
    ["an unknown option", { maxQueueDeph: 5 }, "maxQueueDeph"],
    ["options that are not an object", 5, "options"],
    ["an array as options", [], "options"],
    ["retention options with an unknown key", { retention: { olderThan: 5 } }, "olderThan"],
    ["retention that is neither options nor a sweeper", { retention: "weekly" }, "retention"],
    ["a logger that is not an object", { logger: "console" }, "logger"],
    ["a logger that is a function", { logger: () => {} }, "logger"],
    ["a store-style clock function", { clock: () => 0 }, "clock"],
    ["a clock without timers", { clock: { now: () => 0, monotonicMs: () => 0 } }, "clock"],
  ])("rejects %s", (_what, options, argument) => {
    expect(() => new CairnQ(new MemoryStore(), options as never)).toThrow(expect.objectContaining({ argument }));
  });

  it("names the valid options when one is misspelt", () => {
    expect(() => new CairnQ(new MemoryStore(), { maxQueueWait: 5 } as never)).toThrow(
      "'maxQueueWait' is not an option of new CairnQ(store, options) (did you mean 'maxQueueWaitMs'?); the options are maxQueueDepth, maxQueueWaitMs, queuePollIntervalMs, retention, logger, clock",
    );
  });

  it("accepts null or undefined options and a null retention", () => {
    expect(() => new CairnQ(new MemoryStore(), undefined)).not.toThrow();
    expect(() => new CairnQ(new MemoryStore(), null as never)).not.toThrow();
    expect(() => new CairnQ(new MemoryStore(), { retention: null, logger: undefined })).not.toThrow();
  });

  it("takes logger: null as silence, as the worker, the stores and the dashboard do", async () => {
    const store = new MemoryStore();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      new CairnQ(store, { maxQueueDepth: 10 });
      // Replacing another client's gate is what the client warns about; with null it says nothing, anywhere.
      const client = new CairnQ(store, { logger: null, maxQueueDepth: 5 });
      expect((await client.submit("n", {})).status).toBe("queued");
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
    expect(() => new CairnQ(new MemoryStore(), { logger: null })).not.toThrow();
  });
});

describe("submit", () => {
  it("takes queue, maxAttempts and priority defaults from a TaskDef", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit(summarize, { url: "https://example.com" });
    expect(task).toMatchObject({ name: "summarize", queue: "llm", max_attempts: 5, priority: 7, status: "queued" });
    expect(task.payload).toEqual({ url: "https://example.com" });
    expectTypeOf(task).toEqualTypeOf<Task<{ url: string }, { summary: string }>>();
  });

  it("lets per-submit options override the TaskDef", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit(summarize, { url: "u" }, { queue: "llm-bulk", maxAttempts: 1, priority: -2 });
    expect(task).toMatchObject({ queue: "llm-bulk", max_attempts: 1, priority: -2 });
  });

  it("passes every submit option to the store", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const before = Date.now();
    const task = await client.submit(
      "email",
      { to: "a@example.com" },
      {
        key: "welcome:1",
        conflict: "reject",
        queue: "mail",
        priority: 3,
        maxAttempts: 2,
        runAtDelayMs: 60_000,
        correlationId: "req-9",
        metadata: { tenant: "acme" },
        parentId: "task_parent",
        rootId: "task_root",
      },
    );
    expect(task).toMatchObject({
      name: "email",
      queue: "mail",
      priority: 3,
      max_attempts: 2,
      correlation_id: "req-9",
      metadata: { tenant: "acme" },
      parent_id: "task_parent",
      root_id: "task_root",
    });
    expect(task.run_at_ms).toBeGreaterThanOrEqual(before + 60_000);
    expect((await client.getByKey("welcome:1"))?.id).toBe(task.id);
    await expect(client.submit("email", {}, { key: "welcome:1", conflict: "reject" })).rejects.toMatchObject({ name: "AlreadyExists" });
  });

  it("uses the store's defaults for a bare name", async () => {
    const client = new CairnQ(new MemoryStore());
    const task = await client.submit("ping");
    expect(task).toMatchObject({ name: "ping", queue: "default", max_attempts: 3, priority: 0, payload: {}, root_id: task.id });
  });

  it.each([
    ["an empty name", "", "name"],
    ["a number", 42, "name"],
    ["an object without a name", { queue: "x" }, "name"],
  ])("rejects %s as the task", async (_what, task, argument) => {
    const client = new CairnQ(new MemoryStore());
    await expect(client.submit(task as string)).rejects.toMatchObject({ name: "InvalidArgument", argument });
  });

  it("rejects unknown options rather than ignoring them", async () => {
    const client = new CairnQ(new MemoryStore());
    await expect(client.submit("x", {}, { delayMs: 5 } as never)).rejects.toMatchObject({ argument: "delayMs" });
    await expect(client.submit("x", {}, "fast" as never)).rejects.toMatchObject({ argument: "options" });
  });

  it("surfaces the store's validation", async () => {
    const client = new CairnQ(new MemoryStore());
    await expect(client.submit("x", {}, { maxAttempts: 0 })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(client.submit("x", { n: Number.NaN })).rejects.toBeInstanceOf(SerializationError);
  });
});

/** A TaskStore whose every method is a spy returning a distinct value. */
function spyStore(): TaskStore & Record<string, ReturnType<typeof vi.fn>> {
  const methods = [
    "connect",
    "close",
    "submit",
    "get",
    "getByKey",
    "getStatus",
    "getStatusByKey",
    "list",
    "stats",
    "queueDepth",
    "cancel",
    "cancelByKey",
    "retry",
    "retryByKey",
    "purge",
    "claim",
    "heartbeat",
    "heartbeatBatch",
    "progress",
    "succeed",
    "complete",
    "fail",
    "claimWake",
    "taskDoneWake",
  ];
  const store: Record<string, unknown> = {
    capabilities: { pushWakeups: false, transactionalComplete: false, databaseClock: false },
    queueDepthGate: null,
    subscribe: vi.fn(() => () => {}),
  };
  for (const m of methods) store[m] = vi.fn(async () => ({ from: m }));
  return store as never;
}

describe("delegation", () => {
  it.each([
    ["get", ["task_1"]],
    ["getByKey", ["k"]],
    ["getStatus", ["task_1"]],
    ["getStatusByKey", ["k"]],
    ["list", [{ queue: "q", status: "failed", name: "n", rootId: "r", correlationId: "c", limit: 5, offset: 10 }]],
    ["list", []],
    ["stats", ["q"]],
    ["stats", []],
    ["queueDepth", ["q", 10]],
    ["cancel", ["task_1"]],
    ["cancelByKey", ["k"]],
    ["retry", ["task_1", { resetAttempt: true }]],
    ["retryByKey", ["k", { resetAttempt: false }]],
    ["purge", [{ olderThanMs: 1000, queue: "q", status: "succeeded", name: "n", limit: 50 }]],
  ] as const)("%s passes its arguments through and returns the store's answer", async (method, args) => {
    const store = spyStore();
    const client = new CairnQ(store);
    const out = await (client[method] as (...a: unknown[]) => Promise<unknown>)(...args);
    expect(store[method]).toHaveBeenCalledTimes(1);
    const spy = store[method] as unknown as ReturnType<typeof vi.fn>;
    expect(spy.mock.calls[0]!.filter((a: unknown) => a !== undefined)).toEqual(args);
    expect(out).toEqual({ from: method });
  });

  it("connect opens the store", async () => {
    const store = spyStore();
    await new CairnQ(store).connect();
    expect(store.connect).toHaveBeenCalledTimes(1);
  });

  it("purge requires olderThanMs", async () => {
    const store = spyStore();
    const client = new CairnQ(store);
    await expect(client.purge({} as never)).rejects.toMatchObject({ argument: "olderThanMs" });
    await expect(client.purge(undefined as never)).rejects.toThrow(/pass olderThanMs: 0 to delete every terminal task/);
    expect(store.purge).not.toHaveBeenCalled();
    await client.purge({ olderThanMs: 0 });
    expect(store.purge).toHaveBeenCalledWith({ olderThanMs: 0 });
  });

  it("purge refuses an unknown key, as cancelMany does: a misspelt filter would delete every terminal task", async () => {
    const store = spyStore();
    const client = new CairnQ(store);
    await expect(client.purge({ olderThanMs: 0, queues: ["scratch"] } as never)).rejects.toMatchObject({
      name: "InvalidArgument",
      argument: "queues",
      message: expect.stringContaining("'queues' is not an option of purge (did you mean 'queue'?); the options are olderThanMs, queue, status, name, limit"),
    });
    await expect(client.purge({ olderThanMs: 0, stauts: "failed" } as never)).rejects.toMatchObject({ argument: "stauts", message: expect.stringContaining("did you mean 'status'?") });
    await expect(client.purge({ queue: "q", olderThanMS: 0 } as never)).rejects.toMatchObject({ argument: "olderThanMS" });
    await expect(client.purge([] as never)).rejects.toThrow(/purge options must be an object, got an array/);
    expect(store.purge).not.toHaveBeenCalled();
  });

  it("retry and retryByKey refuse an unknown key: { reset: true } would requeue without resetting the attempts", async () => {
    const store = spyStore();
    const client = new CairnQ(store);
    await expect(client.retry("task_1", { reset: true } as never)).rejects.toMatchObject({
      name: "InvalidArgument",
      argument: "reset",
      message: expect.stringContaining("'reset' is not an option of retry; the options are resetAttempt"),
    });
    await expect(client.retryByKey("k", { resetAtempt: true } as never)).rejects.toMatchObject({
      argument: "resetAtempt",
      message: expect.stringContaining("'resetAtempt' is not an option of retryByKey (did you mean 'resetAttempt'?)"),
    });
    expect(store.retry).not.toHaveBeenCalled();
    expect(store.retryByKey).not.toHaveBeenCalled();
  });

  it("get and getByKey refuse a second argument that is not a TaskDef (a name string types nothing), before reading", async () => {
    const store = spyStore();
    const client = new CairnQ(store);
    await expect(client.getByKey("k1", "charge" as never)).rejects.toMatchObject({
      name: "InvalidArgument",
      argument: "task",
      message: expect.stringContaining('getByKey(key, task): task must be a TaskDef from defineTask(...), which types the row read, got the string "charge"'),
    });
    await expect(client.get("task_1", 5 as never)).rejects.toMatchObject({ argument: "task", message: expect.stringContaining("got a number") });
    expect(store.getByKey).not.toHaveBeenCalled();
    expect(store.get).not.toHaveBeenCalled();
  });

  it("works end to end on a real store", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const a = await client.submit("a", {}, { key: "ka", queue: "q1" });
    const b = await client.submit("b", {}, { queue: "q1" });
    expect(await client.getStatus(a.id)).toEqual({ id: a.id, status: "queued" });
    expect(await client.getStatusByKey("ka")).toEqual({ id: a.id, status: "queued" });
    expect(await client.queueDepth("q1", 5)).toBe(3);
    expect((await client.cancelByKey("ka"))?.status).toBe("canceled");
    expect((await client.retryByKey("ka", { resetAttempt: true }))?.status).toBe("queued");
    expect((await client.cancel(b.id))?.status).toBe("canceled");
    expect(await client.cancel(b.id)).toBeNull();
    expect((await client.stats("q1")).q1).toEqual({ queued: 1, running: 0, succeeded: 0, failed: 0, canceled: 1 });
    expect((await client.retry(b.id))?.status).toBe("queued");
    await client.cancel(b.id);
    await delay(2);
    expect(await client.purge({ olderThanMs: 0, name: "b" })).toEqual([b.id]);
    expect(await client.get(b.id)).toBeNull();
    expect((await client.list({ queue: "q1" })).map((t) => t.id)).toEqual([a.id]);
  });
});

describe("call", () => {
  /** A recording store that declares push signals, as a listening PostgresStore does. */
  class PushStore extends RecordingStore {
    override readonly capabilities = { ...new RecordingStore().capabilities, pushWakeups: true };
  }

  it("with push signals sleeps on the done signal right after its submit: the submitted row is the first status, no probe", async () => {
    const store = new PushStore();
    const client = new CairnQ(store);
    store.onWake = async (taskId) => {
      const task = await claimWhenQueued(store);
      expect(task.id).toBe(taskId);
      await store.complete({ taskId, workerId: task.workerId, result: { ok: 1 } });
      store.emit({ reason: "done", taskId });
    };
    expect(await client.call("job", {}, { pollMs: 5 })).toEqual({ ok: 1 });
    expect(store.count("getStatus")).toBe(0);
    expect(store.count("taskDoneWake")).toBe(1);
    expect(store.count("get")).toBe(1);
  });

  it("with push signals probes at once when the task's done signal came while the submit was in flight (the wait would not hear it)", async () => {
    const store = new PushStore();
    const client = new CairnQ(store);
    const submit = store.submit.bind(store);
    store.submit = async (input) => {
      const row = await submit(input);
      const task = await claimWhenQueued(store);
      await store.complete({ taskId: task.id, workerId: task.workerId, result: { fast: true } });
      store.emit({ reason: "done", taskId: task.id });
      return row; // still the queued row, as the submit's answer would be
    };
    expect(await client.call("job", {}, { pollMs: 5 })).toEqual({ fast: true });
    expect(store.count("taskDoneWake")).toBe(0);
    expect(store.count("getStatus")).toBe(1);
    expect(store.listeners.size).toBe(0);
  });

  it("without push signals but with done waits that read the task (taskDoneWakeReads) sleeps right after its submit, no probe", async () => {
    class ReadingStore extends RecordingStore {
      override readonly capabilities = { ...new RecordingStore().capabilities, taskDoneWakeReads: true };
    }
    const store = new ReadingStore();
    const client = new CairnQ(store);
    store.onWake = async (taskId) => {
      const task = await claimWhenQueued(store);
      await store.complete({ taskId, workerId: task.workerId, result: { read: true } });
    };
    expect(await client.call("job", {}, { pollMs: 5 })).toEqual({ read: true });
    const order = store.calls.map((c) => c.method).filter((m) => m === "getStatus" || m === "taskDoneWake");
    expect(order[0]).toBe("taskDoneWake");
  });

  it("without push signals probes the status before its first sleep (§7 step 1)", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    store.onWake = async (taskId) => {
      const task = await claimWhenQueued(store);
      await store.complete({ taskId, workerId: task.workerId });
    };
    expect(await client.call("job", {}, { pollMs: 5 })).toBeNull();
    const order = store.calls.map((c) => c.method).filter((m) => m === "getStatus" || m === "taskDoneWake");
    expect(order.slice(0, 2)).toEqual(["getStatus", "taskDoneWake"]);
  });

  it("resolves with the result of a succeeded task, typed by the TaskDef", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const calling = client.call(summarize, { url: "https://example.com" }, { pollMs: 5 });
    expectTypeOf(calling).toEqualTypeOf<Promise<{ summary: string }>>();
    const task = await claimWhenQueued(store, "llm");
    expect(task.payload).toEqual({ url: "https://example.com" });
    await store.complete({ taskId: task.id, workerId: task.workerId, result: { summary: "short" } });
    await expect(calling).resolves.toEqual({ summary: "short" });
  });

  it("types payload and result from a TaskDef", () => {
    // Compile-time only: never called.
    const typed = async (client: CairnQ) => {
      // @ts-expect-error the TaskDef's payload is required
      await client.call(summarize);
      // @ts-expect-error wrong payload type
      await client.submit(summarize, { url: 5 });
      const untyped = defineTask("anything");
      await client.submit(untyped);
      const n: number = await client.call<number>("count", {});
      return n;
    };
    expect(typeof typed).toBe("function");
  });

  it("resolves with null when the handler returned nothing", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const calling = client.call<void>("fire", {}, { pollMs: 5 });
    const task = await claimWhenQueued(store);
    await store.complete({ taskId: task.id, workerId: task.workerId });
    expect(await calling).toBeNull();
  });

  it("returns a succeeded task reused by key without waiting", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const first = await client.submit("report", {}, { key: "may" });
    const worker = await claimWhenQueued(store);
    await store.complete({ taskId: first.id, workerId: worker.workerId, result: { rows: 3 } });
    expect(await client.call("report", {}, { key: "may", conflict: "reuse-succeeded" })).toEqual({ rows: 3 });
    expect(store.count("taskDoneWake")).toBe(0);
  });

  it("rejects with TaskFailed carrying the stored envelope", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const calling = client.call("charge", { cents: 5 }, { pollMs: 5 }).catch((e: unknown) => e);
    const task = await claimWhenQueued(store);
    const envelope = { type: "CardDeclined", code: "card_declined", message: "insufficient funds", retryable: false, details: { last4: "4242" } };
    await store.fail({ taskId: task.id, workerId: task.workerId, error: envelope, retryable: false });
    const error = await calling;
    expect(error).toBeInstanceOf(TaskFailed);
    expect(error).toMatchObject({ ...envelope, taskId: task.id, error: envelope });
  });

  it("rejects with TaskCanceled when the task is canceled", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const calling = client.call("job", {}, { pollMs: 5, key: "c" }).catch((e: unknown) => e);
    await delay(10);
    const canceled = await client.cancelByKey("c");
    const error = await calling;
    expect(error).toBeInstanceOf(TaskCanceled);
    expect((error as TaskCanceled).taskId).toBe(canceled?.id);
  });

  it("rejects with TaskCanceled when a running task's handler sees the cancel", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const calling = client.call("job", {}, { pollMs: 5 }).catch((e: unknown) => e);
    const task = await claimWhenQueued(store);
    await client.cancel(task.id);
    await store.complete({ taskId: task.id, workerId: task.workerId, result: "ignored" });
    expect(await calling).toMatchObject({ name: "TaskCanceled", taskId: task.id });
  });

  it("rejects with TaskTimeout when nobody runs the task, which stays queued", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const error = await client.call(summarize, { url: "u" }, { waitTimeoutMs: 20, pollMs: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskTimeout);
    const timeout = error as TaskTimeout;
    expect(timeout.key).toBeNull();
    expect(timeout.task).toMatchObject({ name: "summarize", status: "queued" });
    expect(timeout.taskId).toBe(timeout.task?.id);
    expect(timeout.message).toContain("handler for 'summarize' on queue 'llm'");
    expect((await client.getStatus(timeout.taskId))?.status).toBe("queued");
  });

  it("validates wait options before submitting anything", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    await expect(client.call("job", {}, { waitTimeoutMs: -1 })).rejects.toMatchObject({ argument: "waitTimeoutMs" });
    await expect(client.call("job", {}, { timeoutMs: 5 } as never)).rejects.toMatchObject({ argument: "timeoutMs" });
    expect(await store.list()).toEqual([]);
  });

  it("can be aborted, leaving the task queued", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const error = await client.call("job", {}, { signal: AbortSignal.timeout(10) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TimeoutError" });
    expect((await store.list())[0]?.status).toBe("queued");
  });
});

describe("retention from plain options (the seed's form)", () => {
  async function succeededTask(store: MemoryStore): Promise<string> {
    await store.submit({ name: "job" });
    const claimed = await claimWhenQueued(store);
    await store.complete({ taskId: claimed.id, workerId: claimed.workerId, result: null });
    return claimed.id;
  }

  async function eventually(check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("condition not reached within 5000 ms");
      await delay(10);
    }
  }

  it.each([
    ["one cutoff", { olderThanMs: 0, intervalMs: 10 }],
    ["a per-status map", { olderThanMs: { succeeded: 0 }, intervalMs: 10 }],
    ["a rule list", { olderThanMs: [{ status: "succeeded" as const, olderThanMs: 0 }], intervalMs: 10 }],
  ])("builds and owns a sweeper from %s: old terminal rows are purged, queued ones kept, close stops it", async (_what, retention) => {
    const store = new MemoryStore();
    const done = await succeededTask(store);
    const queued = await store.submit({ name: "job" });
    const client = new CairnQ(store, { retention });
    await eventually(async () => (await store.get(done)) === null);
    expect((await store.get(queued.id))?.status).toBe("queued");
    // close() closes the store too, which then answers nothing: the sweeper is seen stopped by its purges stopping.
    let purges = 0;
    const purge = store.purge.bind(store);
    store.purge = (input) => {
      purges += 1;
      return purge(input);
    };
    await client.close();
    const afterClose = purges;
    await delay(40);
    expect(purges).toBe(afterClose);
  });

  it("validates the options when the client is built, naming the field", () => {
    expect(() => new CairnQ(new MemoryStore(), { retention: { olderThanMs: -1 } })).toThrow(expect.objectContaining({ name: "InvalidArgument", argument: "olderThanMs" }));
  });
});

describe("retention and close", () => {
  function retentionHook(events: string[]): RetentionHook {
    return {
      start: () => events.push("retention.start"),
      stop: async () => {
        events.push("retention.stop");
        await delay(5);
        events.push("retention.stopped");
      },
    };
  }

  it("starts retention in the constructor and stops it before the store closes", async () => {
    const events: string[] = [];
    const client = new CairnQ(new RecordingStore(events), { retention: retentionHook(events) });
    expect(events).toEqual(["retention.start"]);
    await client.connect();
    await client.connect();
    await client.close();
    expect(events).toEqual(["retention.start", "store.connect", "store.connect", "retention.stop", "retention.stopped", "store.close"]);
  });

  it("starts retention once, whatever operations follow", async () => {
    const events: string[] = [];
    const client = new CairnQ(new RecordingStore(events), { retention: retentionHook(events) });
    await client.submit("job");
    await client.getStatus("task_x");
    expect(events).toEqual(["retention.start"]);
    await client.close();
  });

  it("close is idempotent and shared by concurrent callers", async () => {
    const events: string[] = [];
    const client = new CairnQ(new RecordingStore(events), { retention: retentionHook(events) });
    await Promise.all([client.close(), client.close()]);
    await client.close();
    expect(events.filter((e) => e === "store.close")).toHaveLength(1);
    expect(events.filter((e) => e === "retention.stop")).toHaveLength(1);
  });

  it("does not start retention again after close", async () => {
    const events: string[] = [];
    const client = new CairnQ(new RecordingStore(events), { retention: retentionHook(events) });
    await client.close();
    await client.get("task_x");
    expect(events.filter((e) => e === "retention.start")).toHaveLength(1);
  });

  it("starts nothing when construction fails", () => {
    const events: string[] = [];
    expect(() => new CairnQ(new RecordingStore(events), { retention: retentionHook(events), maxQueueWaitMs: -1 })).toThrow(InvalidArgument);
    expect(events).toEqual([]);
  });

  it("installs no gate when retention fails to start", () => {
    const store = new MemoryStore();
    const retention: RetentionHook = {
      start: () => {
        throw new Error("bad schedule");
      },
      stop: async () => {},
    };
    expect(() => new CairnQ(store, { retention, maxQueueDepth: 5 })).toThrow("bad schedule");
    expect(store.queueDepthGate).toBeNull();
  });

  it("still closes the store when retention fails to stop, and reports that failure", async () => {
    const events: string[] = [];
    const retention: RetentionHook = {
      start: () => {},
      stop: () => Promise.reject(new Error("sweep failed")),
    };
    const client = new CairnQ(new RecordingStore(events), { retention });
    await expect(client.close()).rejects.toThrow("sweep failed");
    expect(events).toEqual(["store.close"]);
  });

  it("uninstalls its gate from the store", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 10 });
    expect(store.queueDepthGate).not.toBeNull();
    await client.close();
    expect(store.queueDepthGate).toBeNull();
  });

  it("leaves a gate installed by someone else alone", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 10 });
    const other = { acquire: async () => {} };
    store.queueDepthGate = other;
    await client.close();
    expect(store.queueDepthGate).toBe(other);
  });
});

describe("watch", () => {
  it("forwards store signals and stops", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const seen: unknown[] = [];
    const stop = client.watch({ queues: ["emails"] }, (signal) => void seen.push(signal));
    store.emit({ reason: "queued", queue: "emails" });
    store.emit({ reason: "queued", queue: "other" });
    store.emit({ reason: "done", taskId: "task_1" });
    stop();
    store.emit({ reason: "queued", queue: "emails" });
    expect(seen).toEqual([
      { reason: "queued", queue: "emails" },
      { reason: "done", taskId: "task_1" },
    ]);
    expect(store.listeners.size).toBe(0);
  });
});

describe("reads typed from a TaskDef", () => {
  const other = defineTask<{ n: number }, number>("other");

  it("get, getByKey, wait, waitByKey and list take the TaskDef, return its rows and refuse a task of another name", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store);
    const task = await client.submit(summarize, { url: "https://example.com" }, { key: "k1" });
    const got = await client.get(task.id, summarize);
    expectTypeOf(got).toEqualTypeOf<Task<{ url: string }, { summary: string }> | null>();
    expect(got?.payload.url).toBe("https://example.com");
    expect((await client.getByKey("k1", summarize))?.id).toBe(task.id);
    expect(await client.get("task_missing", summarize)).toBeNull();

    const wrong = await client.get(task.id, other).then(
      () => null,
      (err: unknown) => err,
    );
    expect(wrong).toBeInstanceOf(InvalidArgument);
    expect(wrong).toMatchObject({ argument: "task" });
    expect((wrong as Error).message).toMatch(new RegExp(`^get: task ${task.id} is a 'summarize' task, not a 'other' one`));
    await expect(client.getByKey("k1", other)).rejects.toMatchObject({ argument: "task" });

    await client.submit(other, { n: 1 });
    const listed = await client.list({ task: summarize });
    expectTypeOf(listed).toEqualTypeOf<Task<{ url: string }, { summary: string }>[]>();
    expect(listed.map((row) => row.id)).toEqual([task.id]);
    expect((await client.list({ task: other, name: "other" })).map((row) => row.name)).toEqual(["other"]);
    await expect(client.list({ task: other, name: "summarize" })).rejects.toThrow(InvalidArgument);
    expect((await client.list()).length).toBe(2);

    const claimed = await claimWhenQueued(store, "llm");
    await store.complete({ taskId: claimed.id, workerId: claimed.workerId, result: { summary: "short" } });
    const done = await client.wait(task.id, { task: summarize, timeoutMs: 5_000, pollMs: 5 });
    expectTypeOf(done).toEqualTypeOf<Task<{ url: string }, { summary: string }>>();
    expect(done.result?.summary).toBe("short");
    expect((await client.waitByKey("k1", { task: summarize, pollMs: 5 })).id).toBe(task.id);
    await expect(client.wait(task.id, { task: other, pollMs: 5 })).rejects.toMatchObject({ argument: "task" });
    await expect(client.wait(task.id, { tsak: summarize } as never)).rejects.toMatchObject({ argument: "tsak" });
    await expect(client.waitByKey("k1", { task: "summarize" } as never)).rejects.toMatchObject({ argument: "task", message: expect.stringMatching(/^waitByKey\(key, \{ task \}\): task must be a TaskDef/) });
  });
});
