import { describe, expect, it } from "vitest";
import { hasFlowReads, holdingRateWindow, RATE_LIMIT_REFRESH_MS, RATE_LIMIT_SCOPES, rateLimitRowDue, rateWindowAt, rateWindowFull, rateWindowOf } from "../src/rate-windows.js";

describe("rate windows", () => {
  const limit = { max: 2, perMs: 1000 };

  it("rateWindowOf: room again when the max-th newest claim leaves; room now below max; read at the store's clock", () => {
    expect(rateWindowOf(limit, 2, 5_400, 5_900)).toEqual({ limit, claims: 2, roomAtMs: 6_400, readAtMs: 5_900 });
    expect(rateWindowOf(limit, 3, 5_400, 5_900)).toEqual({ limit, claims: 3, roomAtMs: 6_400, readAtMs: 5_900 });
    expect(rateWindowOf(limit, 1, null, 5_900)).toEqual({ limit, claims: 1, roomAtMs: null, readAtMs: 5_900 });
    // A claim that left between the count and the read of the max-th newest: room now.
    expect(rateWindowOf(limit, 2, null, 5_900)).toEqual({ limit, claims: 2, roomAtMs: null, readAtMs: 5_900 });
  });

  it("rateWindowAt counts the claims inside (now − perMs, now] and picks the max-th newest of them", () => {
    // At 5900, 4900 is outside the window (claimed_at_ms > now − perMs); 5400 is the 2nd newest of 4950, 5400, 5600.
    expect(rateWindowAt(limit, [4900, 5600, 4950, 5400], 5_900)).toEqual({ limit, claims: 3, roomAtMs: 6_400, readAtMs: 5_900 });
    expect(rateWindowAt(limit, [4000, 5600], 5_900)).toEqual({ limit, claims: 1, roomAtMs: null, readAtMs: 5_900 });
    expect(rateWindowAt(limit, [], 5_900)).toEqual({ limit, claims: 0, roomAtMs: null, readAtMs: 5_900 });
  });

  it("rateWindowFull: full when read at its limit (it has a room-again instant), whatever a client's clock says", () => {
    expect(rateWindowFull(rateWindowOf(limit, 2, 5_400, 5_900))).toBe(true);
    expect(rateWindowFull(rateWindowOf(limit, 1, null, 5_900))).toBe(false);
    expect(rateWindowFull(null)).toBe(false);
  });

  it("holdingRateWindow: the full one; of two full, the one with room last (the group's on a tie); none with room", () => {
    const full = (roomAtMs: number) => rateWindowOf(limit, 2, roomAtMs - limit.perMs, 5_900);
    const room = rateWindowOf(limit, 1, null, 5_900);
    expect(holdingRateWindow(full(6_400), room)).toEqual({ of: RATE_LIMIT_SCOPES.name, window: full(6_400) });
    expect(holdingRateWindow(null, full(6_400))).toEqual({ of: "group", window: full(6_400) });
    expect(holdingRateWindow(full(6_500), full(6_400))?.of).toBe("name");
    expect(holdingRateWindow(full(6_400), full(6_500))?.of).toBe("group");
    expect(holdingRateWindow(full(6_400), full(6_400))?.of).toBe("group");
    expect(holdingRateWindow(room, room)).toBeNull();
    expect(holdingRateWindow(null, null)).toBeNull();
  });

  it("hasFlowReads needs the flowControl capability and rateWindows", () => {
    const rateWindows = async () => ({ name: null, group: null });
    expect(hasFlowReads({ capabilities: { flowControl: true }, rateWindows } as never)).toBe(true);
    expect(hasFlowReads({ capabilities: { flowControl: false }, rateWindows } as never)).toBe(false);
    expect(hasFlowReads({ capabilities: { flowControl: true } })).toBe(false);
  });
});

describe("rateLimitRowDue", () => {
  it("is due when nothing was written, when the limit differs, and once RATE_LIMIT_REFRESH_MS passed", () => {
    const limit = { max: 2, perMs: 1000 };
    expect(rateLimitRowDue(undefined, limit, 0)).toBe(true);
    const last = { max: 2, perMs: 1000, atMs: 100 };
    expect(rateLimitRowDue(last, limit, 100 + RATE_LIMIT_REFRESH_MS - 1)).toBe(false);
    expect(rateLimitRowDue(last, limit, 100 + RATE_LIMIT_REFRESH_MS)).toBe(true);
    expect(rateLimitRowDue(last, { max: 3, perMs: 1000 }, 200)).toBe(true);
    expect(rateLimitRowDue(last, { max: 2, perMs: 999 }, 200)).toBe(true);
  });
});
