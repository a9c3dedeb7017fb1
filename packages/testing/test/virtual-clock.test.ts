import { describe, expect, it } from "vitest";
import { InvalidArgument, MAX_DELAY_MS } from "@cairnq/protocol";
import { VirtualClock } from "@cairnq/testing";

const START = Date.UTC(2030, 0, 1);

describe("VirtualClock", () => {
  it("stands still until advanced; advance moves the wall and the monotonic readings together", async () => {
    const clock = new VirtualClock({ now: new Date(START) });
    expect(clock.now()).toBe(START);
    expect(clock.monotonicMs()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(clock.now()).toBe(START);
    await clock.advance(86_400_000);
    expect(clock.now()).toBe(START + 86_400_000);
    expect(clock.monotonicMs()).toBe(86_400_000);
  });

  it("starts at the system clock's now unless told otherwise", () => {
    const before = Date.now();
    const now = new VirtualClock().now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it("fires due timers in due order (ties in start order), each at its own time, and no others", async () => {
    const clock = new VirtualClock({ now: START });
    const fired: [string, number][] = [];
    const at = (label: string) => () => fired.push([label, clock.now() - START]);
    clock.startTimer(at("c"), 300);
    clock.startTimer(at("a"), 100);
    clock.startTimer(at("b1"), 200);
    clock.startTimer(at("b2"), 200);
    clock.startTimer(at("late"), 1000);
    await clock.advance(300);
    expect(fired).toEqual([
      ["a", 100],
      ["b1", 200],
      ["b2", 200],
      ["c", 300],
    ]);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAtMs()).toBe(START + 1000);
  });

  it("lets the promises a timer sets off run before the next timer fires", async () => {
    const clock = new VirtualClock({ now: START });
    const order: string[] = [];
    clock.startTimer(() => {
      void Promise.resolve()
        .then(() => new Promise((resolve) => setImmediate(resolve)))
        .then(() => order.push("first's follow-up"));
      order.push("first");
    }, 10);
    clock.startTimer(() => order.push("second"), 20);
    await clock.advance(20);
    expect(order).toEqual(["first", "first's follow-up", "second"]);
  });

  it("a timer started while advancing fires in the same advance when it falls due within it", async () => {
    const clock = new VirtualClock({ now: START });
    const ticks: number[] = [];
    const tick = (): void => {
      ticks.push(clock.monotonicMs());
      clock.startTimer(tick, 1000);
    };
    clock.startTimer(tick, 1000);
    await clock.advance(5500);
    expect(ticks).toEqual([1000, 2000, 3000, 4000, 5000]);
    expect(clock.monotonicMs()).toBe(5500);
  });

  it("sleep resolves when its time comes, early on abort, and rejects under rejectOnAbort", async () => {
    const clock = new VirtualClock({ now: START });
    let slept = false;
    const sleeping = clock.sleep(60_000).then(() => (slept = true));
    await clock.advance(59_999);
    expect(slept).toBe(false);
    await clock.advance(1);
    await sleeping;
    expect(slept).toBe(true);

    const controller = new AbortController();
    const aborted = clock.sleep(60_000, { signal: controller.signal });
    controller.abort();
    await aborted;
    expect(clock.pendingTimers).toBe(0);
    const again = new AbortController();
    const rejecting = clock.sleep(60_000, { signal: again.signal, rejectOnAbort: true });
    again.abort(new Error("stopped"));
    await expect(rejecting).rejects.toThrow("stopped");
  });

  it("clear() and an abort cancel a timer; a signal already aborted starts nothing", async () => {
    const clock = new VirtualClock({ now: START });
    const fired: string[] = [];
    const cleared = clock.startTimer(() => fired.push("cleared"), 10);
    const controller = new AbortController();
    clock.startTimer(() => fired.push("aborted"), 10, { signal: controller.signal });
    const dead = AbortSignal.abort();
    expect(clock.startTimer(() => fired.push("dead"), 10, { signal: dead }).fired).toBe(false);
    cleared.clear();
    cleared.clear();
    controller.abort();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(100);
    expect(fired).toEqual([]);
    expect(cleared.fired).toBe(false);
  });

  it("a timer due now fires on the next event-loop turn without an advance, as Node's would", async () => {
    const clock = new VirtualClock({ now: START });
    const timer = clock.startTimer(() => {}, 0);
    expect(timer.fired).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(timer.fired).toBe(true);
    expect(clock.now()).toBe(START);
  });

  it("honours any duration: 30 days means 30 days", async () => {
    const clock = new VirtualClock({ now: START });
    const day = 86_400_000;
    const timer = clock.startTimer(() => {}, 30 * day);
    await clock.advance(30 * day - 1);
    expect(timer.fired).toBe(false);
    await clock.advance(1);
    expect(timer.fired).toBe(true);
  });

  it("set() moves the wall clock only: no timer fires and monotonic time stays", async () => {
    const clock = new VirtualClock({ now: START });
    const timer = clock.startTimer(() => {}, 1000);
    clock.set(new Date(START + 86_400_000));
    expect(clock.now()).toBe(START + 86_400_000);
    expect(clock.monotonicMs()).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(timer.fired).toBe(false);
    expect(clock.nextTimerAtMs()).toBe(START + 86_400_000 + 1000);
    clock.set(START - 5000);
    expect(clock.now()).toBe(START - 5000);
    await clock.advance(1000);
    expect(timer.fired).toBe(true);
    expect(clock.now()).toBe(START - 4000);
  });

  it("advances one after another when called together", async () => {
    const clock = new VirtualClock({ now: START });
    const seen: number[] = [];
    clock.startTimer(() => seen.push(clock.monotonicMs()), 150);
    await Promise.all([clock.advance(100), clock.advance(100)]);
    expect(seen).toEqual([150]);
    expect(clock.monotonicMs()).toBe(200);
  });

  it("rejects a negative or non-finite advance and a bad start", async () => {
    const clock = new VirtualClock();
    await expect(clock.advance(-1)).rejects.toThrow(InvalidArgument);
    await expect(clock.advance(Number.POSITIVE_INFINITY)).rejects.toThrow(InvalidArgument);
    expect(() => new VirtualClock({ now: Number.NaN })).toThrow(InvalidArgument);
    expect(() => clock.set(new Date("not a date"))).toThrow(InvalidArgument);
  });

  it("takes an advance of an integer number of ms up to MAX_DELAY_MS, and says what it got otherwise", async () => {
    const clock = new VirtualClock({ now: START });
    await expect(clock.advance("10" as never)).rejects.toThrow(
      new InvalidArgument("ms", `advance(ms) takes an integer number of milliseconds from 0 to ${MAX_DELAY_MS} (MAX_DELAY_MS, 100 years: the bound of every delay in CairnQ), got the string "10"`),
    );
    await expect(clock.advance(2 ** 53)).rejects.toThrow(/from 0 to 3153600000000 \(MAX_DELAY_MS, 100 years.*got 9007199254740992, which is over that bound$/);
    await expect(clock.advance(1.5)).rejects.toThrow(/an integer number of milliseconds .* got 1\.5$/);
    await expect(clock.advance(10n as never)).rejects.toThrow(/got the bigint 10n/);
    expect(clock.now()).toBe(START);
    await clock.advance(MAX_DELAY_MS);
    expect(clock.now()).toBe(START + MAX_DELAY_MS);
  });

  it("keeps the wall clock within a Date's range: no advance, set or start past it", async () => {
    const lastMs = 8_640_000_000_000_000;
    const clock = new VirtualClock({ now: lastMs - 1000 });
    await expect(clock.advance(1001)).rejects.toThrow(/past the last instant a JavaScript Date holds \(8640000000000000\)/);
    await clock.advance(1000);
    expect(new Date(clock.now()).getTime()).toBe(lastMs);
    expect(() => clock.set(lastMs + 1)).toThrow(/within a Date's range .* got 8640000000000001$/);
    expect(() => new VirtualClock({ now: "2030-01-01" as never })).toThrow(/got the string "2030-01-01"$/);
    expect(() => clock.set(START + 0.5)).toThrow(InvalidArgument);
  });

  it("an advance rejects with the error a timer threw; later timers stay pending", async () => {
    const clock = new VirtualClock({ now: START });
    clock.startTimer(() => {
      throw new Error("boom");
    }, 10);
    const later = clock.startTimer(() => {}, 20);
    await expect(clock.advance(30)).rejects.toThrow("boom");
    expect(later.fired).toBe(false);
    await clock.advance(30);
    expect(later.fired).toBe(true);
  });
});
