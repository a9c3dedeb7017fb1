import { CairnQError, InvalidArgument, QueueFull } from "@cairnq/protocol";
import { MAX_GRANT, normalizeMaxQueueDepth } from "@cairnq/protocol/sdk";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BackpressureGate, CairnQ } from "../src/index.js";
import { claimOne, delay, isPendingAfter, MemoryStore, RecordingStore } from "./support.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("the gate installed by the client", () => {
  it("is installed on the store only when maxQueueDepth is set", () => {
    const plain = new MemoryStore();
    new CairnQ(plain);
    expect(plain.queueDepthGate).toBeNull();
    const gated = new MemoryStore();
    new CairnQ(gated, { maxQueueDepth: 5 });
    expect(gated.queueDepthGate).toBeInstanceOf(BackpressureGate);
  });

  it("waits while the queue is full and resumes once headroom appears", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 2, queuePollIntervalMs: 5 });
    await client.submit("job");
    await client.submit("job");
    const third = client.submit("job");
    expect(await isPendingAfter(third, 30)).toBe(true);
    expect((await client.stats("default")).default?.queued).toBe(2);
    // Running tasks do not count: claiming one frees a slot.
    await claimOne(store);
    const task = await third;
    expect(task.status).toBe("queued");
    expect((await client.stats("default")).default).toMatchObject({ queued: 2, running: 1 });
  });

  it("rejects with QueueFull at the deadline having enqueued nothing", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 40, queuePollIntervalMs: 5 });
    await client.submit("job", {}, { queue: "emails" });
    const started = performance.now();
    const error = await client.submit("job", { n: 2 }, { queue: "emails", key: "second" }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeGreaterThanOrEqual(39);
    expect(error).toBeInstanceOf(QueueFull);
    expect(error).toMatchObject({ queue: "emails", maxDepth: 1 });
    expect((error as QueueFull).waitedMs).toBeGreaterThanOrEqual(40);
    expect(await client.list({ queue: "emails" })).toHaveLength(1);
    expect(await client.getByKey("second")).toBeNull();
  });

  it("fails at once with maxQueueWaitMs 0", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 0 });
    await client.submit("job");
    const error = await client.submit("job").catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "QueueFull", maxDepth: 1 });
    // No sleep: waitedMs is only the probe's own time.
    expect((error as QueueFull).waitedMs).toBeLessThan(100);
    expect(store.count("queueDepth")).toBe(2);
  });

  it("gates child submits made directly on the store (as a worker's ctx.submit does)", async () => {
    const store = new MemoryStore();
    new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 0 });
    await store.submit({ name: "child" });
    await expect(store.submit({ name: "child", parentId: "task_x" })).rejects.toBeInstanceOf(QueueFull);
  });

  it("gates keyed submits too, even one that would reuse", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 0 });
    await client.submit("job", {}, { key: "k" });
    await expect(client.submit("job", {}, { key: "k" })).rejects.toBeInstanceOf(QueueFull);
  });

  it("in map form gates only the named queues, each with its own limit", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: { emails: 1, reports: 2 }, maxQueueWaitMs: 0 });
    for (let i = 0; i < 5; i += 1) await client.submit("job", { i }, { queue: "other" });
    await client.submit("job"); // the default queue is not named either
    expect(store.count("queueDepth")).toBe(0);
    await client.submit("send", {}, { queue: "emails" });
    await expect(client.submit("send", {}, { queue: "emails" })).rejects.toMatchObject({ queue: "emails", maxDepth: 1 });
    await client.submit("build", {}, { queue: "reports" });
    await client.submit("build", {}, { queue: "reports" });
    await expect(client.submit("build", {}, { queue: "reports" })).rejects.toMatchObject({ queue: "reports", maxDepth: 2 });
    expect(store.calls.filter((c) => c.method === "queueDepth").map((c) => c.args)).toContainEqual(["reports", 2]);
  });

  it("takes a TaskDef's queue into account", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: { llm: 1 }, maxQueueWaitMs: 0 });
    const def = { name: "summarize", queue: "llm" };
    await client.submit(def, {});
    await expect(client.submit(def, {})).rejects.toMatchObject({ queue: "llm" });
    await client.submit(def, {}, { queue: "llm-batch" });
  });
});

describe("grants", () => {
  it("amortize probes: one queueDepth read per 64 submits", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 1000 });
    for (let i = 0; i < 130; i += 1) await client.submit("job", { i });
    expect(MAX_GRANT).toBe(64);
    expect(store.count("queueDepth")).toBe(3);
    expect(store.calls.filter((c) => c.method === "queueDepth").map((c) => c.args)).toEqual([
      ["default", 1000],
      ["default", 1000],
      ["default", 1000],
    ]);
  });

  it("share one probe in flight between concurrent submits", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 1000 });
    await Promise.all(Array.from({ length: 50 }, (_, i) => client.submit("job", { i })));
    expect(store.count("queueDepth")).toBe(1);
    expect(await client.list({ limit: 100 })).toHaveLength(50);
  });

  it("never exceed the headroom a probe reported", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 10, maxQueueWaitMs: 0 });
    const results = await Promise.allSettled(Array.from({ length: 15 }, () => client.submit("job")));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(10);
    expect(results.filter((r) => r.status === "rejected" && r.reason instanceof QueueFull)).toHaveLength(5);
  });

  it("are kept per queue", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 100 });
    await client.submit("a", {}, { queue: "q1" });
    await client.submit("b", {}, { queue: "q2" });
    await client.submit("a", {}, { queue: "q1" });
    expect(store.calls.filter((c) => c.method === "queueDepth").map((c) => c.args[0])).toEqual(["q1", "q2"]);
  });

  it("re-probe when concurrent submits took a probe's units first, once their inserts landed", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 200 });
    const headrooms: number[] = [];
    const queueDepth = store.queueDepth.bind(store);
    store.queueDepth = async (queue, maxDepth) => {
      const headroom = await queueDepth(queue, maxDepth);
      headrooms.push(headroom);
      return headroom;
    };
    await Promise.all(Array.from({ length: 70 }, () => client.submit("job")));
    expect(headrooms).toEqual([200, 136]);
  });

  it("do not let many concurrent submits of one process overshoot the limit", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 100, maxQueueWaitMs: 0 });
    const results = await Promise.allSettled(Array.from({ length: 1000 }, () => client.submit("job")));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(100);
  });
});

describe("polling while full", () => {
  it("sleeps the poll interval, doubling, never past the deadline, then probes once more", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 100, queuePollIntervalMs: 5 });
    await client.submit("job");
    const t0 = performance.now();
    const outcome = client.submit("job").catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(200);
    const error = await outcome;
    expect(error).toBeInstanceOf(QueueFull);
    expect((error as QueueFull).waitedMs).toBe(100);
    const probes = store.calls.filter((c) => c.method === "queueDepth").slice(1).map((c) => Math.round(c.at - t0));
    expect(probes).toEqual([0, 5, 15, 35, 75, 100]);
  });

  it("doubles up to 5000 ms", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 30_000, queuePollIntervalMs: 1000 });
    await client.submit("job");
    const t0 = performance.now();
    const outcome = client.submit("job").catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(31_000);
    expect(await outcome).toBeInstanceOf(QueueFull);
    const probes = store.calls.filter((c) => c.method === "queueDepth").slice(1).map((c) => Math.round(c.at - t0));
    expect(probes).toEqual([0, 1000, 3000, 7000, 12_000, 17_000, 22_000, 27_000, 30_000]);
  });

  it("propagates a probe error to every submit sharing the probe, then probes afresh", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 5 });
    store.beforeQueueDepth = () => {
      throw new Error("database is locked");
    };
    const results = await Promise.allSettled([client.submit("job"), client.submit("job")]);
    expect(results.map((r) => r.status === "rejected" && (r.reason as Error).message)).toEqual(["database is locked", "database is locked"]);
    expect(store.count("queueDepth")).toBe(1);
    store.beforeQueueDepth = null;
    await client.submit("job");
    expect(store.count("queueDepth")).toBe(2);
  });

  it("stops waiting when the client closes: the submit rejects, nothing is enqueued", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, queuePollIntervalMs: 5_000 });
    await client.submit("job");
    const waiting = client.submit("job", { late: true }).catch((e: unknown) => e);
    await delay(10);
    await client.close();
    const error = await waiting;
    expect(error).toBeInstanceOf(CairnQError);
    expect((error as Error).message).toMatch(/client was closed while a submit waited for headroom on queue 'default'/);
    expect(store.queueDepthGate).toBeNull();
    expect(await store.list()).toHaveLength(1);
  });

  it("lets many submits wait at once without a listener-leak warning", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on("warning", onWarning);
    try {
      const store = new MemoryStore();
      const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 30, queuePollIntervalMs: 5 });
      await client.submit("job");
      const results = await Promise.allSettled(Array.from({ length: 40 }, () => client.submit("job")));
      expect(results.every((r) => r.status === "rejected" && r.reason instanceof QueueFull)).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("logs once at debug level when a submit starts waiting", async () => {
    const debug = vi.fn();
    const store = new MemoryStore();
    const client = new CairnQ(store, { maxQueueDepth: 1, maxQueueWaitMs: 20, queuePollIntervalMs: 2, logger: { debug } });
    await client.submit("job");
    await expect(client.submit("job")).rejects.toBeInstanceOf(QueueFull);
    expect(debug).toHaveBeenCalledTimes(1);
    expect(debug).toHaveBeenCalledWith("queue full, submit waiting for headroom", { queue: "default", maxDepth: 1 });
  });
});

describe("options", () => {
  it.each([
    [{ maxQueueDepth: 0 }, "maxQueueDepth"],
    [{ maxQueueDepth: -3 }, "maxQueueDepth"],
    [{ maxQueueDepth: 2.5 }, "maxQueueDepth"],
    [{ maxQueueDepth: Number.NaN }, "maxQueueDepth"],
    [{ maxQueueDepth: "100" }, "maxQueueDepth"],
    [{ maxQueueDepth: [10] }, "maxQueueDepth"],
    [{ maxQueueDepth: null }, "maxQueueDepth"],
    [{ maxQueueDepth: new Map([["a", 1]]) }, "maxQueueDepth"],
    [{ maxQueueDepth: { emails: 0 } }, "maxQueueDepth.emails"],
    [{ maxQueueDepth: { emails: "5" } }, "maxQueueDepth.emails"],
    [{ maxQueueDepth: { "": 5 } }, "maxQueueDepth"],
    [{ maxQueueDepth: 5, maxQueueWaitMs: -1 }, "maxQueueWaitMs"],
    [{ maxQueueDepth: 5, maxQueueWaitMs: Infinity }, "maxQueueWaitMs"],
    [{ maxQueueDepth: 5, queuePollIntervalMs: 0 }, "queuePollIntervalMs"],
    [{ queuePollIntervalMs: 0.5 }, "queuePollIntervalMs"],
    [{ maxQueueWaitMs: "10s" }, "maxQueueWaitMs"],
  ])("rejects %o at construction, installing nothing", (options, argument) => {
    const store = new MemoryStore();
    let error: unknown;
    try {
      new CairnQ(store, options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe(argument);
    expect((error as Error).message).toMatch(/must be/);
    expect(store.queueDepthGate).toBeNull();
  });

  it("accepts the defaults and reports them", () => {
    const gate = new BackpressureGate({ maxQueueDepth: 3 });
    expect([gate.maxQueueWaitMs, gate.queuePollIntervalMs]).toEqual([600_000, 250]);
    expect(gate.limitFor("anything")).toBe(3);
    expect(normalizeMaxQueueDepth({ a: 1, b: 2 })).toEqual(new Map([["a", 1], ["b", 2]]));
    expect(normalizeMaxQueueDepth(Object.assign(Object.create(null) as object, { a: 1 }))).toEqual(new Map([["a", 1]]));
  });

  it("rejects a missing options object", () => {
    expect(() => new BackpressureGate(undefined as never)).toThrow(InvalidArgument);
  });

  it("does not install an empty map (it would gate nothing)", () => {
    const store = new MemoryStore();
    new CairnQ(store, { maxQueueDepth: {} });
    expect(store.queueDepthGate).toBeNull();
  });

  it("warns when it replaces a gate already on the store", () => {
    const warn = vi.fn();
    const store = new MemoryStore();
    const first = new BackpressureGate({ maxQueueDepth: 1 });
    store.queueDepthGate = first;
    new CairnQ(store, { maxQueueDepth: 2, logger: { warn } });
    expect(store.queueDepthGate).not.toBe(first);
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
