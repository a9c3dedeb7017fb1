import { describe, expect, it, vi } from "vitest";
import { SleepWakeups } from "../src/index.js";

describe("plain-sleep wakeups", () => {
  it("claimWake and taskDoneWake sleep their timeout, past 2^31 ms too, on unref'd timers", async () => {
    vi.useFakeTimers();
    try {
      const wakeups = new SleepWakeups();
      let woke = false;
      const waiting = wakeups.claimWake(["q"], 2 ** 31 + 10).then(() => {
        woke = true;
      });
      await vi.advanceTimersByTimeAsync(2 ** 31);
      expect(woke).toBe(false);
      await vi.advanceTimersByTimeAsync(10);
      await waiting;
      expect(woke).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("claimWake and taskDoneWake sleep; subscribe never calls back", async () => {
    const wakeups = new SleepWakeups();
    const controller = new AbortController();
    controller.abort();
    await wakeups.claimWake(["q"], 10_000, controller.signal);
    await wakeups.taskDoneWake("t", 10_000, controller.signal);
    let called = false;
    const stop = wakeups.subscribe(() => {
      called = true;
    });
    stop();
    expect(called).toBe(false);
  });
});
