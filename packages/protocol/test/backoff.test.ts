import { describe, expect, it } from "vitest";
import { RETRY_BACKOFF_DEFAULTS, retryDelayMs } from "../src/backoff.js";

/** The largest double below 1, i.e. the top of U's range. */
const ALMOST_ONE = 1 - Number.EPSILON / 2;

describe("retryDelayMs (§6)", () => {
  it("defaults to base 1000 ms and cap 30000 ms", () => {
    expect(RETRY_BACKOFF_DEFAULTS).toEqual({ baseMs: 1000, capMs: 30000 });
    expect(Object.isFrozen(RETRY_BACKOFF_DEFAULTS)).toBe(true);
  });

  const windows: [number, number, number][] = [
    [1, 500, 1000],
    [2, 1000, 2000],
    [3, 2000, 4000],
    [4, 4000, 8000],
    [5, 8000, 16000],
    [6, 15000, 30000],
    [7, 15000, 30000],
    [50, 15000, 30000],
    [2000, 15000, 30000],
  ];

  for (const [attempt, low, high] of windows) {
    it(`attempt ${attempt} waits within [${low}, ${high})`, () => {
      expect(retryDelayMs(attempt, 1000, 30000, () => 0)).toBe(low);
      expect(retryDelayMs(attempt, 1000, 30000, () => ALMOST_ONE)).toBe(high - 1);
      expect(retryDelayMs(attempt, 1000, 30000, () => 0.5)).toBe(low + Math.floor((high - low) / 2));
      // The defaults are the same window.
      expect(retryDelayMs(attempt, undefined, undefined, () => 0)).toBe(low);
    });
  }

  it("treats attempts below 1 like the first", () => {
    expect(retryDelayMs(0, 1000, 30000, () => 0)).toBe(500);
    expect(retryDelayMs(-3, 1000, 30000, () => 0)).toBe(500);
  });

  it("is 0 when the base is 0 or negative (backoff disabled)", () => {
    expect(retryDelayMs(1, 0)).toBe(0);
    expect(retryDelayMs(9, -5)).toBe(0);
  });

  it("applies the formula to other bases and caps, flooring odd windows", () => {
    // w = min(1000, 3 × 2^2) = 12, f = 6 → [6, 12)
    expect(retryDelayMs(3, 3, 1000, () => 0)).toBe(6);
    expect(retryDelayMs(3, 3, 1000, () => ALMOST_ONE)).toBe(11);
    // w = cap = 7, f = 3 → [3, 7)
    expect(retryDelayMs(10, 100, 7, () => 0)).toBe(3);
    expect(retryDelayMs(10, 100, 7, () => ALMOST_ONE)).toBe(6);
  });

  it("uses Math.random by default and stays in the window", () => {
    for (let i = 0; i < 200; i++) {
      const delay = retryDelayMs(2);
      expect(delay).toBeGreaterThanOrEqual(1000);
      expect(delay).toBeLessThan(2000);
      expect(Number.isInteger(delay)).toBe(true);
    }
  });
});
