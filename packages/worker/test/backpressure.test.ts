/** The worker's `maxQueueDepth` (§5.6): the gate it installs on the store gates child submits from handlers. */
import { describe, expect, it, vi } from "vitest";
import type { QueueDepthGate, Task } from "@cairnq/protocol";
import { CairnQError, InvalidArgument, QueueFull } from "@cairnq/protocol";
import { BackpressureGateCore } from "@cairnq/protocol/sdk";
import { resolveWorkerOptions } from "../src/options.js";
import { Worker } from "../src/index.js";
import { MemoryStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

describe("maxQueueDepth", () => {
  it("installs a gate on the store: a child submit to a full queue rejects with QueueFull, enqueueing nothing", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxQueueDepth: { kids: 1 }, maxQueueWaitMs: 0 });
    expect(store.queueDepthGate).toBeInstanceOf(BackpressureGateCore);
    let outcome: { first: Task; second: unknown; other: Task } | null = null;
    worker.task("parent", async (ctx) => {
      const first = await ctx.submit("kid", {}, { queue: "kids" });
      const second = await ctx.submit("kid", {}, { queue: "kids", key: "second" }).catch((e: unknown) => e);
      // Only the named queue is gated.
      const other = await ctx.submit("kid", {}, { queue: "elsewhere" });
      outcome = { first, second, other };
    });
    const parent = await store.submit({ name: "parent" });
    void worker.run();
    await waitForStatus(store, parent.id, ["succeeded"]);
    expect(outcome!.first).toMatchObject({ queue: "kids", parent_id: parent.id });
    expect(outcome!.second).toBeInstanceOf(QueueFull);
    expect(outcome!.second).toMatchObject({ queue: "kids", maxDepth: 1 });
    expect(outcome!.other.queue).toBe("elsewhere");
    expect(await store.list({ queue: "kids" })).toHaveLength(1);
    expect(await store.getByKey("second")).toBeNull();
  });

  it("makes a child submit wait for headroom, then go through once the queue drains", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxQueueDepth: 1, queuePollIntervalMs: 5 });
    let second: Task | null = null;
    worker.task("parent", async (ctx) => {
      await ctx.submit("kid", { n: 1 }, { queue: "kids" });
      second = await ctx.submit("kid", { n: 2 }, { queue: "kids" });
    });
    const parent = await store.submit({ name: "parent" });
    void worker.run();
    await waitFor(async () => (await store.list({ queue: "kids" })).length === 1, 3000, "the first child");
    const [first] = await store.list({ queue: "kids" });
    await new Promise((resolve) => setTimeout(resolve, 30));
    // The queue is full, so the second child is still waiting.
    expect(second).toBeNull();
    await store.cancel(first!.id);
    await waitForStatus(store, parent.id, ["succeeded"]);
    expect(second).toMatchObject({ queue: "kids", status: "queued", payload: { n: 2 } });
  });

  it("keeps a gate already on the store (one gate per store), warning that its own limit does not apply", async () => {
    const store = new MemoryStore();
    const other: QueueDepthGate = { acquire: async () => {} };
    store.queueDepthGate = other;
    const warn = vi.fn();
    const worker = makeWorker(store, { maxQueueDepth: 5, logger: { warn } });
    expect(store.queueDepthGate).toBe(other);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toMatch(/already has a queue-depth gate/);
    await worker.close();
    expect(store.queueDepthGate).toBe(other);
  });

  it("installs nothing without a limit, or with a map that names no queue", () => {
    const store = new MemoryStore();
    new Worker(store);
    expect(store.queueDepthGate).toBeNull();
    new Worker(store, { maxQueueDepth: {} });
    expect(store.queueDepthGate).toBeNull();
  });

  it("close() wakes a child submit still waiting (it rejects, nothing enqueued) and uninstalls the gate", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxQueueDepth: { kids: 1 }, queuePollIntervalMs: 5_000, stopTimeoutMs: 20 });
    let error: unknown = null;
    worker.task("parent", async (ctx) => {
      await ctx.submit("kid", {}, { queue: "kids" });
      error = await ctx.submit("kid", {}, { queue: "kids" }).catch((e: unknown) => e);
    });
    await store.submit({ name: "parent" });
    void worker.run();
    await waitFor(async () => (await store.list({ queue: "kids" })).length === 1, 3000, "the first child");
    await worker.close();
    await waitFor(() => error !== null, 3000, "the waiting submit to reject");
    expect(error).toBeInstanceOf(CairnQError);
    expect((error as Error).message).toMatch(/^the worker was closed while a submit waited for headroom on queue 'kids'/);
    expect(store.queueDepthGate).toBeNull();
    expect(await store.list({ queue: "kids" })).toHaveLength(1);
  });

  it("leaves a gate installed by someone else after it in place on close", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { maxQueueDepth: 3 });
    const later: QueueDepthGate = { acquire: async () => {} };
    store.queueDepthGate = later;
    await worker.close();
    expect(store.queueDepthGate).toBe(later);
  });
});

describe("maxQueueDepth options", () => {
  it("default to no limit, 600000 ms of waiting and a 250 ms first sleep", () => {
    expect(resolveWorkerOptions()).toMatchObject({ maxQueueDepth: null, maxQueueWaitMs: 600_000, queuePollIntervalMs: 250 });
    expect(resolveWorkerOptions({ maxQueueDepth: { a: 2 }, maxQueueWaitMs: 0, queuePollIntervalMs: 1 })).toMatchObject({
      maxQueueDepth: { a: 2 },
      maxQueueWaitMs: 0,
      queuePollIntervalMs: 1,
    });
  });

  it.each([
    ["maxQueueDepth", { maxQueueDepth: 0 }],
    ["maxQueueDepth", { maxQueueDepth: null as unknown as number }],
    ["maxQueueDepth", { maxQueueDepth: [5] as unknown as number }],
    ["maxQueueDepth.kids", { maxQueueDepth: { kids: 1.5 } }],
    ["maxQueueWaitMs", { maxQueueWaitMs: -1 }],
    ["queuePollIntervalMs", { maxQueueDepth: 5, queuePollIntervalMs: 0 }],
  ])("rejects a bad %s at construction, installing nothing", (argument, options) => {
    const store = new MemoryStore();
    let error: unknown;
    try {
      new Worker(store, options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe(argument);
    expect(store.queueDepthGate).toBeNull();
  });
});
