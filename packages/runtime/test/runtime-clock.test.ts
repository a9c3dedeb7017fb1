import { describe, expect, it, vi } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import type { RuntimeClock, TimerHandle } from "@cairnq/runtime";
import { optionalClock, sleepOn, systemClock } from "@cairnq/runtime";

describe("systemClock", () => {
  it("reads Date.now() and runs Node's timers, looked up at each call so fake timers apply", async () => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
    try {
      expect(systemClock.now()).toBe(1_700_000_000_000);
      const fired = vi.fn();
      systemClock.startTimer(fired, 1000);
      const slept = systemClock.sleep(2000).then(() => "slept");
      await vi.advanceTimersByTimeAsync(1000);
      expect(fired).toHaveBeenCalledTimes(1);
      expect(systemClock.now()).toBe(1_700_000_001_000);
      await vi.advanceTimersByTimeAsync(1000);
      expect(await slept).toBe("slept");
    } finally {
      vi.useRealTimers();
    }
  });

  it("is frozen: nobody swaps the default clock under every worker of the process", () => {
    expect(Object.isFrozen(systemClock)).toBe(true);
  });
});

describe("optionalClock", () => {
  it("gives the system clock for undefined and returns any object with the four methods", () => {
    expect(optionalClock(undefined, "clock")).toBe(systemClock);
    const custom: RuntimeClock = { ...systemClock, now: () => 5 };
    expect(optionalClock(custom, "clock")).toBe(custom);
  });

  it("rejects a store-style () => number, naming the difference", () => {
    expect(() => optionalClock(() => 5, "clock")).toThrow(InvalidArgument);
    expect(() => optionalClock(() => 5, "clock")).toThrow(/not a function; a bare \(\) => number is what a store's clock option takes/);
  });

  it("rejects an object lacking a method, naming what it lacks, and non-objects", () => {
    expect(() => optionalClock({ now: () => 1, monotonicMs: () => 1 }, "clock")).toThrow(/lacks startTimer, sleep$/);
    expect(() => optionalClock(null, "clock")).toThrow(/got null$/);
    expect(() => optionalClock(42, "clock")).toThrow(/got number$/);
  });
});

describe("sleepOn", () => {
  /** A timer that fires only when the test says so. */
  function manual(): { start: (cb: () => void, ms: number) => TimerHandle; fire(): void; cleared: number } {
    let callback: (() => void) | null = null;
    const state = {
      cleared: 0,
      start: (cb: () => void): TimerHandle => {
        callback = cb;
        return {
          clear: () => {
            state.cleared += 1;
            callback = null;
          },
          fired: false,
        };
      },
      fire: () => callback?.(),
    };
    return state;
  }

  it("gives any timer sleep's semantics: resolves when it fires, at once for ms ≤ 0", async () => {
    const timer = manual();
    let done = false;
    const slept = sleepOn(timer.start, 100).then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    timer.fire();
    await slept;
    expect(done).toBe(true);
    await sleepOn(manual().start, 0);
  });

  it("an abort clears the timer and resolves, or rejects with the reason under rejectOnAbort", async () => {
    const timer = manual();
    const controller = new AbortController();
    const slept = sleepOn(timer.start, 100, { signal: controller.signal });
    controller.abort();
    await slept;
    expect(timer.cleared).toBe(1);
    const again = new AbortController();
    const rejecting = sleepOn(manual().start, 100, { signal: again.signal, rejectOnAbort: true });
    again.abort(new Error("stop"));
    await expect(rejecting).rejects.toThrow("stop");
  });
});
