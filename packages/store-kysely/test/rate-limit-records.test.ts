import { describe, expect, it } from "vitest";
import { RATE_LIMIT_REFRESH_MS, RateLimitRecords } from "../src/rate-limit-records.js";

describe("RateLimitRecords", () => {
  it("a key is written when new, when its limit changes, and again once RATE_LIMIT_REFRESH_MS passed; not in between", () => {
    let now = 1_000;
    const records = new RateLimitRecords(() => now);
    const limit = { max: 2, perMs: 1000 };
    expect(records.take("send", "name", limit)).toBe(true);
    now += 5_000;
    expect(records.take("send", "name", limit)).toBe(false);
    // Another scope or name is another key.
    expect(records.take("send", "group", limit)).toBe(true);
    expect(records.take("mail", "name", limit)).toBe(true);
    expect(records.take("send", "name", { max: 3, perMs: 1000 })).toBe(true);
    expect(records.take("send", "name", { max: 3, perMs: 500 })).toBe(true);
    expect(records.take("send", "name", { max: 3, perMs: 500 })).toBe(false);
    now += RATE_LIMIT_REFRESH_MS - 1;
    expect(records.take("send", "name", { max: 3, perMs: 500 })).toBe(false);
    now += 1;
    expect(records.take("send", "name", { max: 3, perMs: 500 })).toBe(true);
    expect(records.take("send", "name", { max: 3, perMs: 500 })).toBe(false);
  });

  it("defaults to a monotonic clock", () => {
    const records = new RateLimitRecords();
    expect(records.take("send", "name", { max: 1, perMs: 1 })).toBe(true);
    expect(records.take("send", "name", { max: 1, perMs: 1 })).toBe(false);
  });
});
