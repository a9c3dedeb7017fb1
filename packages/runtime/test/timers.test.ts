import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_TIMER_MS, monotonicMs, nextTurn, sleep, startTimer } from "@cairnq/runtime";

afterEach(() => {
  vi.useRealTimers();
});

describe("startTimer", () => {
  it("honours a delay of 2^31 ms and more (a single Node timer would fire after ~1 ms)", () => {
    vi.useFakeTimers();
    const raw = vi.fn();
    // The hazard itself, so this test proves something: one timer past the limit fires almost at once.
    setTimeout(raw, 2 ** 31);
    const chained = vi.fn();
    startTimer(chained, 2 ** 31 + 5);
    vi.advanceTimersByTime(10);
    expect(raw).toHaveBeenCalledTimes(1);
    expect(chained).not.toHaveBeenCalled();
    vi.advanceTimersByTime(2 ** 31 + 5 - 10 - 1);
    expect(chained).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(chained).toHaveBeenCalledTimes(1);
  });

  it("thirty days means thirty days", () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const day = 24 * 3600_000;
    const timer = startTimer(fired, 30 * day);
    vi.advanceTimersByTime(30 * day - 1);
    expect(fired).not.toHaveBeenCalled();
    expect(timer.fired).toBe(false);
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    expect(timer.fired).toBe(true);
  });

  it("clear() and an abort cancel it, also in a later link of the chain", () => {
    vi.useFakeTimers();
    const a = vi.fn();
    const handle = startTimer(a, 2 ** 32);
    vi.advanceTimersByTime(MAX_TIMER_MS + 1);
    handle.clear();
    handle.clear();
    vi.advanceTimersByTime(2 ** 33);
    expect(a).not.toHaveBeenCalled();

    const b = vi.fn();
    const controller = new AbortController();
    startTimer(b, 100, { signal: controller.signal });
    controller.abort();
    vi.advanceTimersByTime(200);
    expect(b).not.toHaveBeenCalled();

    const c = vi.fn();
    const aborted = AbortSignal.abort();
    expect(startTimer(c, 10, { signal: aborted }).fired).toBe(false);
    vi.advanceTimersByTime(20);
    expect(c).not.toHaveBeenCalled();
  });

  it("leaves no abort listener behind once it fired or was cleared", () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const fired = vi.fn();
    const timer = startTimer(fired, 2 ** 31 + 5, { signal: controller.signal });
    const cleared = startTimer(fired, 100, { signal: controller.signal });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(2);
    cleared.clear();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    vi.advanceTimersByTime(2 ** 31 + 5);
    expect(fired).toHaveBeenCalledTimes(1);
    expect(timer.fired).toBe(true);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    controller.abort();
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it("a delay of 0 or less (or NaN) fires on the next timer turn", () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    startTimer(fired, -5);
    startTimer(fired, Number.NaN);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(0);
    expect(fired).toHaveBeenCalledTimes(2);
  });

  it("unref: an unref'd timer does not hold the process (hasRef false)", () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const handle = startTimer(() => {}, 1000, { unref: true });
    const timer = spy.mock.results[0]?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    handle.clear();
    const ref = startTimer(() => {}, 1000);
    expect((spy.mock.results[1]?.value as NodeJS.Timeout).hasRef()).toBe(true);
    ref.clear();
    spy.mockRestore();
  });
});

describe("sleep", () => {
  it("resolves after the duration, chained past 2^31 ms", async () => {
    vi.useFakeTimers();
    let done = false;
    const slept = sleep(2 ** 31 + 1000).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(2 ** 31);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    await slept;
    expect(done).toBe(true);
  });

  it("resolves at once on abort by default, and rejects with the reason under rejectOnAbort", async () => {
    const controller = new AbortController();
    const resolved = sleep(60_000, { signal: controller.signal });
    const reason = new Error("stop");
    const rejected = sleep(60_000, { signal: controller.signal, rejectOnAbort: true });
    controller.abort(reason);
    await expect(resolved).resolves.toBeUndefined();
    await expect(rejected).rejects.toBe(reason);
    await expect(sleep(10, { signal: controller.signal })).resolves.toBeUndefined();
    await expect(sleep(10, { signal: controller.signal, rejectOnAbort: true })).rejects.toBe(reason);
  });

  it("resolves at once for 0, negative and NaN durations", async () => {
    await expect(sleep(0)).resolves.toBeUndefined();
    await expect(sleep(-1)).resolves.toBeUndefined();
    await expect(sleep(Number.NaN)).resolves.toBeUndefined();
  });

  it("removes its abort listener when it ends normally", async () => {
    const controller = new AbortController();
    const remove = vi.spyOn(controller.signal, "removeEventListener");
    await sleep(1, { signal: controller.signal, unref: true });
    expect(remove).toHaveBeenCalledTimes(1);
  });
});

describe("nextTurn and monotonicMs", () => {
  it("nextTurn runs after already-due immediates", async () => {
    const order: string[] = [];
    setImmediate(() => order.push("immediate"));
    await nextTurn();
    order.push("after");
    expect(order).toEqual(["immediate", "after"]);
  });

  it("monotonicMs does not go backwards", () => {
    const a = monotonicMs();
    expect(monotonicMs()).toBeGreaterThanOrEqual(a);
  });
});
