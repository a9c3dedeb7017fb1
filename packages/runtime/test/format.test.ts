/** Times for people: durations, relative times and instants. */
import { describe, expect, it } from "vitest";
import { formatDuration, formatInstant, formatRelative, formatWhen } from "../src/format.js";

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

describe("formatting times", () => {
  it("durations take at most two units; relative times say in/ago", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_000)).toBe("12 s");
    expect(formatDuration(250_000)).toBe("4 min 10 s");
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000 + 7000)).toBe("3 h 5 min");
    expect(formatDuration(2 * 86_400_000)).toBe("2 d");
    expect(formatRelative(NOW + 300, NOW)).toBe("just now");
    expect(formatRelative(NOW - 90_000, NOW)).toBe("1 min 30 s ago");
    expect(formatRelative(NOW + 7_200_000, NOW)).toBe("in 2 h");
  });

  it("instants are ISO 8601 UTC, alone or with how far from now", () => {
    expect(formatInstant(NOW)).toBe("2026-12-01T10:00:00.000Z");
    expect(formatWhen(NOW + 300_000, NOW)).toBe("2026-12-01T10:05:00.000Z (in 5 min)");
  });
});
