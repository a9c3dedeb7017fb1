import { describe, expect, it } from "vitest";
import { MAX_DELAY_MS, requireDelayMs } from "../src/delay.js";
import { InvalidArgument } from "../src/errors.js";
import { PARK_FOREVER_AT_MS } from "../src/steps.js";
import { expectInvalid } from "./input-checks.js";

describe("MAX_DELAY_MS", () => {
  it("is 100 years of 365 days, and keeps now + the bound a Date from any now before the year 270,000", () => {
    expect(MAX_DELAY_MS).toBe(100 * 365 * 86_400_000);
    // The bound leaves the whole Date range but its last 100 years for "now".
    expect(new Date(PARK_FOREVER_AT_MS - MAX_DELAY_MS).getUTCFullYear()).toBeGreaterThan(270_000);
  });
});

describe("requireDelayMs", () => {
  it("accepts an integer from 0 to MAX_DELAY_MS, unchanged", () => {
    expect(requireDelayMs(0, "runAtDelayMs")).toBe(0);
    expect(requireDelayMs(86_400_000, "runAtDelayMs")).toBe(86_400_000);
    expect(requireDelayMs(MAX_DELAY_MS, "runAtDelayMs")).toBe(MAX_DELAY_MS);
  });

  it("refuses a delay past MAX_DELAY_MS, naming the argument and the bound", () => {
    expectInvalid(() => requireDelayMs(MAX_DELAY_MS + 1, "runAtDelayMs"), "runAtDelayMs", /^runAtDelayMs asks for a delay of 3153600000001 ms, over MAX_DELAY_MS \(3153600000000 ms, 100 years\)/);
    expectInvalid(() => requireDelayMs(Number.MAX_SAFE_INTEGER, "debounce.delayMs"), "debounce.delayMs", /use a shorter debounce\.delayMs$/);
    expectInvalid(() => requireDelayMs(2 ** 60, "delayMs"), "delayMs", /MAX_DELAY_MS/);
  });

  it("says the call as the caller wrote it when given", () => {
    expectInvalid(() => requireDelayMs(Number.MAX_SAFE_INTEGER, "ms", "ctx.sleep('nap', 9007199254740991)"), "ms", /^ctx\.sleep\('nap', 9007199254740991\) asks for a delay of 9007199254740991 ms, over MAX_DELAY_MS/);
  });

  it("refuses what is not an integer ≥ 0, saying the range", () => {
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, "5", null, undefined, 5n, {}]) {
      expectInvalid(() => requireDelayMs(bad, "runAtDelayMs"), "runAtDelayMs", /^runAtDelayMs must be an integer number of milliseconds from 0 to 3153600000000 \(MAX_DELAY_MS\), got /);
    }
    expect(() => requireDelayMs("5", "x")).toThrow(/got "5"$/);
    expect(() => requireDelayMs(null, "x")).toThrow(/got null$/);
    expect(() => requireDelayMs(undefined, "x")).toThrow(/got undefined$/);
    expect(() => requireDelayMs({}, "x")).toThrow(/got an object$/);
    expect(() => requireDelayMs(-1, "x")).toThrow(InvalidArgument);
  });
});
