import { describe, expect, it } from "vitest";
import { SleepWakeups, sleep } from "../src/index.js";

describe("plain-sleep wakeups", () => {
  it("sleep resolves after the timeout, or at once when aborted", async () => {
    const started = Date.now();
    await sleep(30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const controller = new AbortController();
    const pending = sleep(10_000, controller.signal);
    controller.abort();
    await pending;
    await sleep(-1);
    await sleep(Number.NaN);
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
