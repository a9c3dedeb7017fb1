import { RATE_LIMIT_REFRESH_MS } from "@cairnq/protocol/adapter";
import { describe, expect, it } from "vitest";
import { RateLimitRecords, RateLimitWrites } from "../src/rate-limit-records.js";

describe("RateLimitRecords", () => {
  it("a key is due when new, when its limit changes, and again once RATE_LIMIT_REFRESH_MS passed since it was written; not in between", () => {
    let now = 1_000;
    const records = new RateLimitRecords(() => now);
    const limit = { max: 2, perMs: 1000 };
    expect(records.due("send", "name", limit)).toBe(true);
    records.wrote("send", "name", limit);
    now += 5_000;
    expect(records.due("send", "name", limit)).toBe(false);
    // Another scope or name is another key; another limit is due at once.
    expect(records.due("send", "group", limit)).toBe(true);
    expect(records.due("mail", "name", limit)).toBe(true);
    expect(records.due("send", "name", { max: 3, perMs: 1000 })).toBe(true);
    expect(records.due("send", "name", { max: 2, perMs: 500 })).toBe(true);
    now += RATE_LIMIT_REFRESH_MS - 5_001;
    expect(records.due("send", "name", limit)).toBe(false);
    now += 1;
    expect(records.due("send", "name", limit)).toBe(true);
  });

  it("defaults to a monotonic clock", () => {
    const records = new RateLimitRecords();
    records.wrote("send", "name", { max: 1, perMs: 1 });
    expect(records.due("send", "name", { max: 1, perMs: 1 })).toBe(false);
  });
});

describe("RateLimitWrites: one claim's rows", () => {
  it("plans a due row every time its transaction body runs, and notes it as written only once the claim committed", () => {
    const records = new RateLimitRecords(() => 0);
    const limit = { max: 2, perMs: 1000 };
    const first = new RateLimitWrites(records);
    const params = [{ name: "send", scope: "name", max: 2, perMs: 1000 }];
    expect(first.plan("send", "name", limit)).toEqual(params);
    // The body ran again (a deadlock, a busy database): the row is still due, so it is planned again.
    expect(first.plan("send", "name", limit)).toEqual(params);
    // Another claim of the store before this one committed: due too (a rollback would leave it unwritten).
    expect(new RateLimitWrites(records).plan("send", "name", limit)).toEqual(params);
    first.committed();
    expect(new RateLimitWrites(records).plan("send", "name", limit)).toEqual([]);
    expect(records.due("send", "name", limit)).toBe(false);
  });

  it("a claim that never commits notes nothing", () => {
    const records = new RateLimitRecords(() => 0);
    const limit = { max: 2, perMs: 1000 };
    expect(new RateLimitWrites(records).plan("send", "group", limit)).toHaveLength(1);
    expect(records.due("send", "group", limit)).toBe(true);
  });
});
