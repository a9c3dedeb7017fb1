import { describe, expect, it } from "vitest";
import { InvalidArgument, RETRY_BACKOFF_DEFAULTS } from "@cairnq/protocol";
import { resolveWorkerOptions } from "../src/options.js";
import { defaultHeartbeatIntervalMs, nextPollMs, Worker } from "../src/index.js";
import { MemoryStore } from "./support/helpers.js";

describe("worker options (§8.1)", () => {
  it("applies the defaults", () => {
    const o = resolveWorkerOptions();
    expect(o).toMatchObject({
      queues: ["default"],
      concurrency: 1,
      leaseMs: 30_000,
      heartbeatIntervalMs: 10_000,
      pollIntervalMs: 500,
      claimBatch: null,
      retryBackoffMs: RETRY_BACKOFF_DEFAULTS.baseMs,
      retryBackoffMaxMs: RETRY_BACKOFF_DEFAULTS.capMs,
      maxRunMs: null,
      maxInFlightBytes: null,
      resources: {},
      onError: null,
      stopTimeoutMs: 30_000,
      closeStore: false,
    });
    expect(o.random).toBe(Math.random);
  });

  it("derives the heartbeat interval from the lease, floored at 50 ms", () => {
    expect(defaultHeartbeatIntervalMs(30_000)).toBe(10_000);
    expect(defaultHeartbeatIntervalMs(100)).toBe(50);
    expect(resolveWorkerOptions({ leaseMs: 600 }).heartbeatIntervalMs).toBe(200);
    expect(resolveWorkerOptions({ leaseMs: 600, heartbeatIntervalMs: 7 }).heartbeatIntervalMs).toBe(7);
  });

  it("clamps concurrency to at least 1 and floors it", () => {
    expect(resolveWorkerOptions({ concurrency: 0 }).concurrency).toBe(1);
    expect(resolveWorkerOptions({ concurrency: -5 }).concurrency).toBe(1);
    expect(resolveWorkerOptions({ concurrency: 2.7 }).concurrency).toBe(2);
    expect(() => resolveWorkerOptions({ concurrency: Number.NaN })).toThrow(InvalidArgument);
  });

  it("deduplicates queues", () => {
    expect(resolveWorkerOptions({ queues: ["a", "b", "a"] }).queues).toEqual(["a", "b"]);
  });

  it.each([
    ["queues", { queues: [] }],
    ["queues[0]", { queues: [""] }],
    ["leaseMs", { leaseMs: 0 }],
    ["heartbeatIntervalMs", { heartbeatIntervalMs: 1.5 }],
    ["pollIntervalMs", { pollIntervalMs: 0 }],
    ["claimBatch", { claimBatch: 0 }],
    ["retryBackoffMs", { retryBackoffMs: -1 }],
    ["maxRunMs", { maxRunMs: 0 }],
    ["maxInFlightBytes", { maxInFlightBytes: 0 }],
    ["stopTimeoutMs", { stopTimeoutMs: -1 }],
    ["resources.gpu", { resources: { gpu: 0 } }],
    ["resources", { resources: [] as unknown as Record<string, number> }],
    ["onError", { onError: "no" as unknown as () => void }],
    ["random", { random: 1 as unknown as () => number }],
  ])("rejects a bad %s", (argument, options) => {
    try {
      resolveWorkerOptions(options);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).argument).toBe(argument);
    }
  });

  it("allows retryBackoffMs 0 (backoff disabled)", () => {
    expect(resolveWorkerOptions({ retryBackoffMs: 0 }).retryBackoffMs).toBe(0);
  });

  it("grows wait intervals as §7 says", () => {
    const seq = [100];
    while (seq.length < 6) seq.push(nextPollMs(seq.at(-1)!, 500));
    expect(seq).toEqual([100, 150, 225, 337, 500, 500]);
    expect(nextPollMs(1, 500)).toBe(2);
  });
});

describe("new Worker", () => {
  it("generates one worker id per worker", () => {
    const store = new MemoryStore();
    const a = new Worker(store);
    const b = new Worker(store);
    expect(a.workerId).toMatch(/^worker_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(a.workerId).toBe(a.workerId);
    expect(a.workerId).not.toBe(b.workerId);
  });

  it("needs a store", () => {
    expect(() => new Worker(null as unknown as MemoryStore)).toThrow(InvalidArgument);
  });
});

describe("registration (§8.2)", () => {
  const worker = () => new Worker(new MemoryStore(), { resources: { gpu: 1 } });

  it("accepts a name or a TaskDef, with or without options, and chains", () => {
    const w = worker();
    expect(w.task("a", () => 1).task({ name: "b" }, { concurrency: 2 }, () => 2)).toBe(w);
    expect(w.removeTask("a")).toBe(true);
    expect(w.removeTask({ name: "b" })).toBe(true);
    expect(w.removeTask("a")).toBe(false);
  });

  it.each([
    ["name", () => worker().task("", () => 1)],
    ["handler", () => worker().task("a", {}, undefined as unknown as () => void)],
    ["handler", () => worker().task("a", undefined as unknown as () => void)],
    ["batch", () => worker().task("a", { batch: 0 }, () => undefined)],
    ["batch", () => worker().task("a", { batch: 1.5 }, () => undefined)],
    ["concurrency", () => worker().task("a", { concurrency: 0 }, () => 1)],
    ["resource", () => worker().task("a", { resource: "cpu" }, () => 1)],
    ["options", () => worker().task("a", 5 as unknown as object, () => 1)],
  ])("rejects a bad %s", (argument, register) => {
    try {
      register();
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).argument).toBe(argument);
    }
  });

  it("names the declared resources when one is missing", () => {
    expect(() => worker().task("a", { resource: "cpu" }, () => 1)).toThrow(/declared: gpu/);
  });

  it("warns through the logger when a TaskDef's queue is not claimed", () => {
    const warnings: string[] = [];
    const w = new Worker(new MemoryStore(), { queues: ["a"], logger: { warn: (m) => warnings.push(m) } });
    w.task({ name: "x", queue: "b" }, () => 1);
    w.task({ name: "y", queue: "a" }, () => 1);
    expect(warnings).toHaveLength(1);
  });
});
