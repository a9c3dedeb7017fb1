import { InvalidArgument } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { normalizeRetentionPolicy } from "../src/retention-rules.ts";

describe("normalizeRetentionPolicy", () => {
  it("turns one cutoff into one rule over every terminal status", () => {
    expect(normalizeRetentionPolicy(5_000)).toEqual([{ olderThanMs: 5_000 }]);
    expect(normalizeRetentionPolicy(0)).toEqual([{ olderThanMs: 0 }]);
  });

  it("turns a per-status map into one rule per named status, in life-cycle order", () => {
    expect(normalizeRetentionPolicy({ canceled: 3, succeeded: 1 })).toEqual([
      { status: "succeeded", olderThanMs: 1 },
      { status: "canceled", olderThanMs: 3 },
    ]);
  });

  it("treats an undefined map entry as a status left out", () => {
    expect(normalizeRetentionPolicy({ succeeded: 1, failed: undefined })).toEqual([{ status: "succeeded", olderThanMs: 1 }]);
  });

  it("keeps a rule list as given, dropping nothing and adding nothing", () => {
    const rules = normalizeRetentionPolicy([
      { queue: "emails", olderThanMs: 10 },
      { status: "failed", name: "report", olderThanMs: 20 },
    ]);
    expect(rules).toEqual([
      { queue: "emails", olderThanMs: 10 },
      { status: "failed", name: "report", olderThanMs: 20 },
    ]);
    expect(Object.isFrozen(rules)).toBe(true);
    expect(Object.isFrozen(rules[0])).toBe(true);
  });

  const invalid: [string, unknown, string, RegExp][] = [
    ["a negative cutoff", -1, "olderThanMs", /finite number of milliseconds from 0 to 3153600000000 \(MAX_DELAY_MS.*got -1/],
    ["a cutoff past MAX_DELAY_MS (now - cutoff would overflow a BIGINT)", 1e20, "olderThanMs", /from 0 to 3153600000000 \(MAX_DELAY_MS, 100 years.*got 100000000000000000000/],
    ["a map cutoff past MAX_DELAY_MS", { failed: Number.MAX_VALUE }, "olderThanMs.failed", /olderThanMs.failed must be .*MAX_DELAY_MS.*got 1.7976931348623157e\+308/],
    ["a rule cutoff past MAX_DELAY_MS", [{ olderThanMs: 3_153_600_000_001 }], "olderThanMs[0].olderThanMs", /MAX_DELAY_MS.*got 3153600000001/],
    ["an infinite cutoff", Number.POSITIVE_INFINITY, "olderThanMs", /got Infinity/],
    ["NaN", Number.NaN, "olderThanMs", /got NaN/],
    ["a string", "7d", "olderThanMs", /cutoff in ms.*got "7d"/],
    ["null", null, "olderThanMs", /got null/],
    ["missing", undefined, "olderThanMs", /got undefined/],
    ["an empty list", [], "olderThanMs", /rule list is empty/],
    ["an empty map", {}, "olderThanMs", /names no status/],
    ["a map naming a live status", { running: 1 }, "olderThanMs.running", /"running" is not a terminal status/],
    ["a map naming an unknown key", { done: 1 }, "olderThanMs.done", /not a terminal status/],
    ["a negative map cutoff", { failed: -5 }, "olderThanMs.failed", /got -5/],
    ["a map cutoff that is not a number", { failed: "1h" }, "olderThanMs.failed", /got "1h"/],
    ["a rule with a live status", [{ status: "queued", olderThanMs: 1 }], "olderThanMs[0].status", /terminal status.*got "queued"/],
    ["a rule without a cutoff", [{ queue: "q" }], "olderThanMs[0].olderThanMs", /got undefined/],
    ["a rule with a negative cutoff", [{ olderThanMs: 1 }, { olderThanMs: -1 }], "olderThanMs[1].olderThanMs", /got -1/],
    ["a rule with an empty queue", [{ queue: "", olderThanMs: 1 }], "olderThanMs[0].queue", /non-empty string/],
    ["a rule with a numeric name", [{ name: 5, olderThanMs: 1 }], "olderThanMs[0].name", /non-empty string.*got 5/],
    ["a rule with an unknown field", [{ statuses: ["failed"], olderThanMs: 1 }], "olderThanMs[0].statuses", /unknown field "statuses"/],
    ["a rule that is not an object", [7], "olderThanMs[0]", /must be an object/],
    ["a rule that is null", [null], "olderThanMs[0]", /got null/],
    ["a rule that is an array", [[1]], "olderThanMs[0]", /got an array/],
    ["a map cutoff that is an object", { failed: { ms: 1 } }, "olderThanMs.failed", /got an object/],
    ["a symbol", Symbol("week"), "olderThanMs", /got a symbol/],
  ];

  it.each(invalid)("rejects %s", (_label, policy, argument, message) => {
    let thrown: unknown;
    try {
      normalizeRetentionPolicy(policy);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidArgument);
    expect((thrown as InvalidArgument).argument).toBe(argument);
    expect((thrown as Error).message).toMatch(message);
  });
});
