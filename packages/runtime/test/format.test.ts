/** Times for people: durations, relative times and instants. */
import { describe, expect, it } from "vitest";
import { formatDuration, formatInstant, formatRelative, formatWhen } from "../src/format.js";

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

describe("formatting times", () => {
  it("durations take at most two units, rounded down; relative times say in/ago", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_000)).toBe("12 s");
    expect(formatDuration(250_000)).toBe("4 min 10 s");
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000 + 7000)).toBe("3 h 5 min");
    expect(formatDuration(2 * 86_400_000)).toBe("2 d");
    expect(formatDuration(1500)).toBe("1 s");
    expect(formatDuration(59_999, "down")).toBe("59 s");
    expect(formatRelative(NOW + 300, NOW)).toBe("just now");
    expect(formatRelative(NOW - 90_000, NOW)).toBe("1 min 30 s ago");
    expect(formatRelative(NOW + 7_200_000, NOW)).toBe("in 2 h");
  });

  it("exact: a length shown as it is, every unit needed, seconds with their milliseconds", () => {
    expect(formatDuration(850, "exact")).toBe("850 ms");
    expect(formatDuration(1500, "exact")).toBe("1.5 s");
    expect(formatDuration(2500, "exact")).toBe("2.5 s");
    expect(formatDuration(59_999, "exact")).toBe("59.999 s");
    expect(formatDuration(60_000, "exact")).toBe("1 min");
    expect(formatDuration(90_500, "exact")).toBe("1 min 30.5 s");
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000 + 7000, "exact")).toBe("3 h 5 min 7 s");
    expect(formatDuration(86_400_000 + 1, "exact")).toBe("1 d 0.001 s");
  });

  it("up: never less than the duration — tenths of a second below a minute, else the last of two units rounded up", () => {
    expect(formatDuration(420, "up")).toBe("420 ms");
    expect(formatDuration(999.2, "up")).toBe("1 s");
    expect(formatDuration(2670, "up")).toBe("2.7 s");
    expect(formatDuration(3000, "up")).toBe("3 s");
    expect(formatDuration(41_500, "up")).toBe("41.5 s");
    expect(formatDuration(59_901, "up")).toBe("1 min");
    expect(formatDuration(61_000, "up")).toBe("1 min 1 s");
    expect(formatDuration(61_001, "up")).toBe("1 min 2 s");
    expect(formatDuration(3_599_001, "up")).toBe("1 h");
    expect(formatDuration(3_600_001, "up")).toBe("1 h 1 min");
    expect(formatDuration(86_399_999, "up")).toBe("1 d");
    expect(formatDuration(2 * 86_400_000 + 1, "up")).toBe("2 d 1 h");
    expect(formatDuration(-2670, "up")).toBe("2.7 s");
  });

  it("instants are ISO 8601 UTC, alone or with how far from now", () => {
    expect(formatInstant(NOW)).toBe("2026-12-01T10:00:00.000Z");
    expect(formatWhen(NOW + 300_000, NOW)).toBe("2026-12-01T10:05:00.000Z (in 5 min)");
  });

  it("an instant no Date holds (a v1 peer's run_at_ms) is shown as the number read, never thrown on", () => {
    // 9223372036854775807 as a driver reads it into a number.
    expect(formatInstant(Number("9223372036854775807"))).toBe("9223372036854776000 ms since the epoch (beyond the year 275760)");
    expect(formatInstant(8_640_000_000_000_001)).toBe("8640000000000001 ms since the epoch (beyond the year 275760)");
    expect(formatInstant(-8_640_000_000_000_001)).toBe("-8640000000000001 ms since the epoch (before the year -271821)");
    expect(formatInstant(Number.NaN)).toBe("NaN ms since the epoch (not a number)");
    expect(formatWhen(8_640_000_000_000_001, NOW)).toBe("8640000000000001 ms since the epoch (beyond the year 275760)");
    // The last instant a Date holds is still a date.
    expect(formatInstant(8_640_000_000_000_000)).toBe("+275760-09-13T00:00:00.000Z");
  });
});
