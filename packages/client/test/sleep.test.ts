import { describe, expect, it } from "vitest";
import { monotonicMs, sleep } from "../src/sleep.js";

describe("sleep", () => {
  it("resolves after the delay", async () => {
    const start = monotonicMs();
    await sleep(15);
    expect(monotonicMs() - start).toBeGreaterThanOrEqual(14);
  });

  it("resolves at once for a non-positive delay or an aborted signal, starting no timer", async () => {
    const start = monotonicMs();
    await sleep(0);
    await sleep(-5);
    await sleep(10_000, AbortSignal.abort());
    expect(monotonicMs() - start).toBeLessThan(50);
  });

  it("resolves early when the signal aborts, clearing its timer", async () => {
    const controller = new AbortController();
    const sleeping = sleep(10_000, controller.signal);
    controller.abort();
    await expect(sleeping).resolves.toBeUndefined();
  });
});
