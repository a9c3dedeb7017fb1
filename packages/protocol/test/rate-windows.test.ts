import { describe, expect, it } from "vitest";
import { hasFlowReads, rateWindowAt, rateWindowFull, rateWindowOf } from "../src/rate-windows.js";

describe("rate windows", () => {
  const limit = { max: 2, perMs: 1000 };

  it("rateWindowOf: room again when the max-th newest claim leaves; room now below max", () => {
    expect(rateWindowOf(limit, 2, 5_400)).toEqual({ limit, claims: 2, roomAtMs: 6_400 });
    expect(rateWindowOf(limit, 3, 5_400)).toEqual({ limit, claims: 3, roomAtMs: 6_400 });
    expect(rateWindowOf(limit, 1, null)).toEqual({ limit, claims: 1, roomAtMs: null });
    // A claim that left between the count and the read of the max-th newest: room now.
    expect(rateWindowOf(limit, 2, null)).toEqual({ limit, claims: 2, roomAtMs: null });
  });

  it("rateWindowAt counts the claims inside (now − perMs, now] and picks the max-th newest of them", () => {
    // At 5900, 4900 is outside the window (claimed_at_ms > now − perMs); 5400 is the 2nd newest of 4950, 5400, 5600.
    expect(rateWindowAt(limit, [4900, 5600, 4950, 5400], 5_900)).toEqual({ limit, claims: 3, roomAtMs: 6_400 });
    expect(rateWindowAt(limit, [4000, 5600], 5_900)).toEqual({ limit, claims: 1, roomAtMs: null });
    expect(rateWindowAt(limit, [], 5_900)).toEqual({ limit, claims: 0, roomAtMs: null });
  });

  it("rateWindowFull: at its limit and before the instant it has room again", () => {
    const full = rateWindowOf(limit, 2, 5_400);
    expect(rateWindowFull(full, 6_399)).toBe(true);
    expect(rateWindowFull(full, 6_400)).toBe(false);
    expect(rateWindowFull(rateWindowOf(limit, 1, null), 0)).toBe(false);
    expect(rateWindowFull(null, 0)).toBe(false);
  });

  it("hasFlowReads needs the flowControl capability and rateWindow", () => {
    const rateWindow = async () => null;
    expect(hasFlowReads({ capabilities: { flowControl: true }, rateWindow } as never)).toBe(true);
    expect(hasFlowReads({ capabilities: { flowControl: false }, rateWindow } as never)).toBe(false);
    expect(hasFlowReads({ capabilities: { flowControl: true } })).toBe(false);
  });
});
