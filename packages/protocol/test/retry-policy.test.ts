import { describe, expect, it } from "vitest";
import { InvalidArgument } from "../src/errors.js";
import { MAX_RETRY_DELAY_MS, normalizeRetryPolicy, policyRetryDelayMs } from "../src/retry-policy.js";

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
    expect(() => normalizeRetryPolicy({ retryBackoffMs: "5" as never })).toThrow(/got string/);
  });

  it("refuses a retryBackoff that is not a function, or one combined with a duration", () => {
    expect(() => normalizeRetryPolicy({ retryBackoff: null as never })).toThrow(/must be a function.*got null/);
    expect(() => normalizeRetryPolicy({ retryBackoff: 5 as never })).toThrow(/got number/);
    expect(() => normalizeRetryPolicy({ retryBackoff: () => 1, retryBackoffMs: 10 })).toThrow(/either the function or the two durations/);
    expect(() => normalizeRetryPolicy({ retryBackoff: () => 1, retryBackoffMaxMs: 10 })).toThrow(/either the function/);
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
