import { describe, expect, it, vi } from "vitest";
import type { CompleteInput, Task, TaskRef } from "@cairnq/protocol";
import { EventLoopBlocked, LostLease, SerializationError, TaskError } from "@cairnq/protocol";
import type { WorkerErrorInfo } from "../src/index.js";
import { delay, gate, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

describe("settlement table (§8.4)", () => {
  it("return → complete with the return value as result", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("add", (_ctx, p: { a: number; b: number }) => ({ sum: p.a + p.b }));
    const task = await store.submit({ name: "add", payload: { a: 2, b: 3 } });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["succeeded"]);
    expect(row.result).toEqual({ sum: 5 });
    expect(row.progress).toBe(1);
    expect(row.worker_id).toBe(worker.workerId);
    expect(row.attempt).toBe(1);
  });

  it("returning undefined stores a NULL result", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("noop", () => undefined);
    const task = await store.submit({ name: "noop" });
    void worker.run();
    expect((await waitForStatus(store, task.id, ["succeeded"])).result).toBeNull();
  });

  it("LostLease thrown → nothing written; the task is left to lease expiry", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store);
    let ran = false;
    worker.task("x", (ctx) => {
      ran = true;
      throw new LostLease(ctx.taskId);
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => ran);
    await delay(50);
    expect(spy.callsOf("complete")).toHaveLength(0);
    expect(spy.callsOf("fail")).toHaveLength(0);
    const row = await spy.store.get(task.id);
    expect(row?.status).toBe("running");
  });

  it("TaskError thrown → its envelope and its retryable (default false)", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("x", () => {
      throw new TaskError("bad input", { code: "bad_input", details: { field: "url" } });
    });
    const task = await store.submit({ name: "x", maxAttempts: 3 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(row.error).toEqual({ type: "TaskError", code: "bad_input", message: "bad input", retryable: false, details: { field: "url" } });
    expect(row.attempt).toBe(1);
  });

  it("retryable TaskError → requeued until attempts run out", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    let runs = 0;
    worker.task("x", () => {
      runs += 1;
      throw new TaskError("flaky", { retryable: true, code: "flaky" });
    });
    const task = await store.submit({ name: "x", maxAttempts: 2 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(runs).toBe(2);
    expect(row.attempt).toBe(2);
    expect(row.error).toMatchObject({ code: "flaky", retryable: true });
  });

  it("other Error → retryable handler_error with the error's name and message", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("x", () => {
      throw new RangeError("out of range");
    });
    const task = await store.submit({ name: "x", maxAttempts: 1 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(row.error).toEqual({ type: "RangeError", code: "handler_error", message: "out of range", retryable: true, details: {} });
  });

  it("other Error with attempts left → queued again", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    const attempts: number[] = [];
    worker.task("x", (ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) throw new Error("first time fails");
      return "ok";
    });
    const task = await store.submit({ name: "x" });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["succeeded"]);
    expect(attempts).toEqual([1, 2]);
    expect(row.result).toBe("ok");
    // The last error is kept on a later success (§4).
    expect(row.error).toMatchObject({ code: "handler_error", message: "first time fails" });
  });

  it("thrown plain object → handler_error, type from its name, retryable", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("x", () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the settlement of thrown non-Errors is what is tested
      throw { name: "Oops", message: "plain object" };
    });
    const task = await store.submit({ name: "x", maxAttempts: 1 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(row.error).toEqual({ type: "Oops", code: "handler_error", message: "plain object", retryable: true, details: {} });
  });

  it("thrown primitive → TaskError-shaped envelope, retryable", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("x", () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the settlement of thrown non-Errors is what is tested
      throw "just a string";
    });
    const task = await store.submit({ name: "x", maxAttempts: 1 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(row.error).toEqual({ type: "TaskError", code: "task_error", message: "just a string", retryable: true, details: {} });
  });

  it("maxRunMs exceeded → contexts lose their lease (signal aborted), then a retryable handler_timeout fail", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxRunMs: 40 });
    let seen: { aborted: boolean; lost: boolean; reason: unknown } | null = null;
    let progressError: unknown = null;
    worker.task("slow", async (ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
      seen = { aborted: ctx.signal.aborted, lost: ctx.lostLease, reason: ctx.signal.reason };
      progressError = await ctx.progress(0.5).catch((err: unknown) => err);
      return "too late";
    });
    const task = await store.submit({ name: "slow", maxAttempts: 1 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(row.error).toMatchObject({ type: "HandlerTimeout", code: "handler_timeout", retryable: true });
    await waitFor(() => seen !== null);
    expect(seen).toMatchObject({ aborted: true, lost: true });
    expect(seen!.reason).toBeInstanceOf(LostLease);
    expect(progressError).toBeInstanceOf(LostLease);
    expect((await store.get(task.id))?.status).toBe("failed");
  });

  it("handler_timeout with attempts left requeues the task", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxRunMs: 30 });
    const attempts: number[] = [];
    worker.task("slow", async (ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) await delay(200);
      return ctx.attempt;
    });
    const task = await store.submit({ name: "slow", maxAttempts: 2 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["succeeded"]);
    expect(row.result).toBe(2);
    expect(row.error).toMatchObject({ code: "handler_timeout" });
  });

  it("an unregistered name → permanent no_handler fail, without heartbeat", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store);
    worker.task("gone", () => "never");
    // Handlers change while the claim is in flight: the claimed row has no handler by dispatch time.
    spy.hooks.claim = async (_args, next) => {
      const rows = await next();
      worker.removeTask("gone");
      return rows;
    };
    const task = await spy.store.submit({ name: "gone", maxAttempts: 3 });
    void worker.run();
    const row = await waitForStatus(spy.store, task.id, ["failed"]);
    expect(row.error).toMatchObject({ type: "NoHandler", code: "no_handler", retryable: false });
    expect((row.error as { message: string }).message).toContain("gone");
    expect(row.attempt).toBe(1);
    expect(spy.callsOf("heartbeatBatch")).toHaveLength(0);
    const fail = spy.callsOf("fail")[0]?.args[0];
    expect(fail).toMatchObject({ retryable: false, delayMs: 0, attempt: 1 });
  });

  it("a result complete cannot encode → permanent unserializable_result fail", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("x", () => ({ n: Number.NaN }));
    const task = await store.submit({ name: "x", maxAttempts: 3 });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["failed"]);
    expect(row.error).toMatchObject({ type: "SerializationError", code: "unserializable_result", retryable: false });
    expect((row.error as { message: string }).message).toContain("result.n");
    expect(row.attempt).toBe(1);
  });

  it("LostLease from the worker's complete marks the context lost", async () => {
    const spy = spyStore();
    const store = spy.store;
    // The first beat never returns (and a beat in flight is never doubled), so the lease simply runs out.
    spy.hooks.heartbeatBatch = () => new Promise(() => {});
    const worker = makeWorker(store, { leaseMs: 30, heartbeatIntervalMs: 10 });
    const lost: string[] = [];
    worker.on("lease:lost", (e) => lost.push(e.reason));
    let ctxRef: { lostLease: boolean } | null = null;
    worker.task("x", async (ctx) => {
      ctxRef ??= ctx;
      await delay(80);
      return "late";
    });
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => lost.length > 0);
    expect(lost).toEqual(["write"]);
    expect(ctxRef!.lostLease).toBe(true);
    const row = await store.get(task.id);
    expect(row?.result).toBeNull();
  });

  it("LostLease from the worker's fail of a throwing handler marks the context lost (lease:lost, reason write), not onError", async () => {
    const spy = spyStore();
    const onError = vi.fn();
    // The first beat never returns (and a beat in flight is never doubled), so the lease simply runs out.
    spy.hooks.heartbeatBatch = () => new Promise(() => {});
    const worker = makeWorker(spy.store, { leaseMs: 30, heartbeatIntervalMs: 10, onError });
    const lost = vi.fn();
    worker.on("lease:lost", lost);
    worker.task("x", async () => {
      await delay(80);
      throw new Error("late failure");
    });
    await spy.store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => spy.callsOf("fail").length > 0);
    await delay(20);
    // A 10 ms beat on a loaded machine may be reported late (EventLoopBlocked); the LostLease must not reach onError.
    expect(onError.mock.calls.filter(([err]) => !(err instanceof EventLoopBlocked))).toEqual([]);
    // The first attempt's: the task is recovered and claimed again as attempt 2, whose lease runs out as well.
    const firstAttempt = lost.mock.calls.map(([e]) => e as { reason: string; attempt: number }).filter((e) => e.attempt === 1);
    expect(firstAttempt.map((e) => e.reason)).toEqual(["write"]);
  });

  it("LostLease from the worker's fail at maxRunMs is a lease loss too (lease:lost, reason write)", async () => {
    const spy = spyStore();
    // The first beat never returns (and a beat in flight is never doubled), so the lease simply runs out.
    spy.hooks.heartbeatBatch = () => new Promise(() => {});
    const worker = makeWorker(spy.store, { leaseMs: 30, heartbeatIntervalMs: 10, maxRunMs: 80 });
    const lost: string[] = [];
    // The first attempt's: the task is recovered and claimed again as attempt 2, whose lease runs out as well.
    worker.on("lease:lost", (e) => {
      if (e.attempt === 1) lost.push(e.reason);
    });
    worker.task("x", () => delay(300));
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => spy.callsOf("fail").length > 0);
    await waitFor(() => lost.length > 0);
    expect(lost).toEqual(["write"]);
    // Nothing was written: the expired attempt's fail matched nothing (the task is recovered, not failed by it).
    expect((await spy.store.get(task.id))?.error).toBeNull();
  });

  it("a failure too large for the store (SerializationError from fail, e.g. MySQL's StatementTooLarge) is recorded cut down, by a throw and by ctx.fail", async () => {
    const spy = spyStore();
    // A store whose statements hold at most 100 KB, as MySQL's max_allowed_packet bounds them: nothing is written.
    spy.hooks.fail = (args, next) =>
      JSON.stringify((args[0] as { error: unknown }).error).length > 100_000
        ? Promise.reject(new SerializationError("error", "the statement carrying it would be too large"))
        : next();
    const errors: unknown[] = [];
    const worker = makeWorker(spy.store, { onError: (err) => errors.push(err) });
    const big = "x".repeat(200_000);
    worker.task("throws", () => {
      throw new TypeError(big);
    });
    let failed: unknown = "not called";
    worker.task("fails", async (ctx) => {
      failed = await ctx.fail(new TaskError(big, { code: "too_big", retryable: true }));
      return "ignored";
    });
    const thrown = await spy.store.submit({ name: "throws", maxAttempts: 1 });
    const explicit = await spy.store.submit({ name: "fails", maxAttempts: 1 });
    void worker.run();
    const a = await waitForStatus(spy.store, thrown.id, ["failed"]);
    const b = await waitForStatus(spy.store, explicit.id, ["failed"]);
    await worker.stop();
    expect(a.error).toMatchObject({ type: "TypeError", code: "handler_error", retryable: true, details: {} });
    expect(b.error).toMatchObject({ type: "TaskError", code: "too_big", retryable: true });
    for (const row of [a, b]) {
      const message = (row.error as { message: string }).message;
      expect(message.startsWith("x".repeat(8192) + "… (200000 characters) [not stored as given, the store refused it: cannot encode error")).toBe(true);
      expect(message.length).toBeLessThan(9000);
    }
    expect(failed).toMatchObject({ status: "failed" });
    expect(errors.filter((err) => !(err instanceof EventLoopBlocked))).toEqual([]);
  });

  it("other settlement write errors go to onError with phase execute and the task id", async () => {
    const spy = spyStore();
    const errors: [unknown, WorkerErrorInfo][] = [];
    const worker = makeWorker(spy.store, { onError: (err, info) => errors.push([err, info]) });
    spy.hooks.complete = () => Promise.reject(new Error("database is down"));
    worker.task("x", () => "ok");
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => errors.length > 0);
    expect((errors[0]![0] as Error).message).toBe("database is down");
    expect(errors[0]![1]).toEqual({ phase: "execute", taskId: task.id });
  });

  it("every owned write is fenced with the context's attempt", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store);
    worker.task("x", async (ctx) => {
      await ctx.progress(0.5, "half");
      await ctx.heartbeat();
      if (ctx.attempt === 1) throw new Error("again");
      return "done";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["succeeded"]);
    const owned = spy.calls.filter((c) => ["progress", "heartbeat", "complete", "fail"].includes(c.method));
    expect(owned.map((c) => [c.method, (c.args[0] as { attempt: number }).attempt])).toEqual([
      ["progress", 1],
      ["heartbeat", 1],
      ["fail", 1],
      ["progress", 2],
      ["heartbeat", 2],
      ["complete", 2],
    ]);
  });
});

describe("completeRef (a store declaring capabilities.completeRef)", () => {
  /** A memory store with the lighter settlement, counting which settlement the worker used. */
  class RefStore extends MemoryStore {
    override readonly capabilities = { ...new MemoryStore().capabilities, completeRef: true };
    readonly used: string[] = [];
    override async complete(input: CompleteInput): Promise<Task> {
      this.used.push("complete");
      return super.complete(input);
    }
    async completeRef(input: CompleteInput): Promise<TaskRef> {
      this.used.push(`completeRef@${String(input.attempt)}`);
      const row = await super.complete(input);
      return { id: row.id, status: row.status };
    }
  }

  it("a handler's return settles with completeRef, fenced by the attempt; its status picks task:succeeded or task:canceled", async () => {
    const store = new RefStore();
    const worker = makeWorker(store, { heartbeatIntervalMs: 10 });
    const events: [string, string][] = [];
    worker.on("task:succeeded", (e) => events.push(["succeeded", e.taskId]));
    worker.on("task:canceled", (e) => events.push(["canceled", e.taskId]));
    const release = gate();
    worker.task("x", async (_ctx, p: { wait: boolean }) => {
      if (p.wait) await release.promise;
      return "done";
    });
    const plain = await store.submit({ name: "x", payload: { wait: false } });
    void worker.run();
    expect((await waitForStatus(store, plain.id, ["succeeded"])).result).toBe("done");
    const flagged = await store.submit({ name: "x", payload: { wait: true } });
    await waitForStatus(store, flagged.id, ["running"]);
    await store.cancel(flagged.id);
    release.open();
    await waitForStatus(store, flagged.id, ["canceled"]);
    await waitFor(() => events.length === 2);
    expect(events).toEqual([
      ["succeeded", plain.id],
      ["canceled", flagged.id],
    ]);
    expect(store.used).toEqual(["completeRef@1", "completeRef@1"]);
  });

  it("ctx.succeed still uses complete: the handler gets the whole row", async () => {
    const store = new RefStore();
    const worker = makeWorker(store);
    let row: Task | null = null;
    worker.task("x", async (ctx) => {
      row = await ctx.succeed({ n: 1 });
    });
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => row !== null);
    expect(row).toMatchObject({ id: task.id, status: "succeeded", result: { n: 1 } });
    expect(store.used).toEqual(["complete"]);
  });
});
