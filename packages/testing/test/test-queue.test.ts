/**
 * What a test queue makes testable in milliseconds, on the in-memory store
 * and on SQLite: retries after their backoff, delayed tasks, leases that run
 * out, schedules, and waits — each without waiting for real time.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CairnQError, InvalidArgument, QueueFull, SchemaMismatch, TaskTimeout } from "@cairnq/protocol";
import type { TestQueue, TestQueueOptions } from "@cairnq/testing";
import { createTestQueue, MemoryStore } from "@cairnq/testing";

const START = Date.UTC(2030, 0, 1);
const MINUTE = 60_000;
const DAY = 86_400_000;

const never = (): Promise<never> => new Promise(() => {});

describe.each(["memory", "sqlite"] as const)("a test queue on the %s store", (store) => {
  let queue: TestQueue;
  const open = async (client?: TestQueueOptions["client"]): Promise<TestQueue> => {
    queue = await createTestQueue({ store, now: START, client });
    return queue;
  };

  afterEach(async () => {
    await queue.close();
  });

  it("runs a submitted task at once: call resolves with no time passing", async () => {
    const q = await open();
    q.worker().task("add", (_ctx, { a, b }: { a: number; b: number }) => a + b);
    expect(await q.client.call("add", { a: 2, b: 3 })).toBe(5);
    expect(q.clock.now()).toBe(START);
  });

  it("drain runs every due task — one after another at concurrency 1 — and reports each run once, in the order they ended", async () => {
    const q = await open();
    const order: number[] = [];
    q.worker({ concurrency: 1 }).task("step", (_ctx, { n }: { n: number }) => {
      order.push(n);
    });
    // The first submit starts the worker, so some of these run before drain() is called: they are reported all the same.
    // The clock stands still, so all five are due at the same millisecond: priorities fix their order.
    const ids: string[] = [];
    for (let n = 0; n < 5; n += 1) ids.push((await q.client.submit("step", { n }, { priority: -n })).id);
    const { ran, running } = await q.drain();
    expect(ran.map((r) => r.taskId)).toEqual(ids);
    expect(ran.every((r) => r.outcome === "succeeded" && r.attempt === 1 && r.durationMs === 0)).toBe(true);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(running).toEqual([]);
    expect((await q.drain()).ran).toEqual([]);
  });

  it("retries a failed handler after its backoff: advance past it and attempt 2 runs", async () => {
    const q = await open();
    // random: () => 0 pins the jittered backoff to its lower bound: 500 ms after attempt 1 at retryBackoffMs 1000.
    const worker = q.worker({ retryBackoffMs: 1000, random: () => 0 });
    worker.task("flaky", (ctx) => {
      if (ctx.attempt === 1) throw new Error("the first try fails");
      return { attempt: ctx.attempt };
    });
    const task = await q.client.submit("flaky");
    const first = await q.drain();
    expect(first.ran).toMatchObject([{ taskId: task.id, attempt: 1, outcome: "retrying", error: { message: "the first try fails" } }]);
    expect(await q.client.get(task.id)).toMatchObject({ status: "queued", run_at_ms: START + 500 });

    expect((await q.advance(499)).ran).toEqual([]);
    const second = await q.advance(1);
    expect(second.ran).toMatchObject([{ taskId: task.id, attempt: 2, outcome: "succeeded", endedAtMs: START + 500 }]);
    expect(await q.client.get(task.id)).toMatchObject({ status: "succeeded", attempt: 2, result: { attempt: 2 } });
  });

  it("runs every retry that falls due within one advance, each at its own time", async () => {
    const q = await open();
    q.worker({ retryBackoffMs: 1000, random: () => 0 }).task("doomed", () => {
      throw new Error("always");
    });
    const task = await q.client.submit("doomed", {}, { maxAttempts: 3 });
    const { ran } = await q.advance(MINUTE);
    // Backoffs of 500 ms after attempt 1 and 1000 ms after attempt 2.
    expect(ran.map((r) => [r.attempt, r.outcome, r.endedAtMs - START])).toEqual([
      [1, "retrying", 0],
      [2, "retrying", 500],
      [3, "failed", 1500],
    ]);
    expect(await q.client.get(task.id)).toMatchObject({ status: "failed", attempt: 3 });
  });

  it("runs a task delayed by a day only once a day has passed", async () => {
    const q = await open();
    q.worker().task("reminder", () => "sent");
    const task = await q.client.submit("reminder", {}, { runAtDelayMs: DAY });
    expect((await q.drain()).ran).toEqual([]);
    expect((await q.advance(DAY - 1)).ran).toEqual([]);
    const { ran } = await q.advance(1);
    expect(ran).toMatchObject([{ taskId: task.id, outcome: "succeeded", endedAtMs: START + DAY }]);
  });

  it("lets another worker recover a task whose lease ran out: a worker that stops with stopTimeoutMs 0 leaves it running, as a crashed one would", async () => {
    const q = await open();
    const leaseMs = 30_000;
    const first = q.worker({ leaseMs, stopTimeoutMs: 0, logger: null });
    first.task("stuck", () => never());
    const task = await q.client.submit("stuck");
    const claimed = await q.drain();
    expect(claimed.ran).toEqual([]);
    expect(claimed.running).toMatchObject([{ taskId: task.id, attempt: 1, workerId: first.workerId }]);

    // The stop deadline (0 ms) lets go of the handler without settling it and stops its heartbeats.
    await first.stop();
    expect(await q.client.get(task.id)).toMatchObject({ status: "running", worker_id: first.workerId, lease_until_ms: START + leaseMs });

    const second = q.worker({ leaseMs });
    second.task("stuck", (ctx) => `recovered on attempt ${ctx.attempt}`);
    expect((await q.advance(leaseMs - 1)).ran).toEqual([]);
    const { ran, running } = await q.advance(1);
    expect(ran).toMatchObject([
      { taskId: task.id, attempt: 1, workerId: first.workerId, outcome: "lost" },
      { taskId: task.id, attempt: 2, workerId: second.workerId, outcome: "succeeded", endedAtMs: START + leaseMs },
    ]);
    expect(running).toEqual([]);
    expect(await q.client.get(task.id)).toMatchObject({ status: "succeeded", attempt: 2, result: "recovered on attempt 2" });
  });

  it("a live worker keeps renewing the lease of a handler that never returns, until maxRunMs ends it", async () => {
    const q = await open();
    const worker = q.worker({ leaseMs: 30_000, maxRunMs: 10 * MINUTE, retryBackoffMs: 0 });
    worker.task("slow", { concurrency: 1 }, (ctx) => (ctx.attempt === 1 ? never() : "done"));
    const task = await q.client.submit("slow");
    const before = await q.advance(10 * MINUTE - 1);
    expect(before.ran).toEqual([]);
    // Renewed by heartbeats every 10 s of virtual time: the lease never ran out.
    expect(await q.client.get(task.id)).toMatchObject({ status: "running", attempt: 1 });
    expect((await q.client.get(task.id))?.lease_until_ms).toBeGreaterThan(q.clock.now());
    const { ran } = await q.advance(1);
    expect(ran.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, "retrying"],
      [2, "succeeded"],
    ]);
    expect(ran[0]?.error).toMatchObject({ code: "handler_timeout" });
  });

  it("submits one task per minute of virtual time for worker.schedule(name, { everyMs: 60_000 })", async () => {
    const q = await open();
    const worker = q.worker();
    const ranAt: number[] = [];
    worker.task("tick", () => {
      ranAt.push(q.clock.now());
    });
    worker.schedule("tick", { everyMs: MINUTE });
    await q.advance(5 * MINUTE);
    const slots = [0, 1, 2, 3, 4, 5].map((i) => START + i * MINUTE);
    expect(ranAt).toEqual(slots);
    const tasks = await q.client.list({ name: "tick", limit: 100 });
    expect(tasks.map((t) => t.run_at_ms).sort((a, b) => a - b)).toEqual(slots);
    expect(tasks.every((t) => t.status === "succeeded")).toBe(true);
    expect(await q.client.getByKey(`cairnq:schedule:tick:${START + 3 * MINUTE}`)).toMatchObject({ run_at_ms: START + 3 * MINUTE });
  });

  it("client.wait and call resolve on the virtual clock, and time out only when it has moved past their deadline", async () => {
    const q = await open();
    q.worker().task("later", () => "done");
    const delayed = await q.client.submit("later", {}, { runAtDelayMs: DAY });
    const waited = q.client.wait(delayed.id, { timeoutMs: 2 * DAY });
    const called = q.client.call("later", {}, { runAtDelayMs: DAY, waitTimeoutMs: 2 * DAY });
    await q.advance(DAY);
    expect(await waited).toMatchObject({ id: delayed.id, status: "succeeded" });
    expect(await called).toBe("done");

    const orphan = await q.client.submit("nobody.handles.this");
    let outcome: unknown = "pending";
    const timing = q.client.wait(orphan.id, { timeoutMs: 5000 }).then(
      () => "resolved",
      (err: unknown) => err,
    );
    void timing.then((value) => (outcome = value));
    await q.advance(4999);
    expect(outcome).toBe("pending");
    await q.advance(1);
    expect(await timing).toBeInstanceOf(TaskTimeout);
  });

  it("a handler's ctx.wait for its child resolves with no time passing", async () => {
    const q = await open();
    const worker = q.worker({ concurrency: 2 });
    worker.task("child", (_ctx, { n }: { n: number }) => n * 2);
    worker.task("parent", async (ctx) => {
      const child = await ctx.submit("child", { n: 21 });
      return (await ctx.wait(child.id)).result;
    });
    expect(await q.client.call("parent")).toBe(42);
  });

  it("holds a rate-limited name to its window, claiming the next one when the window ends", async () => {
    const q = await open();
    q.worker({ concurrency: 4 }).task("api", { rateLimit: { max: 1, perMs: MINUTE } }, () => "ok");
    for (let i = 0; i < 3; i += 1) await q.client.submit("api", { i });
    expect((await q.drain()).ran.map((r) => r.endedAtMs - START)).toEqual([0]);
    expect((await q.advance(2 * MINUTE)).ran.map((r) => r.endedAtMs - START)).toEqual([MINUTE, 2 * MINUTE]);
  });

  it("drain reports a handler waiting on the test's own promise as running, and picks up after it", async () => {
    const q = await open();
    let release: (value: string) => void = () => {};
    const gate = new Promise<string>((resolve) => (release = resolve));
    q.worker().task("gated", () => gate);
    const task = await q.client.submit("gated");
    expect((await q.drain()).running).toMatchObject([{ taskId: task.id, attempt: 1 }]);
    release("opened");
    const { ran, running } = await q.drain();
    expect(ran).toMatchObject([{ taskId: task.id, outcome: "succeeded" }]);
    expect(running).toEqual([]);
  });

  /** How a promise stands now: what it resolved with, the class of what it rejected with, or "pending". */
  const state = async (promise: Promise<unknown>): Promise<unknown> => {
    const pending = Symbol("pending");
    const settled = await Promise.race([promise.catch((err: unknown) => (err as Error).constructor.name), new Promise((resolve) => setImmediate(resolve, pending))]);
    return settled === pending ? "pending" : settled;
  };

  it("a submit the maxQueueDepth gate holds waits on the virtual clock: QueueFull once advance reaches maxQueueWaitMs, not before", async () => {
    const q = await open({ maxQueueDepth: 1, maxQueueWaitMs: 1000 });
    await q.client.submit("job");
    const gated = q.client.submit("job").then((task) => task.id);
    gated.catch(() => {});
    await q.advance(999);
    expect(await state(gated)).toBe("pending");
    expect(q.clock.now()).toBe(START + 999);
    await q.advance(1);
    await expect(gated).rejects.toThrow(QueueFull);
    expect(await q.client.list({ status: "queued" })).toHaveLength(1);
  });

  it("a submit the gate holds goes through at its next probe once a worker drained the queue", async () => {
    const q = await open({ maxQueueDepth: 1, maxQueueWaitMs: 60_000 });
    const first = await q.client.submit("job", { n: 1 });
    const gated = q.client.submit("job", { n: 2 });
    q.worker().task("job", (_ctx, { n }: { n: number }) => n);
    // The drain runs the first task; the gated submit sleeps until its next probe, 250 ms (queuePollIntervalMs) of virtual time.
    const drained = await q.drain();
    expect(drained.ran).toMatchObject([{ taskId: first.id, outcome: "succeeded" }]);
    expect(await state(gated)).toBe("pending");
    const { ran } = await q.advance(250);
    const second = await gated;
    expect(second.created_at_ms).toBe(START + 250);
    expect(ran).toMatchObject([{ taskId: second.id, outcome: "succeeded", endedAtMs: START + 250 }]);
  });

  it("close() ends a submit the gate holds: it rejects with a CairnQError (that it writes nothing: conformance memory-store-close.test.ts)", async () => {
    const q = await open({ maxQueueDepth: 1 });
    await q.client.submit("job");
    const gated = q.client.submit("job");
    gated.catch(() => {});
    await q.drain();
    await q.close();
    await expect(gated).rejects.toThrow(CairnQError);
  });

  it("after close(), the client and the store reject, saying the store is closed", async () => {
    const q = await open();
    const task = await q.client.submit("job");
    await q.close();
    for (const call of [() => q.client.submit("job"), () => q.client.list({}), () => q.client.get(task.id), () => q.store.submit({ name: "job" })]) {
      await expect(call()).rejects.toThrow(expect.objectContaining({ fatal: true, message: expect.stringMatching(new RegExp(`^this ${store} store is closed`)) }));
    }
  });

  it("a cancel reaches a running handler at its next heartbeat of virtual time", async () => {
    const q = await open();
    q.worker({ leaseMs: 30_000 }).task("long", (ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error))));
    const task = await q.client.submit("long");
    await q.drain();
    await q.client.cancel(task.id);
    expect((await q.drain()).running).toHaveLength(1);
    const { ran } = await q.advance(10_000);
    expect(ran).toMatchObject([{ taskId: task.id, outcome: "canceled", endedAtMs: START + 10_000 }]);
  });

  it("close() stops a worker whose handler never returns, moving the clock through its stop deadline", async () => {
    const q = await open();
    q.worker({ stopTimeoutMs: 5000, logger: null }).task("stuck", () => never());
    await q.client.submit("stuck");
    await q.drain();
    await q.close();
    expect(q.clock.now()).toBe(START + 5000);
  });
});

describe("createTestQueue", () => {
  it("builds its store with a factory given the clock, and closes it", async () => {
    const built: MemoryStore[] = [];
    const queue = await createTestQueue({
      now: START,
      store: (clock) => {
        const store = new MemoryStore({ clock: () => clock.now() });
        built.push(store);
        return store;
      },
    });
    try {
      const task = await queue.client.submit("job", {}, { runAtDelayMs: 1000 });
      expect(await built[0]?.get(task.id)).toMatchObject({ created_at_ms: START, run_at_ms: START + 1000 });
    } finally {
      await queue.close();
    }
  });

  it("clock.set() moves the wall clock: a delayed task is due at the next drain, though no timer fired", async () => {
    const queue = await createTestQueue({ now: START });
    try {
      queue.worker().task("job", () => "ran");
      const task = await queue.client.submit("job", {}, { runAtDelayMs: DAY });
      queue.clock.set(START + DAY);
      expect((await queue.drain()).ran).toMatchObject([{ taskId: task.id, outcome: "succeeded" }]);
      expect(queue.clock.monotonicMs()).toBe(0);
    } finally {
      await queue.close();
    }
  });

  it("rejects unknown options, a bad store choice, and a clock for the client or a worker", async () => {
    await expect(createTestQueue({ stor: "memory" } as never)).rejects.toThrow(/'stor' is not an option of createTestQueue\(options\) \(did you mean 'store'\?\)/);
    await expect(createTestQueue({ store: "postgres" } as never)).rejects.toThrow(InvalidArgument);
    await expect(createTestQueue({ store: () => ({}) as never })).rejects.toThrow(/must return a TaskStore/);
    await expect(createTestQueue({ client: { clock: {} } as never })).rejects.toThrow(expect.objectContaining({ argument: "client.clock" }));
    const queue = await createTestQueue();
    try {
      expect(() => queue.worker({ clock: {} } as never)).toThrow(expect.objectContaining({ argument: "clock" }));
      expect(() => queue.worker({ concurency: 2 } as never)).toThrow(/did you mean 'concurrency'/);
    } finally {
      await queue.close();
    }
  });

  it("advance refuses a string or a span past MAX_DELAY_MS, saying what it got; the clock stays put", async () => {
    const queue = await createTestQueue({ now: START });
    try {
      queue.worker().task("job", () => "ran");
      await expect(queue.advance("10" as never)).rejects.toThrow(/^advance\(ms\) takes an integer number of milliseconds from 0 to 3153600000000 \(MAX_DELAY_MS.*got the string "10"$/);
      await expect(queue.advance(2 ** 53)).rejects.toThrow(expect.objectContaining({ argument: "ms", message: expect.stringMatching(/got 9007199254740992, which is over that bound$/) }));
      expect(queue.clock.now()).toBe(START);
      expect((await queue.drain()).ran).toEqual([]);
    } finally {
      await queue.close();
    }
  });

  it("after close(), drain, advance and worker() throw: the queue cannot run again", async () => {
    const queue = await createTestQueue();
    await queue.close();
    await queue.close();
    await expect(queue.drain()).rejects.toThrow(/closed/);
    await expect(queue.advance(1)).rejects.toThrow(/closed/);
    expect(() => queue.worker()).toThrow(/closed/);
  });

  it("drain rejects with the error that stopped a worker for good", async () => {
    const mismatch = new SchemaMismatch("this database belongs to another installation");
    const queue = await createTestQueue({
      store: (clock) => {
        const store = new MemoryStore({ clock: () => clock.now() });
        store.claim = () => Promise.reject(mismatch);
        return store;
      },
    });
    try {
      queue.worker({ logger: null }).task("job", () => "never runs");
      await expect(queue.drain()).rejects.toBe(mismatch);
    } finally {
      await queue.close();
    }
  });
});
