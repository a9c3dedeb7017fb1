import { MemoryStore } from "@cairnq/conformance";
import type { PurgeInput, TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { describe, expect, it, vi } from "vitest";
import type { RetentionErrorInfo, Logger, RetentionSweeperOptions } from "../src/index.ts";
import { RetentionSweeper } from "../src/index.ts";
import { DEFAULT_RETENTION_INTERVAL_MS } from "../src/retention-sweeper.ts";
import { deferred, idsByStatus, MEMORY, PurgeProbe, SQLITE, taskIn } from "./helpers.ts";
import { describePurges } from "./purge-suite.ts";
import { clockedStore, SECOND, sweeperOf } from "./sweepers.ts";

/** Polls `condition` (real time), failing after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describePurges([MEMORY, SQLITE]);

describe("the schedule", () => {
  it("sweeps first one interval after start, not at boot, then every interval", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const probe = new PurgeProbe(new MemoryStore());
    const sweeper = sweeperOf(probe, { olderThanMs: 0, intervalMs: 60 * SECOND });
    sweeper.start();
    expect(sweeper.running).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(probe.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(60 * SECOND - 1);
    expect(probe.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(probe.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(60 * SECOND);
    expect(probe.calls).toHaveLength(2);
    await sweeper.stop();
    await vi.advanceTimersByTimeAsync(10 * 60 * SECOND);
    expect(probe.calls).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("defaults to one hour between sweeps and 1000 rows per purge", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const probe = new PurgeProbe(new MemoryStore());
    const sweeper = sweeperOf(probe, { olderThanMs: 0 });
    expect(sweeper.intervalMs).toBe(DEFAULT_RETENTION_INTERVAL_MS);
    expect(sweeper.intervalMs).toBe(3_600_000);
    expect(sweeper.limit).toBe(1000);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(3_600_000 - 1);
    expect(probe.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(probe.calls).toHaveLength(1);
    expect(probe.calls[0]?.input.limit).toBe(1000);
  });

  it("start() is idempotent: one schedule however often it is called", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const probe = new PurgeProbe(new MemoryStore());
    const sweeper = sweeperOf(probe, { olderThanMs: 0, intervalMs: SECOND });
    sweeper.start();
    sweeper.start();
    sweeper.start();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(SECOND);
    expect(probe.calls).toHaveLength(1);
  });

  it("unrefs its sleep, so a started sweeper never keeps the process alive", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const sweeper = sweeperOf(new MemoryStore(), { olderThanMs: 0, intervalMs: 60 * SECOND });
    sweeper.start();
    const timers = spy.mock.results.map((r) => r.value as NodeJS.Timeout).filter((t) => typeof t === "object");
    spy.mockRestore();
    expect(timers.length).toBeGreaterThan(0);
    expect(timers.every((t) => !t.hasRef())).toBe(true);
  });

  it("stop() interrupts the sleep at once", async () => {
    const probe = new PurgeProbe(new MemoryStore());
    const sweeper = sweeperOf(probe, { olderThanMs: 0, intervalMs: 3_600_000 });
    sweeper.start();
    const started = performance.now();
    await sweeper.stop();
    expect(performance.now() - started).toBeLessThan(500);
    expect(sweeper.running).toBe(false);
    expect(probe.calls).toHaveLength(0);
  });

  it("stop() waits for the purge in flight and starts no further batch", async () => {
    const { store, advance } = await clockedStore();
    for (let i = 0; i < 30; i += 1) await taskIn(store, { status: "succeeded" });
    await advance(SECOND);
    const probe = new PurgeProbe(store);
    const gate = deferred();
    probe.gate = gate.promise;
    const sweeper = sweeperOf(probe, { olderThanMs: 0, intervalMs: 5, limit: 10 });
    sweeper.start();
    await until(() => probe.inFlight === 1);
    let stopped = false;
    const stopping = sweeper.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stopped).toBe(false);
    expect(sweeper.running).toBe(false);
    gate.resolve();
    await stopping;
    expect(probe.inFlight).toBe(0);
    expect(probe.calls).toHaveLength(1);
    // The store can now close safely: nothing of the sweeper touches it again.
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(probe.calls).toHaveLength(1);
    expect((await idsByStatus(store)).succeeded).toHaveLength(20);
  });

  it("stop() also waits for a direct sweep() in flight, which resolves with the rows deleted so far", async () => {
    const { store, advance } = await clockedStore();
    for (let i = 0; i < 30; i += 1) await taskIn(store, { status: "succeeded" });
    await advance(SECOND);
    const probe = new PurgeProbe(store);
    const gate = deferred();
    probe.gate = gate.promise;
    const sweeper = sweeperOf(probe, { olderThanMs: 0, limit: 10 });
    const sweeping = sweeper.sweep();
    await until(() => probe.inFlight === 1);
    const stopping = sweeper.stop();
    gate.resolve();
    await stopping;
    expect(probe.inFlight).toBe(0);
    expect(await sweeping).toBe(10);
  });

  it("stop() is idempotent and safe to call concurrently or before start()", async () => {
    const sweeper = sweeperOf(new MemoryStore(), { olderThanMs: 0, intervalMs: 5 });
    await sweeper.stop();
    sweeper.start();
    await Promise.all([sweeper.stop(), sweeper.stop()]);
    await sweeper.stop();
    expect(sweeper.running).toBe(false);
  });

  it("a stopped sweeper can sweep on demand and be started again", async () => {
    const { store, advance } = await clockedStore();
    const probe = new PurgeProbe(store);
    const sweeper = sweeperOf(probe, { olderThanMs: 0, intervalMs: 5 });
    sweeper.start();
    await sweeper.stop();
    await taskIn(store, { status: "canceled" });
    await advance(SECOND);
    expect(await sweeper.sweep()).toBe(1);
    sweeper.start();
    expect(sweeper.running).toBe(true);
    const calls = probe.calls.length;
    await until(() => probe.calls.length > calls);
  });
});

describe("errors", () => {
  it("a failing purge abandons the rest of that sweep; sweep() rejects with the store's error", async () => {
    const { store, advance } = await clockedStore();
    for (let i = 0; i < 10; i += 1) await taskIn(store, { status: "succeeded" });
    await taskIn(store, { status: "failed" });
    await advance(SECOND);
    const probe = new PurgeProbe(store);
    const boom = new Error("database is locked");
    let call = 0;
    probe.onPurge = () => {
      call += 1;
      if (call === 2) throw boom;
    };
    const sweeper = sweeperOf(probe, { olderThanMs: { succeeded: 0, failed: 0 }, limit: 3 });
    await expect(sweeper.sweep()).rejects.toBe(boom);
    expect(call).toBe(2);
    expect(probe.calls.map((c) => c.input.status)).toEqual(["succeeded"]);
    expect((await idsByStatus(store)).failed).toHaveLength(1);
    // The next sweep starts from the first rule again.
    expect(await sweeper.sweep()).toBe(8);
  });

  it("rejects when the store's purge does not return an array", async () => {
    const sweeper = sweeperOf({ purge: async () => 3 as unknown as string[] }, { olderThanMs: 0 });
    await expect(sweeper.sweep()).rejects.toThrow(/store.purge returned number, expected an array/);
  });

  it("a scheduled failure goes to onError with the rule, and the schedule continues", async () => {
    const { store, advance } = await clockedStore();
    const probe = new PurgeProbe(store);
    const boom = new Error("disk I/O error");
    probe.failWith = boom;
    const seen: [unknown, RetentionErrorInfo][] = [];
    const warnings: Record<string, unknown>[] = [];
    const logger: Logger = { warn: (_msg, fields) => warnings.push(fields ?? {}) };
    const sweeper = sweeperOf(probe, {
      olderThanMs: [{ queue: "emails", olderThanMs: 0 }],
      intervalMs: 5,
      onError: (err, info) => seen.push([err, info]),
      logger,
    });
    sweeper.start();
    await until(() => seen.length >= 2);
    expect(seen[0]).toEqual([boom, { rule: { queue: "emails", olderThanMs: 0 }, deleted: 0 }]);
    expect(warnings[0]).toMatchObject({ queue: "emails", status: null, name: null, olderThanMs: 0, deleted: 0, error: boom });
    await taskIn(store, { queue: "emails", status: "succeeded" });
    await advance(SECOND);
    probe.failWith = undefined;
    await until(() => probe.calls.some((c) => c.deleted === 1));
    expect(sweeper.running).toBe(true);
  });

  it("a throwing onError never stops retention", async () => {
    const probe = new PurgeProbe(new MemoryStore());
    probe.failWith = new Error("down");
    let hookCalls = 0;
    const errors: Record<string, unknown>[] = [];
    const sweeper = sweeperOf(probe, {
      olderThanMs: 0,
      intervalMs: 5,
      onError: () => {
        hookCalls += 1;
        throw new Error("the hook itself is broken");
      },
      logger: { error: (_msg, fields) => errors.push(fields ?? {}) },
    });
    sweeper.start();
    await until(() => hookCalls >= 3);
    expect((errors[0]?.error as Error).message).toBe("the hook itself is broken");
    probe.failWith = undefined;
    await until(() => probe.calls.length >= 1);
    expect(sweeper.running).toBe(true);
  });

  it("an async onError that rejects leaves no unhandled rejection", async () => {
    const probe = new PurgeProbe(new MemoryStore());
    probe.failWith = new Error("down");
    let hookCalls = 0;
    const errors: unknown[] = [];
    const sweeper = sweeperOf(probe, {
      olderThanMs: 0,
      intervalMs: 5,
      onError: async () => {
        hookCalls += 1;
        throw new Error("async hook rejected");
      },
      logger: { error: (_msg, fields) => errors.push(fields?.error) },
    });
    sweeper.start();
    await until(() => hookCalls >= 2 && errors.length >= 2);
    expect((errors[0] as Error).message).toBe("async hook rejected");
  });

  it("without a logger or onError, a failed sweep is written to stderr; logger: null silences it; onError alone takes it over", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const failing = (): PurgeProbe => {
        const probe = new PurgeProbe(new MemoryStore());
        probe.failWith = new Error("disk I/O error");
        return probe;
      };
      const loud = failing();
      const byDefault = sweeperOf(loud, { olderThanMs: [{ queue: "emails", olderThanMs: 0 }], intervalMs: 5 });
      byDefault.start();
      await until(() => lines.some((line) => line.includes("retention sweep failed")));
      await byDefault.stop();
      const line = lines.find((l) => l.includes("retention sweep failed"))!;
      expect(line).toMatch(/^cairnq warn: retention sweep failed; .*"queue":"emails".*"error":\{"name":"Error","message":"disk I\/O error"\}/);
      lines.length = 0;

      // Silenced, and with onError taking the failures: nothing reaches stderr (each sweeper fails several times).
      const quiet = failing();
      let quietCalls = 0;
      quiet.onPurge = () => (quietCalls += 1);
      sweeperOf(quiet, { olderThanMs: 0, intervalMs: 5, logger: null }).start();
      const hooked = failing();
      let hookCalls = 0;
      sweeperOf(hooked, { olderThanMs: 0, intervalMs: 5, onError: () => (hookCalls += 1) }).start();
      await until(() => quietCalls >= 3 && hookCalls >= 3);
      expect(lines.filter((l) => l.startsWith("cairnq "))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });

  it("a scheduled failure without onError is only logged, and retention goes on", async () => {
    const probe = new PurgeProbe(new MemoryStore());
    probe.failWith = new Error("down");
    let attempts = 0;
    probe.onPurge = () => (attempts += 1);
    const sweeper = sweeperOf(probe, { olderThanMs: 0, intervalMs: 5 });
    sweeper.start();
    await until(() => attempts >= 3);
    expect(sweeper.running).toBe(true);
  });
});

describe("logging", () => {
  it("logs info after a sweep that deleted rows and debug after an empty one", async () => {
    const { store, advance } = await clockedStore();
    await taskIn(store, { status: "succeeded" });
    await advance(SECOND);
    const lines: [string, string, Record<string, unknown> | undefined][] = [];
    const logger: Logger = {
      debug: (msg, fields) => lines.push(["debug", msg, fields]),
      info: (msg, fields) => lines.push(["info", msg, fields]),
    };
    const sweeper = sweeperOf(store, { olderThanMs: 0, logger });
    await sweeper.sweep();
    await sweeper.sweep();
    expect(lines.map(([level]) => level)).toEqual(["info", "debug"]);
    expect(lines[0]?.[1]).toBe("retention sweep deleted 1 finished tasks");
    expect(lines[0]?.[2]).toMatchObject({ deleted: 1, batches: 1 });
    expect(typeof lines[0]?.[2]?.durationMs).toBe("number");
  });

  it("a throwing logger never breaks a sweep", async () => {
    const { store, advance } = await clockedStore();
    await taskIn(store, { status: "succeeded" });
    await advance(SECOND);
    const sweeper = sweeperOf(store, {
      olderThanMs: 0,
      logger: {
        info: () => {
          throw new Error("logger down");
        },
      },
    });
    expect(await sweeper.sweep()).toBe(1);
  });
});

describe("construction", () => {
  const store = new MemoryStore();
  const invalid: [string, unknown, string, RegExp][] = [
    ["no options", undefined, "options", /needs an options object/],
    ["options that are not an object", 86_400_000, "options", /needs an options object.*got 86400000/],
    ["no olderThanMs", {}, "olderThanMs", /got undefined/],
    ["a negative cutoff", { olderThanMs: -1 }, "olderThanMs", /from 0 to 3153600000000/],
    ["a cutoff past MAX_DELAY_MS (100 years)", { olderThanMs: 1e20 }, "olderThanMs", /MAX_DELAY_MS, 100 years.*got 100000000000000000000/],
    ["a non-finite cutoff", { olderThanMs: Number.POSITIVE_INFINITY }, "olderThanMs", /finite/],
    ["a map key that is not terminal", { olderThanMs: { queued: 1 } }, "olderThanMs.queued", /not a terminal status/],
    ["a rule status that is not terminal", { olderThanMs: [{ status: "running", olderThanMs: 1 }] }, "olderThanMs[0].status", /terminal status/],
    ["an empty rule list", { olderThanMs: [] }, "olderThanMs", /empty/],
    ["limit 0", { olderThanMs: 0, limit: 0 }, "limit", /integer ≥ 1.*got 0/],
    ["a fractional intervalMs", { olderThanMs: 0, intervalMs: 1.5 }, "intervalMs", /integer number of milliseconds ≥ 1, got 1.5/],
    ["a fractional limit", { olderThanMs: 0, limit: 2.5 }, "limit", /got 2.5/],
    ["intervalMs 0", { olderThanMs: 0, intervalMs: 0 }, "intervalMs", /≥ 1, got 0/],
    ["a negative intervalMs", { olderThanMs: 0, intervalMs: -5 }, "intervalMs", /got -5/],
    ["a non-finite intervalMs", { olderThanMs: 0, intervalMs: Number.NaN }, "intervalMs", /got NaN/],
    ["an onError that is not a function", { olderThanMs: 0, onError: "log" }, "onError", /must be a function/],
    ["a logger that is not an object", { olderThanMs: 0, logger: "console" }, "logger", /or null to silence it; got "console"/],
    ["an unknown option", { olderThanMs: 0, interval: 5 }, "interval", /^'interval' is not an option of new RetentionSweeper\(store, options\) \(did you mean 'intervalMs'\?\); the options are olderThanMs, intervalMs, limit, onError, logger$/],
  ];

  it.each(invalid)("rejects %s with InvalidArgument naming the field", (_label, options, argument, message) => {
    let thrown: unknown;
    try {
      new RetentionSweeper(store, options as RetentionSweeperOptions);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidArgument);
    expect((thrown as InvalidArgument).argument).toBe(argument);
    expect((thrown as Error).message).toMatch(message);
  });

  it("rejects a store without purge", () => {
    expect(() => new RetentionSweeper({} as TaskStore, { olderThanMs: 0 })).toThrow(/needs a TaskStore/);
    expect(() => new RetentionSweeper(null as unknown as TaskStore, { olderThanMs: 0 })).toThrow(InvalidArgument);
  });

  it("exposes the validated settings", () => {
    const sweeper = new RetentionSweeper(store, { olderThanMs: { failed: 10 }, intervalMs: 50, limit: 7 });
    expect(sweeper.store).toBe(store);
    expect(sweeper.rules).toEqual([{ status: "failed", olderThanMs: 10 }]);
    expect(sweeper.intervalMs).toBe(50);
    expect(sweeper.limit).toBe(7);
    expect(sweeper.running).toBe(false);
  });
});

describe("RetentionSweeper.from (the client's retention option)", () => {
  it("builds a sweeper over the given store from options", () => {
    const store = new MemoryStore();
    const sweeper = RetentionSweeper.from(store, { olderThanMs: 5, limit: 3 });
    expect(sweeper).toBeInstanceOf(RetentionSweeper);
    expect(sweeper.store).toBe(store);
    expect(sweeper.limit).toBe(3);
    expect(sweeper.running).toBe(false);
  });

  it("returns a sweeper instance as is", () => {
    const own = new RetentionSweeper(new MemoryStore(), { olderThanMs: 5 });
    expect(RetentionSweeper.from(new MemoryStore(), own)).toBe(own);
  });

  it("validates options like the constructor", () => {
    expect(() => RetentionSweeper.from(new MemoryStore(), { olderThanMs: [] })).toThrow(InvalidArgument);
  });

  it("recognises a sweeper from another copy of the package by its brand", () => {
    class OtherCopy {}
    Object.defineProperty(OtherCopy.prototype, Symbol.for("cairnq.retention.RetentionSweeper"), { value: true });
    const foreign = new OtherCopy();
    expect(foreign).toBeInstanceOf(RetentionSweeper);
    expect(RetentionSweeper.from(new MemoryStore(), foreign as unknown as RetentionSweeper)).toBe(foreign);
    expect({}).not.toBeInstanceOf(RetentionSweeper);
    expect(null).not.toBeInstanceOf(RetentionSweeper);
  });

  it("the purge input is exactly the rule plus limit", async () => {
    const calls: PurgeInput[] = [];
    const sweeper = RetentionSweeper.from({ purge: async (input) => (calls.push(input ?? {}), []) }, { olderThanMs: [{ status: "canceled", olderThanMs: 9 }], limit: 4 });
    await sweeper.sweep();
    expect(calls).toEqual([{ status: "canceled", olderThanMs: 9, limit: 4 }]);
  });
});
