/**
 * Keyed submits issued together from one store (not awaited) end on the one
 * issued last (debounce, `replace`) or first (`reuse`), as awaited ones do.
 */
import { runKeyedIssueOrder } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { openStore } from "../helpers.js";

/** Bursts per mode. */
const BURSTS = 5;

describe("keyed submits issued together from one SQLite store", () => {
  it("are applied in call order: debounce and replace keep the last payload, reuse the first", async () => {
    const report = await runKeyedIssueOrder(openStore(), BURSTS);
    expect(report).toEqual({ debounce: Array(BURSTS).fill(report.last), replace: Array(BURSTS).fill(report.last), reuse: Array(BURSTS).fill(1), last: 20 });
  }, 60_000);
});
