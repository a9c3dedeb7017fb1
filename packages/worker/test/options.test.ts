import { describe, expect, it } from "vitest";
import { InvalidArgument, MAX_DELAY_MS } from "@cairnq/protocol";
import { defaultHeartbeatIntervalMs, nextPollInterval, RETRY_BACKOFF_DEFAULTS } from "@cairnq/protocol/sdk";
import { systemClock } from "@cairnq/runtime";
import { resolveWorkerOptions } from "../src/options.js";
import { WORKER_EVENT_NAMES } from "../src/events.js";
import { Worker } from "../src/index.js";
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
    expect(o.clock).toBe(systemClock);
  });

  it("derives the heartbeat interval from the lease, floored at 50 ms", () => {
    expect(defaultHeartbeatIntervalMs(30_000)).toBe(10_000);
    expect(defaultHeartbeatIntervalMs(100)).toBe(50);
    expect(resolveWorkerOptions({ leaseMs: 600 }).heartbeatIntervalMs).toBe(200);
    expect(resolveWorkerOptions({ leaseMs: 600, heartbeatIntervalMs: 7 }).heartbeatIntervalMs).toBe(7);
  });

  it("rejects concurrency 0, -1 and 1.5 instead of turning them into 1", () => {
    for (const concurrency of [0, -1, 1.5, Number.NaN]) {
      expect(() => resolveWorkerOptions({ concurrency })).toThrow(
        new InvalidArgument("concurrency", `concurrency must be an integer ≥ 1, got ${concurrency}`),
      );
    }
    expect(resolveWorkerOptions({ concurrency: 8 }).concurrency).toBe(8);
  });

  it("rejects unknown keys, naming the key, a close valid one and the valid list", () => {
    const err = (() => {
      try {
        resolveWorkerOptions({ concurency: 8 } as never);
      } catch (e) {
        return e as InvalidArgument;
      }
      throw new Error("accepted");
    })();
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err.argument).toBe("concurency");
    expect(err.message).toMatch(/^'concurency' is not an option of new Worker\(store, options\) \(did you mean 'concurrency'\?\); the options are queues, concurrency, leaseMs, /);
    expect(() => new Worker(new MemoryStore(), { leaseMS: 5000 } as never)).toThrow(/did you mean 'leaseMs'/);
  });

  it("honours durations of 2^31 ms and more instead of rejecting or clamping them", () => {
    const day = 24 * 3600_000;
    const o = resolveWorkerOptions({ maxRunMs: 30 * day, stopTimeoutMs: 2 ** 31, leaseMs: 2 ** 33, heartbeatIntervalMs: 2 ** 31 });
    expect(o).toMatchObject({ maxRunMs: 30 * day, stopTimeoutMs: 2 ** 31, leaseMs: 2 ** 33, heartbeatIntervalMs: 2 ** 31 });
  });

  it("rejects lease settings under which no task can finish", () => {
    expect(() => resolveWorkerOptions({ leaseMs: 1 })).toThrow(new InvalidArgument("leaseMs", "leaseMs must be an integer number of milliseconds ≥ 20, got 1"));
    // The default heartbeat (50 ms) would come after a 40 ms lease ran out.
    expect(() => resolveWorkerOptions({ leaseMs: 40 })).toThrow(/leaseMs 40 is not longer than the default heartbeat interval \(50 ms\)/);
    expect(() => resolveWorkerOptions({ leaseMs: 1000, heartbeatIntervalMs: 1000 })).toThrow(
      /heartbeatIntervalMs \(1000\) must be less than leaseMs \(1000\)/,
    );
    expect(() => resolveWorkerOptions({ heartbeatIntervalMs: 2 ** 31 })).toThrow(InvalidArgument);
    expect(resolveWorkerOptions({ leaseMs: 40, heartbeatIntervalMs: 10 }).leaseMs).toBe(40);
  });

  it("bounds leaseMs, retryBackoffMs and retryBackoffMaxMs by MAX_DELAY_MS: a store writes now + each, and refuses a delay past it", () => {
    for (const argument of ["leaseMs", "retryBackoffMs", "retryBackoffMaxMs"]) {
      const err = (() => {
        try {
          resolveWorkerOptions({ [argument]: MAX_DELAY_MS + 1 });
        } catch (caught) {
          return caught;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).argument).toBe(argument);
      expect((err as InvalidArgument).message).toMatch(new RegExp(`^${argument} asks for a delay of 3153600000001 ms, over MAX_DELAY_MS \\(3153600000000 ms, 100 years\\)`));
    }
    expect(() => resolveWorkerOptions({ retryBackoffMs: Number.MAX_SAFE_INTEGER })).toThrow(/over MAX_DELAY_MS/);
    expect(() => resolveWorkerOptions({ retryBackoffMaxMs: 1.5 })).toThrow(/retryBackoffMaxMs must be an integer number of milliseconds from 0 to 3153600000000/);
    const o = resolveWorkerOptions({ leaseMs: MAX_DELAY_MS, retryBackoffMs: MAX_DELAY_MS, retryBackoffMaxMs: MAX_DELAY_MS });
    expect(o).toMatchObject({ leaseMs: MAX_DELAY_MS, retryBackoffMs: MAX_DELAY_MS, retryBackoffMaxMs: MAX_DELAY_MS });
  });

  it("refuses a retryBackoffMaxMs below retryBackoffMs when both are given; either alone keeps the other's default, clamped as §6 says", () => {
    let caught: unknown;
    try {
      resolveWorkerOptions({ retryBackoffMs: 60_000, retryBackoffMaxMs: 10_000 });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidArgument);
    expect((caught as InvalidArgument).argument).toBe("retryBackoffMaxMs");
    expect((caught as InvalidArgument).message).toBe(
      "retryBackoffMaxMs (10000) is below retryBackoffMs (60000): the cap clamps every backoff window (§6), so no retry would wait as long as the base asks; raise retryBackoffMaxMs to at least 60000, or lower retryBackoffMs",
    );
    expect(() => new Worker(new MemoryStore(), { retryBackoffMs: 2, retryBackoffMaxMs: 1 })).toThrow(InvalidArgument);
    expect(resolveWorkerOptions({ retryBackoffMs: 60_000, retryBackoffMaxMs: 60_000 })).toMatchObject({ retryBackoffMs: 60_000, retryBackoffMaxMs: 60_000 });
    expect(resolveWorkerOptions({ retryBackoffMs: 0, retryBackoffMaxMs: 0 })).toMatchObject({ retryBackoffMs: 0, retryBackoffMaxMs: 0 });
    // Alone, each is accepted with the other's default, even across it: §6 clamps the window to the cap.
    expect(resolveWorkerOptions({ retryBackoffMs: 10 * 60_000 })).toMatchObject({ retryBackoffMs: 600_000, retryBackoffMaxMs: 30_000 });
    expect(resolveWorkerOptions({ retryBackoffMaxMs: 500 })).toMatchObject({ retryBackoffMs: 1_000, retryBackoffMaxMs: 500 });
  });

  it("prints warnings to stderr by default; onError or a logger replaces that, and logger: null silences it", () => {
    expect(resolveWorkerOptions().logger?.warn).toBeTypeOf("function");
    expect(resolveWorkerOptions().logger?.info).toBeUndefined();
    expect(resolveWorkerOptions({ logger: null }).logger).toBeUndefined();
    expect(resolveWorkerOptions({ onError: () => {} }).logger).toBeUndefined();
    const mine = { warn: () => {} };
    expect(resolveWorkerOptions({ logger: mine }).logger).toBe(mine);
    expect(() => resolveWorkerOptions({ logger: 5 as never })).toThrow(InvalidArgument);
  });

  it("refuses a closeStore that is not a boolean rather than using its truthiness", () => {
    expect(() => resolveWorkerOptions({ closeStore: "false" as never })).toThrow(
      new InvalidArgument("closeStore", `closeStore must be true or false, got "false"; convert an environment variable first (closeStore: process.env.X === "true")`),
    );
    for (const value of [0, 1, null, "true"]) expect(() => resolveWorkerOptions({ closeStore: value as never }), String(value)).toThrow(/^closeStore must be true or false, got /);
    expect(resolveWorkerOptions({ closeStore: true }).closeStore).toBe(true);
    expect(resolveWorkerOptions({ closeStore: false }).closeStore).toBe(false);
    expect(resolveWorkerOptions({}).closeStore).toBe(false);
  });

  it("refuses a logger with none of debug/info/warn/error, or one whose level is not a function, as its message says", () => {
    const must = "logger must be an object with debug/info/warn/error(message, fields) methods (some of them are enough), such as console, or null to silence the worker";
    expect(() => resolveWorkerOptions({ logger: {} })).toThrow(new InvalidArgument("logger", `${must}; got an object with none of them`));
    expect(() => resolveWorkerOptions({ logger: { warning: () => {} } as never })).toThrow(/got an object with none of them$/);
    expect(() => resolveWorkerOptions({ logger: { warn: () => {}, error: "stderr" } as never })).toThrow(
      new InvalidArgument("logger", `${must}; got one whose error is "stderr"`),
    );
    expect(() => resolveWorkerOptions({ logger: 5 as never })).toThrow(new InvalidArgument("logger", `${must}; got 5`));
    expect(resolveWorkerOptions({ logger: console }).logger).toBe(console);
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
    ["retryBackoffMs", { retryBackoffMs: null as never }],
    ["retryBackoffMaxMs", { retryBackoffMaxMs: "30000" as never }],
    ["maxRunMs", { maxRunMs: 0 }],
    ["maxInFlightBytes", { maxInFlightBytes: 0 }],
    ["maxRunMs", { maxRunMs: 1.5 }],
    ["maxRunMs", { maxRunMs: Number.POSITIVE_INFINITY }],
    ["stopTimeoutMs", { stopTimeoutMs: Number.NaN }],
    ["stopTimeoutMs", { stopTimeoutMs: -1 }],
    ["resources.gpu", { resources: { gpu: 0 } }],
    ["resources", { resources: [] as unknown as Record<string, number> }],
    ["onError", { onError: "no" as unknown as () => void }],
    ["random", { random: 1 as unknown as () => number }],
    ["clock", { clock: (() => 1) as never }],
    ["clock", { clock: { now: () => 1 } as never }],
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
    while (seq.length < 6) seq.push(nextPollInterval(seq.at(-1)!, 500));
    expect(seq).toEqual([100, 150, 225, 337, 500, 500]);
    expect(nextPollInterval(1, 500)).toBe(2);
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
    ["concurrency", () => worker().task("a", { concurrency: -1 }, () => 1)],
    ["concurrency", () => worker().task("a", { concurrency: 1.5 }, () => 1)],
    ["concurency", () => worker().task("a", { concurency: 2 } as never, () => 1)],
  ])("rejects a bad %s", (argument, register) => {
    try {
      register();
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).argument).toBe(argument);
    }
  });

  it("names the unknown task option and suggests the close one", () => {
    expect(() => worker().task("a", { bach: 4 } as never, () => 1)).toThrow(
      "'bach' is not an option of worker.task('a', options, handler) (did you mean 'batch'?); the options are batch, concurrency, resource",
    );
  });

  it("names the declared resources when one is missing", () => {
    expect(() => worker().task("a", { resource: "cpu" }, () => 1)).toThrow(/declared: gpu/);
  });

  it("refuses an argument after the handler (options put last are not dropped), naming the two call shapes", () => {
    const shapes = "call worker.task('a', handler) or worker.task('a', options, handler)";
    // The calls JavaScript (or a cast) can make, which the overloads refuse to compile.
    const task = (w: Worker) => w.task.bind(w) as (...args: unknown[]) => unknown;
    const refusals: [(w: Worker) => unknown, string, string][] = [
      [
        (w) => task(w)("a", () => 1, { concurrency: 2 }),
        "options",
        "worker.task('a', handler, …) got 1 argument (an object) after its handler, which would be ignored; the options come before the handler: worker.task('a', handler) or worker.task('a', options, handler)",
      ],
      [(w) => task(w)("a", () => 1, undefined), "options", "got 1 argument (undefined) after its handler"],
      [
        (w) => task(w)("a", { concurrency: 2 }, () => 1, { batch: 4 }),
        "handler",
        `worker.task('a', options, handler, …) got 1 argument (an object) after its handler, which would be ignored; ${shapes}`,
      ],
      [(w) => task(w)({ name: "a" }, {}, () => 1, 1, 2), "handler", "got 2 arguments after its handler"],
      [(w) => task(w)("a", {}, "run"), "handler", `worker.task('a', …) needs a handler function, got a string; ${shapes}`],
      [(w) => task(w)("a", { concurrency: 2 }), "handler", `needs a handler function, got undefined; ${shapes}`],
      [(w) => task(w)("a", "notfn"), "handler", `worker.task('a', …) got "notfn" as its second argument, which is neither a handler function nor an options object; ${shapes}`],
      [(w) => task(w)("a", 42), "handler", `got 42 as its second argument, which is neither a handler function nor an options object; ${shapes}`],
      [(w) => task(w)("a", null), "handler", `got null as its second argument`],
      [(w) => task(w)("a", [], () => 1), "options", `got an array as its second argument`],
    ];
    for (const [register, argument, message] of refusals) {
      const w = worker();
      let thrown: unknown;
      try {
        register(w);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, message).toBeInstanceOf(InvalidArgument);
      expect((thrown as InvalidArgument).argument, message).toBe(argument);
      expect((thrown as InvalidArgument).message, message).toContain(message);
      // Nothing was registered.
      expect(w.removeTask("a"), message).toBe(false);
    }
  });

  it("worker.schedule refuses an argument after its options, and worker.on a listener that is no function or an argument after it", () => {
    const w = new Worker(new MemoryStore());
    const schedule = w.schedule.bind(w) as (...args: unknown[]) => unknown;
    expect(() => schedule("tick", { everyMs: 60_000 }, { queue: "cron" }, { payload: { a: 1 } })).toThrow(
      "worker.schedule(name, spec, options) got 1 argument (an object) after its options, which would be ignored; every option goes in the one options object",
    );
    expect(() => w.on("task:failed", "log" as never)).toThrow(new InvalidArgument("listener", 'worker.on("task:failed", listener) needs a listener function, got a string'));
    const on = w.on.bind(w) as (...args: unknown[]) => unknown;
    expect(() => on("task:failed", () => {}, { once: true })).toThrow(/worker\.on\("task:failed", listener\) got 1 argument \(an object\) after its listener/);
    expect(() => w.on("task:failed", () => {})).not.toThrow();
  });

  it("worker.on and worker.off refuse an event name the worker never emits, naming the events; every listed event is accepted", () => {
    const w = new Worker(new MemoryStore());
    const on = w.on.bind(w) as (...args: unknown[]) => unknown;
    const off = w.off.bind(w) as (...args: unknown[]) => unknown;
    const listed = "task:claimed, task:succeeded, task:failed, task:canceled, task:parked, lease:lost, worker:stopping, worker:stopped";
    expect(() => on("task:sucess", () => {})).toThrow(
      new InvalidArgument("event", `worker.on(event, listener) got the event "task:sucess", which a worker never emits; the events are ${listed}`),
    );
    expect(() => off("error", () => {})).toThrow(/^worker\.off\(event, listener\) got the event "error", which a worker never emits/);
    expect(() => on(Symbol("x"), () => {})).toThrow(/got the event a symbol, which a worker never emits/);
    for (const event of WORKER_EVENT_NAMES) expect(() => w.on(event, () => {}).off(event, () => {})).not.toThrow();
  });

  it("warns through the logger when a TaskDef's queue is not claimed", () => {
    const warnings: string[] = [];
    const w = new Worker(new MemoryStore(), { queues: ["a"], logger: { warn: (m) => warnings.push(m) } });
    w.task({ name: "x", queue: "b" }, () => 1);
    w.task({ name: "y", queue: "a" }, () => 1);
    expect(warnings).toHaveLength(1);
  });
});
