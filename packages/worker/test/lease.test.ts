import { describe, expect, it } from "vitest";
import { EventLoopBlocked, LostLease } from "@cairnq/protocol";
import type { LeaseLostEvent, TaskContext, WorkerErrorInfo } from "../src/index.js";
import { blockFor, delay, gate, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

describe("heartbeat (§8.5)", () => {
  it("keeps renewing the lease of a handler that outlives it", async () => {
    const spy = spyStore();
    // A lease of 600 ms (not tens of ms): a loaded machine can hold a process off the CPU for longer than a short lease,
    // and a lease that expires for that reason gives attempt 2 whatever the heartbeat does.
    const worker = makeWorker(spy.store, { leaseMs: 600, heartbeatIntervalMs: 100 });
    worker.task("long", async () => {
      // Outlives its lease, and ends only after five beats renewed it (beats, not a time, so late timers do not matter).
      await delay(700);
      await waitFor(() => spy.callsOf("heartbeatBatch").length >= 5, 10_000, "five heartbeats");
      return "done";
    });
    const task = await spy.store.submit({ name: "long" });
    void worker.run();
    const row = await waitForStatus(spy.store, task.id, ["succeeded"]);
    expect(row.result).toBe("done");
    expect(row.attempt).toBe(1);
    const beats = spy.callsOf("heartbeatBatch");
    expect(beats.length).toBeGreaterThanOrEqual(5);
    expect(beats[0]!.args[0]).toEqual({ taskIds: [task.id], workerId: worker.workerId, leaseMs: 600 });
  });

  it("keeps beating for a claim's long call when another call of the claim returned at once (synchronously)", async () => {
    const spy = spyStore();
    // A lease of 600 ms and beats of 100 ms, so a loaded machine's stalls do not expire it: a stopped beat does.
    const worker = makeWorker(spy.store, { leaseMs: 600, heartbeatIntervalMs: 100, claimBatch: 2, concurrency: 2 });
    const beatsOf = (id: string) =>
      spy.callsOf("heartbeatBatch").filter((beat) => (beat.args[0] as { taskIds: string[] }).taskIds.includes(id));
    // The quick call comes first in the claim and ends within the dispatch, before the long call starts.
    worker.task("quick", () => null);
    worker.task("long", async (ctx) => {
      // Outlives its lease, and ends only after five beats renewed it (beats, not a time, so late timers do not matter).
      await delay(700);
      await waitFor(() => beatsOf(ctx.taskId).length >= 5, 10_000, "five heartbeats of the long call");
      return "done";
    });
    const claimed: number[] = [];
    spy.hooks.claim = async (_args, next) => {
      const rows = (await next()) as unknown[];
      claimed.push(rows.length);
      return rows;
    };
    const quick = await spy.store.submit({ name: "quick" });
    const long = await spy.store.submit({ name: "long" });
    void worker.run();
    expect((await waitForStatus(spy.store, quick.id, ["succeeded"])).attempt).toBe(1);
    const row = await waitForStatus(spy.store, long.id, ["succeeded"], 15_000);
    expect(row.result).toBe("done");
    expect(row.attempt).toBe(1);
    expect(claimed[0]).toBe(2);
    expect(beatsOf(long.id).length).toBeGreaterThanOrEqual(5);
  });

  it("the default interval is a third of the lease, at least 50 ms", () => {
    const store = new MemoryStore();
    expect(makeWorker(store, { leaseMs: 30_000, heartbeatIntervalMs: undefined }).options.heartbeatIntervalMs).toBe(10_000);
    expect(makeWorker(store, { leaseMs: 90, heartbeatIntervalMs: undefined }).options.heartbeatIntervalMs).toBe(50);
  });

  it("heartbeat errors go to onError (execute) and the beat keeps going", async () => {
    const spy = spyStore();
    const errors: WorkerErrorInfo[] = [];
    let failures = 2;
    spy.hooks.heartbeatBatch = (_args, next) => (failures-- > 0 ? Promise.reject(new Error("beat failed")) : next());
    const worker = makeWorker(spy.store, { leaseMs: 1000, heartbeatIntervalMs: 10, onError: (_e, info) => errors.push(info) });
    worker.task("x", async () => {
      // Ends after a beat past the two that failed (beats, not a time: an 80 ms sleep saw a single beat when the
      // machine held the process off the CPU for longer than that).
      await waitFor(() => spy.callsOf("heartbeatBatch").length > 2, 10_000, "a third heartbeat");
      return 1;
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["succeeded"], 15_000);
    expect(errors.slice(0, 2)).toEqual([
      { phase: "execute", taskId: task.id },
      { phase: "execute", taskId: task.id },
    ]);
    expect(spy.callsOf("heartbeatBatch").length).toBeGreaterThan(2);
  });

  it("stops beating once every context of the call is settled", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { heartbeatIntervalMs: 10 });
    worker.task("x", async (ctx) => {
      await ctx.succeed("early");
      await delay(100);
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => spy.callsOf("claim").length > 1);
    await waitForStatus(spy.store, task.id, ["succeeded"]);
    await delay(120);
    expect(spy.callsOf("heartbeatBatch")).toHaveLength(0);
  });
});

describe("cancel reaching a running handler", () => {
  it("a heartbeat records the flag; ctx.canceled() answers from it; the task ends canceled", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { leaseMs: 1000, heartbeatIntervalMs: 10 });
    const canceledEvents: string[] = [];
    worker.on("task:canceled", (e) => canceledEvents.push(e.taskId));
    const started = gate();
    let getsBefore = 0;
    let answer: boolean | null = null;
    worker.task("x", async (ctx) => {
      started.open();
      await delay(80); // several beats after the cancel below
      getsBefore = spy.callsOf("get").length;
      answer = await ctx.canceled();
      return "partial";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await started.promise;
    await spy.inner.cancel(task.id);
    const row = await waitForStatus(spy.inner, task.id, ["canceled"]);
    expect(answer).toBe(true);
    expect(spy.callsOf("get").length).toBe(getsBefore); // answered from the heartbeat's flag
    expect(row.result).toBeNull();
    expect(canceledEvents).toEqual([task.id]);
  });

  it("a handler that polls ctx.canceled() stops, and its failure also ends canceled", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { heartbeatIntervalMs: 10 });
    let loops = 0;
    worker.task("x", async (ctx) => {
      while (!(await ctx.canceled())) {
        loops += 1;
        await delay(5);
      }
      throw new Error("stopped on cancel");
    });
    const task = await store.submit({ name: "x" });
    void worker.run();
    await waitFor(() => loops > 2);
    await store.cancel(task.id);
    const row = await waitForStatus(store, task.id, ["canceled"]);
    expect(row.error).toMatchObject({ message: "stopped on cancel" });
  });
});

describe("lost lease", () => {
  it("another worker takes the expired task: the first context is lost, its writes throw locally, its return settles nothing", async () => {
    const spy = spyStore();
    const stall = gate();
    let stalled = false;
    spy.hooks.heartbeatBatch = async (_args, next) => {
      if (stalled) await stall.promise;
      return next();
    };
    const worker = makeWorker(spy.store, { leaseMs: 50, heartbeatIntervalMs: 15 });
    const lostEvents: LeaseLostEvent[] = [];
    worker.on("lease:lost", (e) => lostEvents.push(e));
    const started = gate();
    const observed = gate();
    let seen: Record<string, unknown> = {};
    worker.task("x", async (ctx) => {
      started.open();
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
      const writesBefore = spy.calls.length;
      seen = {
        lost: ctx.lostLease,
        aborted: ctx.signal.aborted,
        reason: ctx.signal.reason,
        progress: await ctx.progress(0.9).catch((e: unknown) => e),
        heartbeat: await ctx.heartbeat().catch((e: unknown) => e),
        succeed: await ctx.succeed("stale").catch((e: unknown) => e),
        fail: await ctx.fail("stale").catch((e: unknown) => e),
        storeCalls: spy.calls.length - writesBefore,
      };
      observed.open();
      return "stale";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await started.promise;
    stalled = true;
    await delay(120); // the lease (50 ms) expires while beats hang
    const [stolen] = await spy.inner.claim({ queues: ["default"], workerId: "worker_other", leaseMs: 5000 });
    expect(stolen).toMatchObject({ id: task.id, attempt: 2, worker_id: "worker_other" });
    stall.open();
    await observed.promise;
    expect(seen).toMatchObject({ lost: true, aborted: true, storeCalls: 0 });
    for (const key of ["reason", "progress", "heartbeat", "succeed", "fail"]) expect(seen[key]).toBeInstanceOf(LostLease);
    await delay(30);
    const row = await spy.store.get(task.id);
    expect(row).toMatchObject({ status: "running", worker_id: "worker_other", attempt: 2, result: null, progress: null });
    expect(spy.callsOf("complete")).toHaveLength(0);
    expect(lostEvents).toHaveLength(1);
    expect(lostEvents[0]).toMatchObject({ taskId: task.id, reason: "heartbeat", attempt: 1, workerId: worker.workerId });
    expect(lostEvents[0]!.durationMs).toBeGreaterThan(0);
  });

  it("the same worker re-claims the expired task: the older attempt is lost and cannot settle the new one", async () => {
    const spy = spyStore();
    // Attempt 1's lease (200 ms) runs out while it works.
    // The first beat never returns (and a beat in flight is never doubled), so the lease simply runs out.
    // (With 40 ms, attempt 2's own lease ran out too, on a loaded machine, between two of its 5 ms renewals.)
    spy.hooks.heartbeatBatch = () => new Promise(() => {});
    const worker = makeWorker(spy.store, { concurrency: 2, leaseMs: 200, heartbeatIntervalMs: 10 });
    const reasons: string[] = [];
    worker.on("lease:lost", (e) => reasons.push(`${e.attempt}:${e.reason}`));
    const firstDone = gate();
    const contexts: TaskContext[] = [];
    worker.task("x", async (ctx) => {
      contexts.push(ctx);
      if (ctx.attempt === 1) {
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        const err = await ctx.succeed("stale").catch((e: unknown) => e);
        expect(err).toBeInstanceOf(LostLease);
        setTimeout(() => firstDone.open(), 20);
        return "stale";
      }
      // Attempt 2 renews its own lease by hand while it waits for attempt 1's call to end.
      let waiting = true;
      void firstDone.promise.then(() => delay(20)).then(() => (waiting = false));
      while (waiting) {
        await ctx.heartbeat();
        await delay(5);
      }
      return "fresh";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    const row = await waitForStatus(spy.store, task.id, ["succeeded"]);
    expect(row).toMatchObject({ result: "fresh", attempt: 2, worker_id: worker.workerId });
    expect(contexts.map((c) => [c.attempt, c.lostLease])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(reasons).toEqual(["1:reclaimed"]);
    const completes = spy.callsOf("complete").map((c) => (c.args[0] as { attempt: number }).attempt);
    expect(completes).toEqual([2]);
  });

  it("the attempt fence stops a stale settlement even when this worker id owns a newer attempt", async () => {
    const spy = spyStore();
    // The first beat never returns (and a beat in flight is never doubled), so the lease simply runs out.
    spy.hooks.heartbeatBatch = () => new Promise(() => {});
    const worker = makeWorker(spy.store, { leaseMs: 40, heartbeatIntervalMs: 10 });
    const lost: string[] = [];
    worker.on("lease:lost", (e) => lost.push(e.reason));
    const proceed = gate();
    worker.task("x", async () => {
      await proceed.promise;
      return "stale";
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitFor(async () => (await spy.store.get(task.id))?.status === "running");
    await delay(60);
    // A newer attempt leased under the same worker id, behind the worker's back.
    const [again] = await spy.inner.claim({ queues: ["default"], workerId: worker.workerId, leaseMs: 5000 });
    expect(again?.attempt).toBe(2);
    proceed.open();
    await waitFor(() => lost.length > 0);
    expect(lost).toEqual(["write"]);
    expect(await spy.store.get(task.id)).toMatchObject({ status: "running", attempt: 2, result: null });
  });
});

describe("one heartbeat per claim", () => {
  it("renews every live task of one claim's calls with one heartbeatBatch per beat, and stops when they have all ended", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 3, leaseMs: 1000, heartbeatIntervalMs: 15 });
    // Each call ends when the test opens its gate (not after a delay): which tasks a beat covers is then
    // decided by the test, not by how late a loaded machine runs the timers.
    const gates = new Map<string, ReturnType<typeof gate>>();
    worker.task("x", async (_ctx, { tag }: { tag: string }) => {
      const g = gate();
      gates.set(tag, g);
      await g.promise;
    });
    const short = await spy.store.submit({ name: "x", payload: { tag: "short" } });
    const long = [await spy.store.submit({ name: "x", payload: { tag: "a" } }), await spy.store.submit({ name: "x", payload: { tag: "b" } })];
    const beats = () => spy.callsOf("heartbeatBatch").map((call) => [...(call.args[0] as { taskIds: string[] }).taskIds].sort());
    const all = [short.id, ...long.map((t) => t.id)].sort();
    const longIds = long.map((t) => t.id).sort();
    void worker.run();
    await waitFor(() => beats().length > 0 && gates.size === 3, 5000, "a first beat over the three running calls");
    gates.get("short")!.open();
    await waitForStatus(spy.store, short.id, ["succeeded"]);
    const beatsBefore = beats().length;
    await waitFor(() => beats().length > beatsBefore, 5000, "a beat after the short call ended");
    gates.get("a")!.open();
    gates.get("b")!.open();
    for (const task of long) await waitForStatus(spy.store, task.id, ["succeeded"]);
    const seen = beats();
    // The three calls came from one claim: every beat is one statement over the tasks still running.
    expect(seen[0]).toEqual(all);
    expect(seen[seen.length - 1]).toEqual(longIds);
    expect(seen.every((ids) => JSON.stringify(ids) === JSON.stringify(all) || JSON.stringify(ids) === JSON.stringify(longIds))).toBe(true);
    const count = seen.length;
    await delay(60);
    expect(spy.callsOf("heartbeatBatch")).toHaveLength(count);
    await worker.stop();
  });

  it("reports a loop blocked across several calls of one claim once, not once per call", async () => {
    const store = new MemoryStore();
    const reports: [unknown, WorkerErrorInfo][] = [];
    // Beats 100 ms apart, so only a gap over 200 ms reads as blocked: a loaded machine's scheduling delays
    // stay under that, and the one block below is the only report.
    const worker = makeWorker(store, { concurrency: 3, leaseMs: 2000, heartbeatIntervalMs: 100, onError: (e, i) => reports.push([e, i]) });
    let blocked = false;
    worker.task("cpu", async () => {
      await delay(5);
      if (!blocked) {
        blocked = true;
        blockFor(250); // > 2 × interval, while all three calls run
      }
      return "ok";
    });
    const tasks = [await store.submit({ name: "cpu" }), await store.submit({ name: "cpu" }), await store.submit({ name: "cpu" })];
    void worker.run();
    for (const task of tasks) await waitForStatus(store, task.id, ["succeeded"]);
    const reported = reports.filter(([e]) => e instanceof EventLoopBlocked);
    expect(reported).toHaveLength(1);
    expect(tasks.map((t) => t.id)).toContain((reported[0] as [unknown, WorkerErrorInfo])[1].taskId);
  });
});

describe("EventLoopBlocked", () => {
  it("is reported when a beat runs more than an interval late, while the lease still holds", async () => {
    const store = new MemoryStore();
    const reports: [unknown, WorkerErrorInfo][] = [];
    // Beats 100 ms apart (a gap over 200 ms reads as blocked), so scheduling delays on a loaded machine add no report.
    const worker = makeWorker(store, { leaseMs: 2000, heartbeatIntervalMs: 100, onError: (e, i) => reports.push([e, i]) });
    worker.task("cpu", async () => {
      await delay(5);
      blockFor(250); // > 2 × interval
      await delay(30);
      return "ok";
    });
    const task = await store.submit({ name: "cpu" });
    void worker.run();
    const row = await waitForStatus(store, task.id, ["succeeded"]);
    expect(row.attempt).toBe(1);
    const blocked = reports.filter(([e]) => e instanceof EventLoopBlocked);
    expect(blocked).toHaveLength(1);
    const [err, info] = blocked[0]! as [EventLoopBlocked, WorkerErrorInfo];
    expect(info).toEqual({ phase: "execute", taskId: task.id });
    expect(err.intervalMs).toBe(100);
    expect(err.leaseMs).toBe(2000);
    expect(err.lateMs).toBeGreaterThan(100);
  });

  it("is reported at the call's end when the handler blocked and returned before any beat", async () => {
    const store = new MemoryStore();
    const reports: unknown[] = [];
    const worker = makeWorker(store, { leaseMs: 2000, heartbeatIntervalMs: 100, onError: (e) => reports.push(e) });
    worker.task("cpu", () => {
      blockFor(250); // > 2 × interval, with no beat before the call ends
      return "ok";
    });
    const task = await store.submit({ name: "cpu" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    expect(reports.filter((e) => e instanceof EventLoopBlocked)).toHaveLength(1);
  });

  it("is not reported for a handler that only waits", async () => {
    const store = new MemoryStore();
    const reports: unknown[] = [];
    // Beats 200 ms apart, so only a gap over 400 ms reads as blocked: a loaded machine's scheduling delays stay under
    // that, where they did not under 40 ms. The wait (500 ms) still outlasts that threshold counted from the call's start.
    const worker = makeWorker(store, { leaseMs: 2000, heartbeatIntervalMs: 200, onError: (e) => reports.push(e) });
    worker.task("io", async () => {
      await delay(500);
    });
    const task = await store.submit({ name: "io" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    expect(reports).toEqual([]);
  });
});
