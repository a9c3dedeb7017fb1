import { describe, expect, it, vi } from "vitest";
import {
  BackpressureGateCore,
  DEFAULT_MAX_QUEUE_WAIT_MS,
  DEFAULT_QUEUE_POLL_INTERVAL_MS,
  MAX_GRANT,
  MAX_QUEUE_POLL_INTERVAL_MS,
  normalizeMaxQueueDepth,
  requireRoomNow,
  resolveGateTiming,
} from "../src/backpressure-gate.js";
import type { BackpressureGateDeps, BackpressureGateOptions } from "../src/backpressure-gate.js";
import { CairnQError, InvalidArgument, QueueFull } from "../src/errors.js";
import type { TaskStore } from "../src/store.js";

/**
 * A store whose only method the gate calls, `queueDepth`, answers from a
 * script (the last answer repeats), on a fake clock that the injected sleep
 * advances. Probe times are recorded.
 */
function fakeStore(headrooms: number[]) {
  const clock = { ms: 0 };
  const probes: { queue: string; maxDepth: number; at: number }[] = [];
  const sleeps: number[] = [];
  const store = {
    async queueDepth(queue: string, maxDepth: number) {
      probes.push({ queue, maxDepth, at: clock.ms });
      return headrooms.length > 1 ? headrooms.shift()! : headrooms[0]!;
    },
  } as unknown as TaskStore;
  const deps: BackpressureGateDeps = {
    now: () => clock.ms,
    nextTurn: async () => {},
    sleep: async (ms) => {
      sleeps.push(ms);
      clock.ms += ms;
    },
  };
  const gate = (options: BackpressureGateOptions, extra: Partial<BackpressureGateDeps> = {}) => new BackpressureGateCore(options, { ...deps, ...extra });
  return { store, clock, probes, sleeps, deps, gate };
}

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("constants (§5.6)", () => {
  it("are 600000 ms of waiting, 250 ms first sleep doubling to 5000 ms, grants of 64", () => {
    expect([DEFAULT_MAX_QUEUE_WAIT_MS, DEFAULT_QUEUE_POLL_INTERVAL_MS, MAX_QUEUE_POLL_INTERVAL_MS, MAX_GRANT]).toEqual([
      600_000, 250, 5_000, 64,
    ]);
  });
});

describe("normalizeMaxQueueDepth", () => {
  it("keeps a number, and maps a plain or null-prototype object", () => {
    expect(normalizeMaxQueueDepth(3)).toBe(3);
    expect(normalizeMaxQueueDepth({ a: 1, b: 2 })).toEqual(new Map([["a", 1], ["b", 2]]));
    expect(normalizeMaxQueueDepth(Object.assign(Object.create(null) as object, { a: 1 }))).toEqual(new Map([["a", 1]]));
    expect(normalizeMaxQueueDepth({})).toEqual(new Map());
  });

  it.each([
    [0, "maxQueueDepth", /got 0$/],
    [2.5, "maxQueueDepth", /got 2.5$/],
    [Number.NaN, "maxQueueDepth", /got NaN$/],
    ["100", "maxQueueDepth", /got "100"$/],
    [[10], "maxQueueDepth", /got an array$/],
    [null, "maxQueueDepth", /got null$/],
    [new Map([["a", 1]]), "maxQueueDepth", /got a Map$/],
    [{ emails: 0 }, "maxQueueDepth.emails", /maxQueueDepth.emails must be an integer ≥ 1/],
    [{ emails: "5" }, "maxQueueDepth.emails", /got "5"$/],
    [{ "": 5 }, "maxQueueDepth", /keys must be queue names/],
  ])("rejects %o", (value, argument, message) => {
    const error = caught(() => normalizeMaxQueueDepth(value));
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe(argument);
    expect((error as Error).message).toMatch(message);
  });
});

describe("resolveGateTiming", () => {
  it("applies the defaults and keeps valid values", () => {
    expect(resolveGateTiming({})).toEqual({ maxQueueWaitMs: 600_000, queuePollIntervalMs: 250 });
    expect(resolveGateTiming({ maxQueueWaitMs: 0, queuePollIntervalMs: 1 })).toEqual({ maxQueueWaitMs: 0, queuePollIntervalMs: 1 });
  });

  it.each([
    [{ maxQueueWaitMs: -1 }, "maxQueueWaitMs"],
    [{ maxQueueWaitMs: Infinity }, "maxQueueWaitMs"],
    [{ maxQueueWaitMs: "10s" }, "maxQueueWaitMs"],
    [{ queuePollIntervalMs: 0 }, "queuePollIntervalMs"],
    [{ queuePollIntervalMs: 0.5 }, "queuePollIntervalMs"],
  ])("rejects %o", (options, argument) => {
    const error = caught(() => resolveGateTiming(options));
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe(argument);
    expect((error as Error).message).toMatch(/must be an integer/);
  });
});

describe("acquireOnce and requireRoomNow (a submit inside a caller's transaction)", () => {
  it("check the depth once and never sleep: room passes, none is QueueFull with waitedMs 0 saying why; an ungated queue is not read", async () => {
    const room = fakeStore([1]);
    await room.gate({ maxQueueDepth: { gated: 2 } }).acquireOnce("gated", room.store);
    expect(room.probes).toEqual([{ queue: "gated", maxDepth: 2, at: 0 }]);
    const full = fakeStore([0]);
    const gate = full.gate({ maxQueueDepth: { gated: 2 } });
    const err = await gate.acquireOnce("gated", full.store).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueueFull);
    expect(err).toMatchObject({ queue: "gated", maxDepth: 2, waitedMs: 0 });
    expect((err as Error).message).toMatch(/inside withTransaction a submit does not wait for room/);
    await gate.acquireOnce("free", full.store);
    expect([full.probes.length, full.sleeps]).toEqual([1, []]);
    expect(await requireRoomNow(room.store, "gated", 5)).toBe(1);
  });
});

describe("new BackpressureGateCore", () => {
  const sleep = async () => {};

  it("reports its timing and limits", () => {
    const gate = new BackpressureGateCore({ maxQueueDepth: 3 }, { sleep });
    expect([gate.maxQueueWaitMs, gate.queuePollIntervalMs]).toEqual([600_000, 250]);
    expect(gate.limitFor("anything")).toBe(3);
    expect(gate.gatesAnything).toBe(true);
    const mapped = new BackpressureGateCore({ maxQueueDepth: { emails: 5 }, maxQueueWaitMs: 10, queuePollIntervalMs: 2 }, { sleep });
    expect([mapped.limitFor("emails"), mapped.limitFor("other"), mapped.gatesAnything]).toEqual([5, null, true]);
    expect([mapped.maxQueueWaitMs, mapped.queuePollIntervalMs]).toEqual([10, 2]);
    expect(new BackpressureGateCore({ maxQueueDepth: {} }, { sleep }).gatesAnything).toBe(false);
  });

  it("rejects a missing options object", () => {
    expect(caught(() => new BackpressureGateCore(undefined as never, { sleep }))).toMatchObject({ name: "InvalidArgument", argument: "options" });
    expect(caught(() => new BackpressureGateCore("5" as never, { sleep }))).toMatchObject({ argument: "options" });
  });

  it("needs an injected sleep: the protocol starts no timer", () => {
    expect(caught(() => new BackpressureGateCore({ maxQueueDepth: 1 }, undefined as never))).toMatchObject({ argument: "sleep" });
    expect(caught(() => new BackpressureGateCore({ maxQueueDepth: 1 }, {} as never))).toMatchObject({ argument: "sleep" });
  });
});

describe("acquire", () => {
  it("lets ungated queues through without probing", async () => {
    const f = fakeStore([0]);
    const gate = f.gate({ maxQueueDepth: { emails: 1 } });
    await gate.acquire("other", f.store);
    expect(f.probes).toEqual([]);
  });

  it("amortizes probes: one queueDepth read per 64 submits, per queue", async () => {
    const f = fakeStore([1000]);
    const gate = f.gate({ maxQueueDepth: 1000 });
    for (let i = 0; i < 130; i += 1) await gate.acquire("a", f.store);
    await gate.acquire("b", f.store);
    expect(f.probes.map((p) => [p.queue, p.maxDepth])).toEqual([
      ["a", 1000],
      ["a", 1000],
      ["a", 1000],
      ["b", 1000],
    ]);
  });

  it("shares one probe in flight and never grants more than the headroom", async () => {
    const f = fakeStore([3, 0]);
    const gate = f.gate({ maxQueueDepth: 10, maxQueueWaitMs: 0 });
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => gate.acquire("q", f.store)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(3);
    expect(results.filter((r) => r.status === "rejected" && r.reason instanceof QueueFull)).toHaveLength(2);
    // One shared probe granted three; the two left over yielded a turn and probed once more, together.
    expect(f.probes).toHaveLength(2);
  });

  it("yields a macrotask turn before probing again when others took the units", async () => {
    const f = fakeStore([1, 1]);
    const nextTurn = vi.fn(async () => {});
    const gate = f.gate({ maxQueueDepth: 5 }, { nextTurn });
    await Promise.all([gate.acquire("q", f.store), gate.acquire("q", f.store)]);
    expect(nextTurn).toHaveBeenCalledTimes(1);
    expect(f.probes).toHaveLength(2);
  });

  it("yields with a 1 ms sleep when no nextTurn is injected", async () => {
    const f = fakeStore([1, 1]);
    const gate = f.gate({ maxQueueDepth: 5 }, { nextTurn: undefined });
    await Promise.all([gate.acquire("q", f.store), gate.acquire("q", f.store)]);
    expect(f.sleeps).toEqual([1]);
  });

  it("sleeps the poll interval while full, doubling, never past the deadline, then fails with QueueFull", async () => {
    const f = fakeStore([0]);
    const debug = vi.fn();
    const gate = f.gate({ maxQueueDepth: 1, maxQueueWaitMs: 100, queuePollIntervalMs: 5, logger: { debug } });
    const error = await gate.acquire("emails", f.store).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueFull);
    expect(error).toMatchObject({ queue: "emails", maxDepth: 1, waitedMs: 100 });
    expect(f.sleeps).toEqual([5, 10, 20, 40, 25]);
    expect(f.probes.map((p) => p.at)).toEqual([0, 5, 15, 35, 75, 100]);
    expect(debug).toHaveBeenCalledTimes(1);
    expect(debug).toHaveBeenCalledWith("queue full, submit waiting for headroom", { queue: "emails", maxDepth: 1 });
  });

  it("doubles up to 5000 ms, or up to a larger first interval", async () => {
    const f = fakeStore([0]);
    await f.gate({ maxQueueDepth: 1, maxQueueWaitMs: 30_000, queuePollIntervalMs: 1000 }).acquire("q", f.store).catch(() => null);
    expect(f.sleeps).toEqual([1000, 2000, 4000, 5000, 5000, 5000, 5000, 3000]);
    const g = fakeStore([0]);
    await g.gate({ maxQueueDepth: 1, maxQueueWaitMs: 20_000, queuePollIntervalMs: 8000 }).acquire("q", g.store).catch(() => null);
    expect(g.sleeps).toEqual([8000, 8000, 4000]);
  });

  it("resumes once a probe finds headroom", async () => {
    const f = fakeStore([0, 0, 2]);
    const gate = f.gate({ maxQueueDepth: 2, queuePollIntervalMs: 5 });
    await gate.acquire("q", f.store);
    expect(f.sleeps).toEqual([5, 10]);
    // The grant left by that probe serves the next submit without probing.
    await gate.acquire("q", f.store);
    expect(f.probes).toHaveLength(3);
  });

  it("fails at once with maxQueueWaitMs 0, floor-rounding the time spent probing", async () => {
    const f = fakeStore([0]);
    f.store.queueDepth = async () => {
      f.clock.ms += 2.7;
      return 0;
    };
    const error = await f.gate({ maxQueueDepth: 1, maxQueueWaitMs: 0 }).acquire("q", f.store).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "QueueFull", waitedMs: 2 });
    expect(f.sleeps).toEqual([]);
  });

  it("propagates a probe error to every submit sharing it, then probes afresh", async () => {
    const f = fakeStore([5]);
    const gate = f.gate({ maxQueueDepth: 5 });
    const queueDepth = f.store.queueDepth.bind(f.store);
    f.store.queueDepth = async () => {
      throw new Error("database is locked");
    };
    const results = await Promise.allSettled([gate.acquire("q", f.store), gate.acquire("q", f.store)]);
    expect(results.map((r) => r.status === "rejected" && (r.reason as Error).message)).toEqual(["database is locked", "database is locked"]);
    f.store.queueDepth = queueDepth;
    await gate.acquire("q", f.store);
    expect(f.probes).toHaveLength(1);
  });
});

describe("close", () => {
  /** A sleep that only ends when its signal aborts (the gate's close). */
  const sleepUntilAborted = (_ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));

  it("wakes every waiting submit, which rejects naming the owner; later gated acquires reject too", async () => {
    const f = fakeStore([0]);
    const gate = f.gate({ maxQueueDepth: 1, owner: "client" }, { sleep: sleepUntilAborted });
    const waiting = Array.from({ length: 3 }, () => gate.acquire("q", f.store).catch((e: unknown) => e));
    await new Promise((resolve) => setImmediate(resolve));
    gate.close();
    gate.close();
    for (const error of await Promise.all(waiting)) {
      expect(error).toBeInstanceOf(CairnQError);
      expect((error as Error).message).toBe(
        "the client was closed while a submit waited for headroom on queue 'q', so nothing was submitted; submit through an open client",
      );
    }
    await expect(gate.acquire("q", f.store)).rejects.toThrow(/^the client was closed/);
  });

  it("names a generic owner by default and lets ungated queues through after close", async () => {
    const f = fakeStore([0]);
    const gate = f.gate({ maxQueueDepth: { q: 1 } });
    gate.close();
    await expect(gate.acquire("q", f.store)).rejects.toThrow(/^the backpressure gate was closed while a submit waited/);
    await gate.acquire("other", f.store);
  });
});

describe("clock", () => {
  it("runs on performance.now() when no clock is injected", async () => {
    const f = fakeStore([0]);
    let slept = 0;
    const gate = new BackpressureGateCore(
      { maxQueueDepth: 1, maxQueueWaitMs: 20, queuePollIntervalMs: 5 },
      {
        sleep: (ms) => {
          slept += 1;
          return new Promise((resolve) => setTimeout(resolve, ms));
        },
      },
    );
    const started = performance.now();
    await expect(gate.acquire("q", f.store)).rejects.toBeInstanceOf(QueueFull);
    expect(performance.now() - started).toBeGreaterThanOrEqual(19);
    expect(slept).toBeGreaterThan(0);
  });
});
