import { afterEach, describe, expect, it, vi } from "vitest";
import { sleepUnref, yieldToEventLoop } from "../src/timers.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("sleepUnref", () => {
  it("sleeps past Node's timer range in chunks instead of firing at once", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let done = false;
    const total = 2_147_483_647 + 5_000;
    void sleepUnref(total, new AbortController().signal).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(2_147_483_647);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("resolves at once on an aborted signal and clears its timer on abort", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const aborted = AbortSignal.abort();
    await sleepUnref(60_000, aborted);
    const controller = new AbortController();
    const sleeping = sleepUnref(60_000, controller.signal);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort();
    await sleeping;
    expect(vi.getTimerCount()).toBe(0);
  });

  it("unrefs its timer so it never keeps the process alive", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const controller = new AbortController();
    const sleeping = sleepUnref(60_000, controller.signal);
    const timer = spy.mock.results[0]?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    controller.abort();
    await sleeping;
    spy.mockRestore();
  });
});

describe("yieldToEventLoop", () => {
  it("lets a due timer run before it resolves", async () => {
    let fired = false;
    setTimeout(() => (fired = true), 0);
    const start = Date.now();
    while (!fired && Date.now() - start < 1_000) await yieldToEventLoop();
    expect(fired).toBe(true);
  });
});
