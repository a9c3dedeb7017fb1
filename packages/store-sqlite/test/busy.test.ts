import { describe, expect, it } from "vitest";
import { CairnQError } from "@cairnq/protocol";
import { busyDelayMs, isBusyError, retryBusy } from "../src/busy.js";
import type * as BusyModule from "../src/busy.js";
import { DatabaseBusy } from "../src/index.js";

describe("SQLITE_BUSY handling (§13)", () => {
  it("DatabaseBusy passes instanceof across two copies of the package (a registry-symbol brand)", async () => {
    const specifier = "../src/busy.ts?second-copy";
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof BusyModule;
    expect(copy.DatabaseBusy).not.toBe(DatabaseBusy);
    const theirs = new copy.DatabaseBusy("/x.db", 100, new Error("database is locked"));
    expect(theirs).toBeInstanceOf(DatabaseBusy);
    expect(theirs).toBeInstanceOf(CairnQError);
    expect(new DatabaseBusy("/x.db", 100, null)).toBeInstanceOf(copy.DatabaseBusy);
    expect(new CairnQError("x")).not.toBeInstanceOf(copy.DatabaseBusy);
    expect(theirs.name).toBe("DatabaseBusy");
  });

  it("backs off 1 ms doubling to 50 ms, × U[0.5, 1.5)", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => busyDelayMs(n, () => 0.5))).toEqual([1, 2, 4, 8, 16, 32, 50, 50, 50]);
    expect(busyDelayMs(1, () => 0)).toBe(0.5);
    expect(busyDelayMs(7, () => 0.999)).toBeCloseTo(74.95);
  });

  it("treats SQLITE_BUSY* as busy, not SQLITE_LOCKED; retryBusy gives up after its budget", async () => {
    expect(isBusyError({ code: "SQLITE_BUSY" })).toBe(true);
    expect(isBusyError({ code: "SQLITE_BUSY_SNAPSHOT" })).toBe(true);
    expect(isBusyError({ code: "SQLITE_LOCKED" })).toBe(false);
    expect(isBusyError(null)).toBe(false);
    let calls = 0;
    const busy = Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
    const err = await retryBusy(
      async () => {
        calls += 1;
        throw busy;
      },
      "/x.db",
      30,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseBusy);
    expect((err as DatabaseBusy).cause).toBe(busy);
    expect(calls).toBeGreaterThan(2);
    let attempts = 0;
    expect(
      await retryBusy(
        async () => {
          attempts += 1;
          if (attempts < 3) throw busy;
          return "ok";
        },
        "/x.db",
        1000,
      ),
    ).toBe("ok");
  });
});
