import { describe, expect, it, vi } from "vitest";
import { CairnQError, LostLease } from "@cairnq/protocol";
import type { WorkerEventName, WorkerEvents } from "../src/index.js";
import { Worker } from "../src/index.js";
import { delay, gate, MemoryStore, spyStore, trackTimers, waitFor, waitForStatus } from "./support/helpers.js";
import { FAST, makeWorker } from "./support/worker.js";

describe("run / stop", () => {
  it("run() resolves after stop(); running reflects the state; run twice returns the same promise", async () => {
    const worker = makeWorker(new MemoryStore());
    expect(worker.running).toBe(false);
    const a = worker.run();
    const b = worker.run();
    expect(worker.running).toBe(true);
    let resolved = false;
    void a.then(() => (resolved = true));
    await delay(20);
    expect(resolved).toBe(false);
    await worker.stop();
    await a;
    await b;
    expect(resolved).toBe(true);
    expect(worker.running).toBe(false);
  });

  it("stop() before run() is a no-op; a stopped worker can run again", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    await worker.stop();
    worker.task("x", () => "ok");
    void worker.run();
    await worker.stop();
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
  });

  it("a closed worker refuses to run", async () => {
    const worker = makeWorker(new MemoryStore());
    await worker.close();
    await worker.close();
    await expect(worker.run()).rejects.toBeInstanceOf(CairnQError);
  });

  it("stop() stops claiming and drains running handlers", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 2 });
    const started = gate();
    worker.task("x", async () => {
      started.open();
      await delay(60);
      return "drained";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await started.promise;
    const claimsAtStop = spy.callsOf("claim").length;
    await worker.stop();
    expect((await spy.store.get(task.id))?.result).toBe("drained");
    const later = await spy.store.submit({ name: "x" });
    await delay(40);
    expect(spy.callsOf("claim").length).toBe(claimsAtStop);
    expect((await spy.store.get(later.id))?.status).toBe("queued");
  });

  it("stop() ends the idle sleep at once", async () => {
    const worker = makeWorker(new MemoryStore(), { pollIntervalMs: 5000 });
    worker.task("x", () => undefined);
    void worker.run();
    await delay(20);
    const t0 = Date.now();
    await worker.stop();
    expect(Date.now() - t0).toBeLessThan(200);
  });

  it("past stopTimeoutMs, running handlers are abandoned: signals abort, nothing is settled", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { stopTimeoutMs: 40 });
    const stopped: WorkerEvents["worker:stopped"][] = [];
    worker.on("worker:stopped", (e) => stopped.push(e));
    const started = gate();
    let reason: unknown = null;
    let lostAfter: boolean | null = null;
    const finish = gate();
    worker.task("stuck", async (ctx) => {
      started.open();
      ctx.signal.addEventListener("abort", () => (reason = ctx.signal.reason));
      await finish.promise;
      lostAfter = ctx.lostLease;
      return "too late";
    });
    const task = await spy.store.submit({ name: "stuck" });
    void worker.run();
    await started.promise;
    const t0 = Date.now();
    await worker.stop();
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(35);
    expect(took).toBeLessThan(500);
    expect(reason).toBeInstanceOf(LostLease);
    expect(stopped).toHaveLength(1);
    expect(stopped[0]).toMatchObject({ workerId: worker.workerId, abandoned: 1 });
    finish.open();
    await delay(30);
    expect(lostAfter).toBe(true);
    expect(spy.callsOf("complete")).toHaveLength(0);
    expect(spy.callsOf("fail")).toHaveLength(0);
    expect((await spy.store.get(task.id))?.status).toBe("running");
  });
});

describe("stop() with a claim in flight", () => {
  /** A worker whose first claim is held in the store until `worker:stopping`; `drawFirst` lets the store draw its rows before the hold. */
  async function stopDuringClaim(drawFirst: boolean) {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 4, stopTimeoutMs: 40 });
    const stopping: WorkerEvents["worker:stopping"][] = [];
    const stopped: WorkerEvents["worker:stopped"][] = [];
    const began = gate();
    worker.on("worker:stopping", (e) => {
      stopping.push(e);
      began.open();
    });
    worker.on("worker:stopped", (e) => stopped.push(e));
    spy.hooks.claim = async (_args, next) => {
      if (drawFirst) {
        const rows = await next();
        await began.promise;
        return rows;
      }
      await began.promise;
      return next();
    };
    const startedAfterStop: string[] = [];
    worker.task("x", async (ctx) => {
      if (stopping.length > 0) startedAfterStop.push(ctx.taskId);
      await delay(10);
      return "ran";
    });
    const tasks = await Promise.all([1, 2, 3, 4].map(() => spy.store.submit({ name: "x" })));
    void worker.run();
    await waitFor(() => spy.callsOf("claim").length === 1, 3000, "the first claim");
    await worker.stop();
    const rows = await Promise.all(tasks.map(async (t) => spy.store.get(t.id)));
    return { stopping, stopped, startedAfterStop, rows, spy };
  }

  it("a claim that had not drawn when stop() began takes nothing: no handler starts, the tasks stay queued with no attempt used", async () => {
    const { stopping, stopped, startedAfterStop, rows, spy } = await stopDuringClaim(false);
    expect(stopping).toEqual([expect.objectContaining({ inFlight: 0, claiming: 1 })]);
    expect(startedAfterStop).toEqual([]);
    expect(stopped).toEqual([expect.objectContaining({ abandoned: 0 })]);
    expect(rows.map((r) => [r?.status, r?.attempt, r?.worker_id])).toEqual(Array(4).fill(["queued", 0, null]));
    expect(spy.callsOf("claim")).toHaveLength(1);
  });

  it("rows a claim had drawn before stop() began are worked within stopTimeoutMs, like buffered ones", async () => {
    const { stopping, stopped, startedAfterStop, rows } = await stopDuringClaim(true);
    expect(stopping).toEqual([expect.objectContaining({ inFlight: 0, claiming: 1 })]);
    expect(startedAfterStop).toHaveLength(4);
    expect(stopped).toEqual([expect.objectContaining({ abandoned: 0 })]);
    expect(rows.map((r) => [r?.status, r?.result])).toEqual(Array(4).fill(["succeeded", "ran"]));
  });
});

describe("serve()", () => {
  it("stops on SIGTERM, drains, closes and removes its signal listeners", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { closeStore: true });
    const started = gate();
    worker.task("x", async () => {
      started.open();
      await delay(40);
      return "served";
    });
    const before = { int: process.listenerCount("SIGINT"), term: process.listenerCount("SIGTERM") };
    const task = await spy.store.submit({ name: "x" });
    // Read when the worker closes the store: the drain settled the task before that (a closed store answers nothing).
    let resultAtClose: unknown;
    spy.hooks.close = async (_args, next) => {
      resultAtClose = (await spy.inner.get(task.id))?.result;
      return next();
    };
    const served = worker.serve();
    await started.promise;
    expect(process.listenerCount("SIGTERM")).toBe(before.term + 1);
    process.emit("SIGTERM", "SIGTERM");
    await served;
    expect(resultAtClose).toBe("served");
    expect(process.listenerCount("SIGINT")).toBe(before.int);
    expect(process.listenerCount("SIGTERM")).toBe(before.term);
    expect(spy.callsOf("close")).toHaveLength(1);
    await expect(worker.run()).rejects.toBeInstanceOf(CairnQError);
  });

  it("a second signal abandons running handlers at once", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { stopTimeoutMs: 60_000 });
    const started = gate();
    worker.task("x", async (ctx) => {
      started.open();
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
    });
    await store.submit({ name: "x" });
    const served = worker.serve();
    await started.promise;
    process.emit("SIGINT", "SIGINT");
    await delay(10);
    process.emit("SIGINT", "SIGINT");
    const t0 = Date.now();
    await served;
    expect(Date.now() - t0).toBeLessThan(500);
  });
});

describe("errors the loop survives", () => {
  it("with prefetch 0, a throw past the dispatcher is reported with phase 'claim' and run() goes on", async () => {
    const spy = spyStore();
    const poison = new Error("row unreadable");
    let poisoned = false;
    spy.hooks.claim = async (_args, next) => {
      const rows = (await next()) as object[];
      if (poisoned || rows.length === 0) return rows;
      poisoned = true;
      // A row whose id throws: the dispatcher reads it before any per-call guard, so only the cycle's catch
      // stands between the throw and run().
      return rows.map((row) => Object.defineProperty({ ...row }, "id", { get: () => { throw poison; } }));
    };
    const reports: [unknown, unknown][] = [];
    const worker = makeWorker(spy.store, { prefetch: 0, onError: (e, i) => reports.push([e, i]) });
    worker.task("x", () => "ok");
    await spy.store.submit({ name: "x" });
    const running = worker.run();
    await waitFor(() => reports.length > 0);
    expect(reports[0]).toEqual([poison, { phase: "claim" }]);
    const next = await spy.store.submit({ name: "x" });
    await waitForStatus(spy.store, next.id, ["succeeded"]);
    expect(worker.running).toBe(true);
    await worker.stop();
    await running;
  });

  it("a claim error is reported with phase 'claim', then the loop sleeps 250 ms and retries", async () => {
    const spy = spyStore();
    let failures = 1;
    spy.hooks.claim = (_args, next) => (failures-- > 0 ? Promise.reject(new Error("database is locked")) : next());
    const reports: [unknown, unknown][] = [];
    const worker = makeWorker(spy.store, { onError: (e, i) => reports.push([e, i]) });
    worker.task("x", () => "ok");
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["succeeded"]);
    expect(reports).toHaveLength(1);
    expect(reports[0]![1]).toEqual({ phase: "claim" });
    const [first, second] = spy.callsOf("claim");
    expect(second!.atMs - first!.atMs).toBeGreaterThanOrEqual(245);
  });

  it("an onError that throws (or rejects) does not kill the loop", async () => {
    const spy = spyStore();
    let failures = 2;
    spy.hooks.claim = (_args, next) => (failures-- > 0 ? Promise.reject(new Error("boom")) : next());
    let calls = 0;
    const worker = makeWorker(spy.store, {
      onError: () => {
        calls += 1;
        if (calls === 1) throw new Error("onError is broken");
        return Promise.reject(new Error("async onError is broken")) as unknown as void;
      },
    });
    worker.task("x", () => "ok");
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["succeeded"], 3000);
    expect(calls).toBe(2);
  });

  it("a failing claimWake is reported and replaced by a plain sleep", async () => {
    const spy = spyStore();
    spy.hooks.claimWake = () => Promise.reject(new Error("listener down"));
    const reports: unknown[] = [];
    const worker = makeWorker(spy.store, { onError: (e) => reports.push(e) });
    worker.task("x", () => "ok");
    void worker.run();
    await waitFor(() => reports.length >= 2);
    const claims = spy.callsOf("claim").length;
    expect(claims).toBeGreaterThanOrEqual(2);
  });

  it("with no handlers the worker only idles (no claims)", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store);
    void worker.run();
    await delay(50);
    expect(spy.callsOf("claim")).toHaveLength(0);
    expect(spy.callsOf("claimWake").length).toBeGreaterThan(1);
    expect(spy.callsOf("claimWake")[0]!.args.slice(0, 2)).toEqual([["default"], 10]);
  });

  it("a throwing event listener and a throwing logger are ignored", async () => {
    const store = new MemoryStore();
    const logger = {
      error: vi.fn(),
      debug: () => {
        throw new Error("logger broken");
      },
    };
    const worker = makeWorker(store, { logger });
    worker.on("task:claimed", () => {
      throw new Error("listener broken");
    });
    worker.task("x", () => "ok");
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    expect(logger.error).toHaveBeenCalledWith("a worker event listener threw; ignored", expect.objectContaining({ event: "task:claimed" }));
  });
});

describe("events", () => {
  it("emits typed lifecycle events with ids and durationMs", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    const seen: { event: WorkerEventName; payload: Record<string, unknown> }[] = [];
    const names: WorkerEventName[] = ["task:claimed", "task:succeeded", "task:failed", "task:canceled", "lease:lost", "worker:stopping", "worker:stopped"];
    for (const event of names) worker.on(event, (payload) => seen.push({ event, payload: payload as unknown as Record<string, unknown> }));
    worker.task("ok", async () => {
      await delay(15);
      return 1;
    });
    worker.task("bad", () => {
      throw new Error("nope");
    });
    const ok = await store.submit({ name: "ok" });
    const bad = await store.submit({ name: "bad", maxAttempts: 1 });
    void worker.run();
    await waitForStatus(store, ok.id, ["succeeded"]);
    await waitForStatus(store, bad.id, ["failed"]);
    await worker.stop();
    const byEvent = (e: WorkerEventName) => seen.filter((s) => s.event === e).map((s) => s.payload);
    expect(byEvent("task:claimed")).toHaveLength(2);
    expect(byEvent("task:claimed").find((p) => p.taskId === ok.id)).toMatchObject({ taskId: ok.id, workerId: worker.workerId, name: "ok", queue: "default", attempt: 1 });
    const succeeded = byEvent("task:succeeded");
    expect(succeeded).toHaveLength(1);
    expect(succeeded[0]).toMatchObject({ taskId: ok.id, name: "ok", attempt: 1 });
    expect(succeeded[0]!.durationMs).toBeGreaterThanOrEqual(14);
    expect(byEvent("task:failed")[0]).toMatchObject({
      taskId: bad.id,
      retryable: true,
      willRetry: false,
      delayMs: 0,
      error: { code: "handler_error", message: "nope" },
    });
    expect(byEvent("worker:stopping")[0]).toMatchObject({ workerId: worker.workerId, inFlight: 0, claiming: 0 });
    expect(byEvent("worker:stopped")[0]).toMatchObject({ workerId: worker.workerId, abandoned: 0 });
    for (const s of seen) expect(typeof s.payload.durationMs).toBe("number");
  });

  it("off() removes a listener", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    const listener = vi.fn();
    worker.on("task:claimed", listener).off("task:claimed", listener);
    worker.task("x", () => 1);
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    expect(listener).not.toHaveBeenCalled();
  });
});

describe("retry backoff (§6)", () => {
  it("every retryable fail carries retryDelayMs(attempt, base, cap, random); non-retryable carries 0", async () => {
    const store = new MemoryStore();
    const failures: WorkerEvents["task:failed"][] = [];
    const worker = makeWorker(store, { retryBackoffMs: 10, retryBackoffMaxMs: 25, random: () => 0.999 });
    worker.on("task:failed", (e) => failures.push(e));
    worker.task("x", () => {
      throw new Error("again");
    });
    const task = await store.submit({ name: "x", maxAttempts: 4 });
    void worker.run();
    await waitForStatus(store, task.id, ["failed"]);
    // Windows [5,10), [10,20), [12,25) capped, [12,25): random → top of each window.
    expect(failures.map((f) => [f.attempt, f.delayMs, f.willRetry])).toEqual([
      [1, 9, true],
      [2, 19, true],
      [3, 24, true],
      [4, 24, false],
    ]);
  });

  it("the requeued row's run_at_ms is exactly the delay ahead", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { retryBackoffMs: 1000, random: () => 0 });
    worker.task("x", async (ctx) => {
      await ctx.fail("later");
    });
    const failed = gate();
    worker.on("task:failed", () => failed.open());
    const task = await store.submit({ name: "x" });
    void worker.run();
    await failed.promise;
    const row = (await store.get(task.id))!;
    expect(row.status).toBe("queued");
    expect(row.run_at_ms - row.updated_at_ms).toBe(500);
    expect(row.attempt).toBe(1);
  });

  it("ctx.fail with retryable false and no_handler carry 0", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { retryBackoffMs: 1000 });
    worker.task("x", (ctx) => ctx.fail("final", { retryable: false }));
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["failed"]);
    expect(spy.callsOf("fail")[0]!.args[0]).toMatchObject({ retryable: false, delayMs: 0 });
  });
});

describe("timers", () => {
  it("leaves no timer pending after close", async () => {
    const timers = trackTimers();
    try {
      const store = new MemoryStore();
      const worker = new Worker(store, { ...FAST, maxRunMs: 1000 });
      worker.task("x", async (ctx) => {
        await ctx.progress(0.5);
        await delay(30);
        return 1;
      });
      worker.task("waits", async (ctx) => {
        const kid = await store.submit({ name: "nobody" });
        await ctx.wait(kid.id, { timeoutMs: 20, pollMs: 5 }).catch(() => null);
      });
      worker.task("fails", () => {
        throw new Error("x");
      });
      const tasks = [await store.submit({ name: "x" }), await store.submit({ name: "waits" }), await store.submit({ name: "fails", maxAttempts: 1 })];
      void worker.run();
      await Promise.all(tasks.map((t) => waitForStatus(store, t.id, ["succeeded", "failed"])));
      expect(timers.pending()).toBeGreaterThan(0);
      await worker.close();
      expect(timers.pending()).toBe(0);
    } finally {
      timers.restore();
    }
  });

  it("leaves no timer pending after an abandoning stop", async () => {
    const timers = trackTimers();
    try {
      const store = new MemoryStore();
      const worker = new Worker(store, { ...FAST, stopTimeoutMs: 10, maxRunMs: 5000 });
      const started = gate();
      worker.task("stuck", async () => {
        started.open();
        await new Promise(() => {});
      });
      await store.submit({ name: "stuck" });
      void worker.run();
      await started.promise;
      await worker.close();
      expect(timers.pending()).toBe(0);
    } finally {
      timers.restore();
    }
  });
});
