/**
 * Fails any test that leaves a timer behind — ref'd or unref'd: a sleep not
 * cleared or a watch not stopped would hold a real process open, or wake it
 * for nothing. (`process.getActiveResourcesInfo()` cannot see unref'd timers,
 * so the global timer functions are wrapped for the duration of each test.)
 */
import { afterEach, beforeEach, expect } from "vitest";

type AnyFn = (...args: unknown[]) => void;

const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
};
const live = new Map<unknown, string>();

function describeCaller(): string {
  return (new Error().stack ?? "").split("\n").slice(3, 6).join("\n");
}

beforeEach(() => {
  live.clear();
  globalThis.setTimeout = ((fn: AnyFn, ms?: number, ...args: unknown[]) => {
    const timer = real.setTimeout(
      (...a: unknown[]) => {
        live.delete(timer);
        fn(...a);
      },
      ms,
      ...args,
    );
    live.set(timer, describeCaller());
    return timer;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((timer: NodeJS.Timeout | undefined) => {
    live.delete(timer);
    real.clearTimeout(timer);
  }) as typeof clearTimeout;
  globalThis.setInterval = ((fn: AnyFn, ms?: number, ...args: unknown[]) => {
    const timer = real.setInterval(fn, ms, ...args);
    live.set(timer, describeCaller());
    return timer;
  }) as typeof setInterval;
  globalThis.clearInterval = ((timer: NodeJS.Timeout | undefined) => {
    live.delete(timer);
    real.clearInterval(timer);
  }) as typeof clearInterval;
});

afterEach(() => {
  Object.assign(globalThis, real);
  const left = [...live.values()];
  live.clear();
  expect(left, "timers left open by this test (created at)").toEqual([]);
});
