import { describe, expect, it } from "vitest";
import type { OwnedInput, Task, TaskStore } from "@cairnq/protocol";
import { defineTask, InvalidArgument, KeyHeldByOtherTask, LostLease, SerializationError, TaskCanceled, TaskError, TaskTimeout, UnsupportedBackend } from "@cairnq/protocol";
import type { TaskContext } from "../src/index.js";
import { delay, gate, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

/** Runs one task through a worker; `body` gets its context. */
async function withContext<T>(
  store: TaskStore,
  body: (ctx: TaskContext) => Promise<T>,
  submit: Partial<Parameters<TaskStore["submit"]>[0]> = {},
): Promise<{ out: T; task: Task }> {
  const worker = makeWorker(store);
  let out!: T;
  let done = false;
  worker.task("probe", async (ctx) => {
    try {
      out = await body(ctx);
    } finally {
      done = true;
    }
  });
  const task = await store.submit({ name: "probe", ...submit });
  void worker.run();
  await waitFor(() => done);
  await worker.stop();
  return { out, task: (await store.get(task.id)) as Task };
}

describe("TaskContext fields", () => {
  it("exposes the row's fields and the worker id", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { queues: ["jobs"] });
    let seen: Record<string, unknown> | null = null;
    worker.task("probe", (ctx, payload) => {
      seen = {
        taskId: ctx.taskId,
        name: ctx.name,
        queue: ctx.queue,
        payload,
        ctxPayload: ctx.payload,
        attempt: ctx.attempt,
        maxAttempts: ctx.maxAttempts,
        rootId: ctx.rootId,
        parentId: ctx.parentId,
        correlationId: ctx.correlationId,
        metadata: ctx.metadata,
        workerId: ctx.workerId,
        lostLease: ctx.lostLease,
        settled: ctx.settled,
        aborted: ctx.signal.aborted,
      };
    });
    const task = await store.submit({
      name: "probe",
      queue: "jobs",
      payload: { n: 1 },
      maxAttempts: 5,
      correlationId: "req-1",
      metadata: { user: "u1" },
    });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    expect(seen).toEqual({
      taskId: task.id,
      name: "probe",
      queue: "jobs",
      payload: { n: 1 },
      ctxPayload: { n: 1 },
      attempt: 1,
      maxAttempts: 5,
      rootId: task.id,
      parentId: null,
      correlationId: "req-1",
      metadata: { user: "u1" },
      workerId: worker.workerId,
      lostLease: false,
      settled: false,
      aborted: false,
    });
  });
});

describe("ctx.metadata of a row another writer stored", () => {
  it("shows JSON null, an array, a string or a number as stored (the v1 column holds any JSON), and the task runs", async () => {
    for (const stored of [null, [1, "a"], "text", 7]) {
      const spy = spyStore();
      // What a row read back from a column a peer wrote holds: the store decodes it as it is.
      spy.hooks.claim = async (_args, next) => ((await next()) as Task[]).map((row) => ({ ...row, metadata: stored as unknown as Record<string, unknown> }));
      const { out, task } = await withContext(spy.store, (ctx) => Promise.resolve(ctx.metadata));
      expect(out).toEqual(stored);
      expect(task.status).toBe("succeeded");
    }
  });
});

describe("a claimed task the worker cannot prepare for its handler", () => {
  it.each([0, 2])("is failed for good (task_unreadable) and reported, and the worker goes on (prefetch %i)", async (prefetch) => {
    const spy = spyStore();
    const bad = await spy.inner.submit({ name: "probe" });
    // Any throw while the claimed row becomes a context (here: reading its metadata) stands for one the worker did not foresee.
    spy.hooks.claim = async (_args, next) =>
      ((await next()) as Task[]).map((row) =>
        row.id !== bad.id
          ? row
          : Object.defineProperty({ ...row }, "metadata", {
              enumerable: true,
              get() {
                throw new TypeError("unreadable metadata");
              },
            }),
      );
    const errors: unknown[] = [];
    const worker = makeWorker(spy.store, { prefetch, onError: (err, info) => errors.push({ message: (err as Error).message, ...info }) });
    const ran: string[] = [];
    worker.task("probe", (ctx) => {
      ran.push(ctx.taskId);
    });
    const running = worker.run();
    await waitForStatus(spy.inner, bad.id, ["failed"]);
    const good = await spy.inner.submit({ name: "probe" });
    await waitForStatus(spy.inner, good.id, ["succeeded"]);
    await worker.stop();
    await running;
    expect(ran).toEqual([good.id]);
    const failed = (await spy.inner.get(bad.id)) as Task;
    expect([failed.attempt, failed.worker_id]).toEqual([1, worker.workerId]);
    expect(failed.error).toMatchObject({ type: "TaskUnreadable", code: "task_unreadable", retryable: false });
    expect((failed.error as { message: string }).message).toContain(`could not prepare task ${bad.id} for its handler (unreadable metadata)`);
    expect(errors).toEqual([{ message: "unreadable metadata", phase: "execute", taskId: bad.id }]);
  });
});

describe("ctx.succeed / ctx.fail", () => {
  it("succeed settles now; the handler's return value is then ignored; repeats return null", async () => {
    const spy = spyStore();
    const { out, task } = await withContext(spy.store, async (ctx) => {
      const first = await ctx.succeed({ early: true });
      const second = await ctx.succeed({ again: true });
      const third = await ctx.fail("nope");
      return { first: first?.status, second, third, settled: ctx.settled };
    });
    expect(out).toEqual({ first: "succeeded", second: null, third: null, settled: true });
    expect(task.result).toEqual({ early: true });
    expect(spy.callsOf("complete")).toHaveLength(1);
    expect(spy.callsOf("fail")).toHaveLength(0);
  });

  it("after settling, progress and heartbeat throw LostLease without touching the store", async () => {
    const spy = spyStore();
    const { out } = await withContext(spy.store, async (ctx) => {
      await ctx.succeed();
      const progress = await ctx.progress(0.9).catch((err: unknown) => err);
      const heartbeat = await ctx.heartbeat().catch((err: unknown) => err);
      return { progress, heartbeat };
    });
    expect(out.progress).toBeInstanceOf(LostLease);
    expect(out.heartbeat).toBeInstanceOf(LostLease);
    expect(spy.callsOf("progress")).toHaveLength(0);
    expect(spy.callsOf("heartbeat")).toHaveLength(0);
  });

  it("fail(string) stores a task_error envelope, retryable by default", async () => {
    const store = new MemoryStore();
    const { task } = await withContext(store, async (ctx) => ctx.fail("upstream 503"), { maxAttempts: 1 });
    expect(task.status).toBe("failed");
    expect(task.error).toEqual({ type: "TaskError", code: "task_error", message: "upstream 503", retryable: true, details: {} });
  });

  it("fail(string, { retryable: false }) ends the task even with attempts left", async () => {
    const store = new MemoryStore();
    const { task } = await withContext(store, async (ctx) => ctx.fail("bad", { retryable: false }), { maxAttempts: 3 });
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ retryable: false });
  });

  it("fail(Error) → handler_error; fail(TaskError) → its own envelope and flag; fail(object) → stored as-is", async () => {
    const store = new MemoryStore();
    const a = await withContext(store, async (ctx) => ctx.fail(new TypeError("wrong type"), { retryable: false }));
    expect(a.task.error).toEqual({ type: "TypeError", code: "handler_error", message: "wrong type", retryable: false, details: {} });
    const b = await withContext(store, async (ctx) => ctx.fail(new TaskError("verdict", { code: "v" }), { retryable: true }));
    expect(b.task.status).toBe("failed");
    expect(b.task.error).toMatchObject({ code: "v", retryable: false });
    const c = await withContext(store, async (ctx) => ctx.fail({ code: "boom", extra: [1] }, { retryable: false }));
    expect(c.task.error).toEqual({ code: "boom", extra: [1] });
  });

  it("fail without a reason uses 'task failed'", async () => {
    const store = new MemoryStore();
    const { task } = await withContext(store, async (ctx) => ctx.fail(), { maxAttempts: 1 });
    expect(task.error).toMatchObject({ code: "task_error", message: "task failed" });
  });

  it("succeed with an unencodable result throws SerializationError and leaves the context unsettled", async () => {
    const store = new MemoryStore();
    const { out, task } = await withContext(store, async (ctx) => {
      const err = await ctx.succeed({ big: 1n }).catch((e: unknown) => e);
      return { err, settled: ctx.settled, retry: (await ctx.succeed({ ok: true }))?.status };
    });
    expect(out.err).toBeInstanceOf(SerializationError);
    expect(out.settled).toBe(false);
    expect(out.retry).toBe("succeeded");
    expect(task.result).toEqual({ ok: true });
  });

  it("a fail the store refuses (anything but LostLease) leaves the context unsettled: the handler's own outcome is recorded", async () => {
    const spy = spyStore();
    const refused = new Set<string>();
    // The store refuses each task's first fail, writing nothing (an argument it rejects, a database error, …).
    spy.hooks.fail = (args, next) => {
      const { taskId } = args[0] as { taskId: string };
      if (refused.has(taskId)) return next();
      refused.add(taskId);
      return Promise.reject(new InvalidArgument("error", "refused by the store"));
    };
    const caught = await withContext(spy.store, async (ctx) => {
      const err = await ctx.fail("bad").catch((e: unknown) => e);
      return { err, settled: ctx.settled };
    }, { maxAttempts: 1 });
    expect(caught.out.err).toBeInstanceOf(InvalidArgument);
    expect(caught.out.settled).toBe(false);
    // The handler caught the refusal and returned: the task completed, not left running to its lease expiry.
    expect(caught.task.status).toBe("succeeded");

    const worker = makeWorker(spy.store);
    worker.task("rethrows", async (ctx) => {
      await ctx.fail("bad");
    });
    const task = await spy.store.submit({ name: "rethrows", maxAttempts: 1 });
    void worker.run();
    const row = await waitForStatus(spy.store, task.id, ["failed"]);
    await worker.stop();
    expect(row.error).toMatchObject({ type: "InvalidArgument", code: "handler_error", message: "refused by the store" });
  });

  it("fail refuses an unknown option or a retryable that is not a boolean, before settling", async () => {
    const store = new MemoryStore();
    const { out, task } = await withContext(store, async (ctx) => {
      const unknown = await ctx.fail("x", { retry: false } as unknown as { retryable: boolean }).catch((e: unknown) => e);
      const notBoolean = await ctx.fail(new TaskError("verdict"), { retryable: "yes" } as unknown as { retryable: boolean }).catch((e: unknown) => e);
      // FailOptions.retryable is a boolean: null is not read as "retry".
      const isNull = await ctx.fail("x", { retryable: null } as unknown as { retryable: boolean }).catch((e: unknown) => e);
      return { unknown, notBoolean, isNull, settled: ctx.settled };
    }, { maxAttempts: 1 });
    expect(out.unknown).toMatchObject({ name: "InvalidArgument", argument: "retry" });
    expect((out.unknown as Error).message).toContain("'retry' is not an option of ctx.fail(reason, options); the options are retryable");
    expect(out.notBoolean).toMatchObject({ name: "InvalidArgument", argument: "retryable", message: 'ctx.fail(reason, { retryable }): retryable must be a boolean, got "yes"' });
    expect(out.isNull).toMatchObject({ name: "InvalidArgument", argument: "retryable", message: "ctx.fail(reason, { retryable }): retryable must be a boolean, got null" });
    expect(out.settled).toBe(false);
    expect(task.status).toBe("succeeded");
  });

  it("progress records fraction and message; null keeps the previous value", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) => {
      await ctx.progress(0.25, "reading");
      await ctx.progress(null, "writing");
      await ctx.progress();
      return store.get(ctx.taskId);
    });
    expect(out).toMatchObject({ progress: 0.25, message: "writing" });
  });
});

describe("ctx.submit / ctx.wait", () => {
  it("types the child from its TaskDef or explicit type arguments, never from the variable it is assigned to", () => {
    const sum = defineTask<{ x: number }, { total: number }>("math.sum");
    // Compile-time only: never called.
    const typed = async (ctx: TaskContext) => {
      // @ts-expect-error the TaskDef says the result is { total: number }, whatever the variable expects
      const wrong: Task<{ x: number }, string> = await ctx.submit(sum, { x: 1 });
      // @ts-expect-error nor the payload: the TaskDef's is { x: number }
      const wrongPayload: Task<{ y: string }, { total: number }> = await ctx.submit(sum, { x: 1 });
      const right: Task<{ x: number }, { total: number }> = await ctx.submit(sum, { x: 1 });
      const byName: Task<{ n: number }, string> = await ctx.submit<{ n: number }, string>("count", { n: 1 });
      return [wrong, wrongPayload, right, byName];
    };
    expect(typeof typed).toBe("function");
  });

  it("a child gets parent_id = this task and copies root and correlation ids", async () => {
    const store = new MemoryStore();
    const child = defineTask<{ n: number }, number>("child", { queue: "side", priority: 7, maxAttempts: 9 });
    const { out, task } = await withContext(
      store,
      async (ctx) => {
        const a = await ctx.submit(child, { n: 1 });
        const b = await ctx.submit("other", { n: 2 }, { correlationId: "mine", rootId: null, queue: "q2" });
        return { a, b };
      },
      { correlationId: "corr" },
    );
    expect(out.a).toMatchObject({
      name: "child",
      queue: "side",
      priority: 7,
      max_attempts: 9,
      parent_id: task.id,
      root_id: task.id,
      correlation_id: "corr",
      payload: { n: 1 },
    });
    expect(out.b).toMatchObject({ name: "other", queue: "q2", parent_id: task.id, correlation_id: "mine" });
    expect(out.b.root_id).toBe(out.b.id);
  });

  it("given a TaskDef, a keyed child whose key holds another name's task is refused (KeyHeldByOtherTask), by name returned", async () => {
    const store = new MemoryStore();
    const held = await store.submit({ name: "text.upper", key: "order-42" });
    const sum = defineTask<{ x: number }, number>("math.sum");
    const { out } = await withContext(store, async (ctx) => ({
      typed: await ctx.submit(sum, { x: 1 }, { key: "order-42", conflict: "reuse" }).catch((err: unknown) => err),
      byName: await ctx.submit("math.sum", { x: 1 }, { key: "order-42", conflict: "reuse" }),
    }));
    expect(out.typed).toBeInstanceOf(KeyHeldByOtherTask);
    expect(out.typed).toMatchObject({ key: "order-42", taskName: "math.sum", task: { id: held.id, name: "text.upper" } });
    expect(out.byName.id).toBe(held.id);
  });

  it("explicit parentId, rootId and correlationId options win over the running task's", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, (ctx) =>
      ctx.submit("kid", {}, { parentId: "task_adopter", rootId: "task_root", correlationId: null }),
    );
    expect(out).toMatchObject({ parent_id: "task_adopter", root_id: "task_root", correlation_id: null });
  });

  it("a grandchild keeps the tree's root", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 3 });
    worker.task("level", async (ctx, p: { depth: number }) => {
      if (p.depth < 2) {
        const kid = await ctx.submit("level", { depth: p.depth + 1 });
        return (await ctx.wait(kid.id, { timeoutMs: 3000, pollMs: 5 })).result;
      }
      return { root: ctx.rootId, parent: ctx.parentId };
    });
    const top = await store.submit({ name: "level", payload: { depth: 0 } });
    void worker.run();
    const row = await waitForStatus(store, top.id, ["succeeded"]);
    expect((row.result as { root: string }).root).toBe(top.id);
    expect((row.result as { parent: string }).parent).not.toBe(top.id);
  });

  it("wait returns the terminal row whatever its status", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) => {
      const kid = await store.submit({ name: "unhandled" });
      setTimeout(() => void store.cancel(kid.id), 30);
      return ctx.wait(kid.id, { pollMs: 5, maxPollMs: 10 });
    });
    expect(out.status).toBe("canceled");
  });

  it("wait throws TaskTimeout at the deadline, with the row read then", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) => {
      const kid = await store.submit({ name: "unhandled" });
      const started = Date.now();
      const err = await ctx.wait(kid.id, { timeoutMs: 60, pollMs: 10 }).catch((e: unknown) => e);
      return { err, kid, tookMs: Date.now() - started };
    });
    expect(out.err).toBeInstanceOf(TaskTimeout);
    expect((out.err as TaskTimeout).taskId).toBe(out.kid.id);
    expect((out.err as TaskTimeout).task?.status).toBe("queued");
    expect(out.tookMs).toBeGreaterThanOrEqual(55);
  });

  it("wait on an unknown id times out with no row", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) =>
      ctx.wait("task_00000000000000000000000000", { timeoutMs: 20, pollMs: 5 }).catch((e: unknown) => e),
    );
    expect(out).toBeInstanceOf(TaskTimeout);
    expect((out as TaskTimeout).task).toBeNull();
  });

  it("wait refuses an unknown option, as client.wait does", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) =>
      ctx.wait(ctx.taskId, { timeout: 5 } as unknown as { timeoutMs: number }).catch((e: unknown) => e),
    );
    expect(out).toMatchObject({ name: "InvalidArgument", argument: "timeout" });
    expect((out as Error).message).toContain("'timeout' is not an option of ctx.wait(id, options)");
  });

  it("wait polls with growing intervals (§7)", async () => {
    const spy = spyStore();
    const { out } = await withContext(spy.store, async (ctx) => {
      const kid = await spy.store.submit({ name: "unhandled" });
      const before = spy.callsOf("taskDoneWake").length;
      await ctx.wait(kid.id, { timeoutMs: 200, pollMs: 10, maxPollMs: 25 }).catch(() => null);
      return spy.callsOf("taskDoneWake").slice(before).map((c) => c.args[1]);
    });
    expect(out.slice(0, 4)).toEqual([10, 15, 22, 25]);
  });

  it("wait stops when the context's signal aborts", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxRunMs: 40 });
    let err: unknown = null;
    worker.task("waiter", async (ctx) => {
      const kid = await store.submit({ name: "unhandled" });
      err = await ctx.wait(kid.id, { timeoutMs: 5000, pollMs: 10 }).catch((e: unknown) => e);
    });
    await store.submit({ name: "waiter", maxAttempts: 1 });
    void worker.run();
    await waitFor(() => err !== null);
    expect(err).toBeInstanceOf(LostLease);
  });
});

describe("ctx.canceled", () => {
  it("reads the row when no heartbeat has shown the flag", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { leaseMs: 30_000, heartbeatIntervalMs: 10_000 });
    const answers: boolean[] = [];
    worker.task("x", async (ctx) => {
      answers.push(await ctx.canceled());
      await spy.store.cancel(ctx.taskId);
      answers.push(await ctx.canceled());
      answers.push(await ctx.canceled());
      return "ignored";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    const row = await waitForStatus(spy.store, task.id, ["canceled"]);
    expect(answers).toEqual([false, true, true]);
    // The third answer came from the cache.
    expect(spy.callsOf("get").filter((c) => c.args[0] === task.id).length).toBeGreaterThanOrEqual(2);
    expect(row.result).toBeNull();
  });

  it("a missing row counts as canceled", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) => {
      await store.complete({ taskId: ctx.taskId, workerId: ctx.workerId });
      await store.purge({ olderThanMs: 0 });
      await delay(2);
      await store.purge({ olderThanMs: 0 });
      return ctx.canceled();
    });
    expect(out).toBe(true);
  });
});

describe("ctx.succeedIn", () => {
  it("throws UnsupportedBackend without transactionalComplete", async () => {
    const store = new MemoryStore();
    const { out } = await withContext(store, async (ctx) => ctx.succeedIn(async () => 1).catch((e: unknown) => e));
    expect(out).toBeInstanceOf(UnsupportedBackend);
    expect((out as UnsupportedBackend).feature).toBe("succeedIn");
  });

  it("calls the store's completeIn, fenced with the attempt; a repeat returns null", async () => {
    const inner = new MemoryStore();
    const seen: OwnedInput[] = [];
    const spy = spyStore(inner, {
      capabilities: { pushWakeups: false, transactionalComplete: true, databaseClock: false },
      completeIn: async <R>(input: OwnedInput, fn: (tx: unknown) => Promise<R>) => {
        seen.push(input);
        const result = await fn("tx-handle");
        const task = await inner.complete({ ...input, result });
        return { task, result };
      },
    } as Partial<TaskStore>);
    const { out, task } = await withContext(spy.store, async (ctx) => {
      const first = await ctx.succeedIn(async (tx) => ({ wrote: tx }));
      const second = await ctx.succeedIn(async () => "again");
      return { first, second };
    });
    expect(out.first?.result).toEqual({ wrote: "tx-handle" });
    expect(out.second).toBeNull();
    expect(seen).toEqual([{ taskId: task.id, workerId: task.worker_id, attempt: 1 }]);
    expect(task.status).toBe("succeeded");
    expect(task.result).toEqual({ wrote: "tx-handle" });
  });

  it("a failing transaction leaves the context unsettled, so the call's end settles it", async () => {
    const inner = new MemoryStore();
    const spy = spyStore(inner, {
      capabilities: { pushWakeups: false, transactionalComplete: true, databaseClock: false },
      completeIn: async <R>(_input: OwnedInput, fn: (tx: unknown) => Promise<R>) => {
        await fn(null);
        throw new Error("rolled back");
      },
    } as Partial<TaskStore>);
    const { out, task } = await withContext(spy.store, async (ctx) => {
      const err = await ctx.succeedIn(async () => 1).catch((e: unknown) => e);
      return { err, settled: ctx.settled };
    });
    expect((out.err as Error).message).toBe("rolled back");
    expect(out.settled).toBe(false);
    expect(task.status).toBe("succeeded");
  });
});

describe("cancel reaches the handler", () => {
  /** Stands in for fetch(url, { signal }): settles when the signal aborts, with its reason, as fetch does. */
  function fetchLike(signal: AbortSignal): Promise<never> {
    return new Promise((_resolve, reject) => {
      if (signal.aborted) reject(signal.reason as Error);
      signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
    });
  }

  it("a heartbeat that sees the cancel flag aborts ctx.signal with a TaskCanceled; ctx.canceled() keeps working", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { leaseMs: 1000, heartbeatIntervalMs: 10 });
    const started = gate();
    const seen: { reason?: unknown; canceled?: boolean; lost?: boolean } = {};
    worker.task("download", async (ctx) => {
      started.open();
      try {
        await fetchLike(ctx.signal);
      } catch (err) {
        seen.reason = err;
      }
      seen.canceled = await ctx.canceled();
      seen.lost = ctx.lostLease;
      return "stopped";
    });
    const task = await store.submit({ name: "download" });
    void worker.run();
    await started.promise;
    await store.cancel(task.id);
    const row = await waitForStatus(store, task.id, ["canceled"]);
    expect(seen.reason).toBeInstanceOf(TaskCanceled);
    expect((seen.reason as TaskCanceled).taskId).toBe(task.id);
    expect(seen.canceled).toBe(true);
    expect(seen.lost).toBe(false);
    expect(row.result).toBeNull();
  });

  it("ctx.canceled() reading the flag also aborts the signal", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { leaseMs: 30_000, heartbeatIntervalMs: 10_000 });
    let reason: unknown = null;
    worker.task("x", async (ctx) => {
      await store.cancel(ctx.taskId);
      expect(ctx.signal.aborted).toBe(false);
      expect(await ctx.canceled()).toBe(true);
      reason = ctx.signal.reason;
    });
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(store, task.id, ["canceled"]);
    expect(reason).toBeInstanceOf(TaskCanceled);
  });
});
