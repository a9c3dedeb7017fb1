import { describe, expect, it } from "vitest";
import { InvalidArgument } from "../src/errors.js";
import { MAX_RETRY_DELAY_MS, normalizeRetryPolicy, policyRetryDelayMs, requireCapNotBelowBase } from "../src/retry-policy.js";

const worker = { baseMs: 1_000, capMs: 60_000 };
const mid = () => 0.5;

describe("normalizeRetryPolicy", () => {
  it("is null when nothing is set, so the worker's backoff applies", () => {
    expect(normalizeRetryPolicy({})).toBeNull();
  });

  it("keeps the durations given and leaves the others to the worker", () => {
    expect(normalizeRetryPolicy({ retryBackoffMs: 0 })).toEqual({ baseMs: 0, capMs: null, compute: null });
    expect(normalizeRetryPolicy({ retryBackoffMaxMs: 5_000 })).toEqual({ baseMs: null, capMs: 5_000, compute: null });
  });

  it("keeps a retryBackoff function", () => {
    const fn = (attempt: number) => attempt * 10;
    expect(normalizeRetryPolicy({ retryBackoff: fn })?.compute).toBe(fn);
  });

  it("refuses durations that are not integers from 0 to the timer limit, naming the option", () => {
    expect(() => normalizeRetryPolicy({ retryBackoffMs: -1 }, "task 'email' options")).toThrow(/task 'email' options.retryBackoffMs must be an integer/);
    expect(() => normalizeRetryPolicy({ retryBackoffMaxMs: 1.5 })).toThrow(/retryBackoffMaxMs/);
    expect(() => normalizeRetryPolicy({ retryBackoffMs: MAX_RETRY_DELAY_MS + 1 })).toThrow(InvalidArgument);
    expect(() => normalizeRetryPolicy({ retryBackoffMs: "5" as never })).toThrow(/got "5"$/);
  });

  it("refuses a retryBackoff that is not a function, or one combined with a duration", () => {
    expect(() => normalizeRetryPolicy({ retryBackoff: null as never })).toThrow(/must be a function.*got null/);
    expect(() => normalizeRetryPolicy({ retryBackoff: 5 as never })).toThrow(/got 5$/);
    expect(() => normalizeRetryPolicy({ retryBackoff: () => 1, retryBackoffMs: 10 })).toThrow(/either the function or the two durations/);
    expect(() => normalizeRetryPolicy({ retryBackoff: () => 1, retryBackoffMaxMs: 10 })).toThrow(/either the function/);
  });
});

describe("requireCapNotBelowBase", () => {
  const base = { ms: 5_000, name: "retryBackoffMs" };
  it("refuses a cap below the base, naming the argument and both values", () => {
    let caught: unknown;
    try {
      requireCapNotBelowBase(base, { ms: 1_000, name: "retryBackoffMaxMs" }, "retryBackoffMaxMs");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidArgument);
    expect((caught as InvalidArgument).argument).toBe("retryBackoffMaxMs");
    expect((caught as InvalidArgument).message).toBe(
      "retryBackoffMaxMs (1000) is below retryBackoffMs (5000): the cap clamps every backoff window (§6), so no retry would wait as long as the base asks; raise retryBackoffMaxMs to at least 5000, or lower retryBackoffMs",
    );
  });

  it("accepts a cap equal to or above the base, and anything left to its default (null)", () => {
    expect(() => requireCapNotBelowBase(base, { ms: 5_000, name: "cap" }, "cap")).not.toThrow();
    expect(() => requireCapNotBelowBase(base, { ms: 9_000, name: "cap" }, "cap")).not.toThrow();
    expect(() => requireCapNotBelowBase(base, null, "cap")).not.toThrow();
    expect(() => requireCapNotBelowBase(null, { ms: 0, name: "cap" }, "cap")).not.toThrow();
    // A disabled backoff (base 0) is below any cap.
    expect(() => requireCapNotBelowBase({ ms: 0, name: "base" }, { ms: 0, name: "cap" }, "cap")).not.toThrow();
  });
});

describe("normalizeRetryPolicy: a cap below the base in effect", () => {
  const task = "task 'email' options";
  it("is refused when the task sets both", () => {
    expect(() => normalizeRetryPolicy({ retryBackoffMs: 10_000, retryBackoffMaxMs: 2_000 }, task)).toThrow(
      new InvalidArgument(
        "task 'email' options.retryBackoffMaxMs",
        "task 'email' options.retryBackoffMaxMs (2000) is below task 'email' options.retryBackoffMs (10000): the cap clamps every backoff window (§6), so no retry would wait as long as the base asks; raise task 'email' options.retryBackoffMaxMs to at least 10000, or lower task 'email' options.retryBackoffMs",
      ),
    );
    expect(normalizeRetryPolicy({ retryBackoffMs: 2_000, retryBackoffMaxMs: 2_000 }, task)).toEqual({ baseMs: 2_000, capMs: 2_000, compute: null });
  });

  it("is refused against the worker's explicit setting, naming the task's option", () => {
    const err = (() => {
      try {
        normalizeRetryPolicy({ retryBackoffMaxMs: 2_000 }, task, { baseMs: 10_000, capMs: null });
      } catch (caught) {
        return caught as InvalidArgument;
      }
      return null;
    })();
    expect(err?.argument).toBe("task 'email' options.retryBackoffMaxMs");
    expect(err?.message).toMatch(/^task 'email' options\.retryBackoffMaxMs \(2000\) is below the worker's retryBackoffMs \(10000\)/);
    expect(() => normalizeRetryPolicy({ retryBackoffMs: 60_000 }, task, { baseMs: null, capMs: 30_000 })).toThrow(
      /^the worker's retryBackoffMaxMs \(30000\) is below task 'email' options\.retryBackoffMs \(60000\): .*raise the worker's retryBackoffMaxMs to at least 60000, or lower task 'email' options\.retryBackoffMs$/,
    );
    expect(() => normalizeRetryPolicy({ retryBackoffMs: 60_000 }, task, { baseMs: null, capMs: 30_000 })).toThrow(
      expect.objectContaining({ argument: "task 'email' options.retryBackoffMs" }),
    );
  });

  it("is accepted where a side is only a default, or the task's own value replaces the worker's", () => {
    // No explicit cap anywhere: §6's default cap clamps it, as it does on the worker.
    expect(normalizeRetryPolicy({ retryBackoffMs: 600_000 }, task)).toEqual({ baseMs: 600_000, capMs: null, compute: null });
    expect(normalizeRetryPolicy({ retryBackoffMs: 600_000 }, task, { baseMs: 1_000, capMs: null })?.baseMs).toBe(600_000);
    // The task's cap replaces the worker's (lower) one.
    expect(normalizeRetryPolicy({ retryBackoffMs: 600_000, retryBackoffMaxMs: 900_000 }, task, { baseMs: 1_000, capMs: 30_000 })?.capMs).toBe(900_000);
    // The task's base replaces the worker's (higher) one.
    expect(normalizeRetryPolicy({ retryBackoffMs: 1_000 }, task, { baseMs: 60_000, capMs: 30_000 })?.baseMs).toBe(1_000);
    // A retryBackoff function uses neither duration: nothing to compare.
    expect(normalizeRetryPolicy({ retryBackoff: () => 1 }, task, { baseMs: 60_000, capMs: 1_000 })?.compute).toBeTypeOf("function");
  });
});

describe("policyRetryDelayMs", () => {
  it("without a function: the §6 backoff with the policy's durations, the worker's where unset", () => {
    // Equal jitter with random 0.5: half the window plus half of the other half.
    const own = policyRetryDelayMs({ baseMs: 100, capMs: null, compute: null }, worker, 1, new Error("x"), mid);
    const workers = policyRetryDelayMs({ baseMs: null, capMs: null, compute: null }, worker, 1, new Error("x"), mid);
    expect(own.problem).toBeNull();
    expect(own.delayMs).toBeLessThan(workers.delayMs);
    expect(policyRetryDelayMs({ baseMs: 0, capMs: null, compute: null }, worker, 3, null, mid).delayMs).toBe(0);
  });

  it("the function decides, given the failed attempt's number and the error", () => {
    const seen: unknown[] = [];
    const policy = { baseMs: null, capMs: null, compute: (attempt: number, error: unknown) => (seen.push(error), attempt * 250) };
    const err = new Error("rate limited");
    expect(policyRetryDelayMs(policy, worker, 3, err)).toEqual({ delayMs: 750, problem: null });
    expect(seen).toEqual([err]);
  });

  it("a function that throws or answers badly falls back to the worker's backoff and reports why", () => {
    const fallback = policyRetryDelayMs({ baseMs: null, capMs: null, compute: null }, worker, 2, null, mid).delayMs;
    const threw = policyRetryDelayMs({ baseMs: null, capMs: null, compute: () => { throw new Error("oops"); } }, worker, 2, null, mid);
    expect(threw.delayMs).toBe(fallback);
    expect(threw.problem?.message).toMatch(/retryBackoff threw for attempt 2 \(oops\)/);
    // A library may throw a non-Error value; its message still says what was thrown.
    const notAnError = () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the case under test
      throw "bad";
    };
    const thrownString = policyRetryDelayMs({ baseMs: null, capMs: null, compute: notAnError }, worker, 2, null, mid);
    expect(thrownString.problem?.message).toMatch(/\(bad\)/);
    for (const answer of [1.5, -1, MAX_RETRY_DELAY_MS + 1, "100", Number.NaN]) {
      const r = policyRetryDelayMs({ baseMs: null, capMs: null, compute: () => answer as number }, worker, 2, null, mid);
      expect(r.delayMs).toBe(fallback);
      expect(r.problem).toBeInstanceOf(InvalidArgument);
      expect(r.problem?.message).toMatch(/it must return an integer number of milliseconds/);
    }
    // An async retryBackoff is named for what it is, and its promise's rejection is not left unhandled.
    for (const compute of [async () => 100, () => Promise.reject(new Error("late"))]) {
      const r = policyRetryDelayMs({ baseMs: null, capMs: null, compute: compute as never }, worker, 2, null, mid);
      expect(r.delayMs).toBe(fallback);
      expect(r.problem?.message).toMatch(/retryBackoff returned a Promise for attempt 2; it must be synchronous/);
    }
    expect(policyRetryDelayMs({ baseMs: null, capMs: null, compute: () => ({ then: 1 }) as never }, worker, 2, null, mid).problem?.message).toMatch(/returned object/);
  });

  it("uses Math.random when no random source is given", () => {
    const r = policyRetryDelayMs({ baseMs: 1_000, capMs: 1_000, compute: null }, worker, 1, null);
    expect(r.delayMs).toBeGreaterThanOrEqual(500);
    expect(r.delayMs).toBeLessThanOrEqual(1_000);
  });
});
