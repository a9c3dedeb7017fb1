/**
 * The clock seam: where the client and the worker read the time and start
 * their timers. In production that is the system clock; a test passes a
 * virtual clock (`@cairnq/testing`) that it moves by hand, so a backoff, a
 * lease, a one-day delay or a schedule is tested without waiting for it.
 *
 * A clock has two readings, as the system does: the wall clock (`now`, epoch
 * ms: what rows and events are stamped with) and a monotonic one
 * (`monotonicMs`: what deadlines are measured on, so they do not move when
 * the wall clock is set). Timers run on the monotonic line.
 *
 * It is a `RuntimeClock`, not a `Clock`: `@cairnq/protocol` already names
 * a rule's clock (`"statement" | "transaction"`) `Clock`, and one name has
 * one meaning across the packages.
 */
import { InvalidArgument } from "@cairnq/protocol";
import type { SleepOptions, TimerHandle, TimerOptions } from "./timers.js";
import { monotonicMs, sleep, startTimer } from "./timers.js";

/**
 * A source of time and timers with the contracts of this package's
 * {@link startTimer} and {@link sleep}: any duration honoured, an abort
 * cancels, `unref` lets the process exit.
 *
 * @example
 * ```ts
 * function pause(clock: RuntimeClock, signal: AbortSignal): Promise<void> {
 *   return clock.sleep(500, { signal, unref: true });
 * }
 * ```
 */
export interface RuntimeClock {
  /** The wall clock in epoch milliseconds (what `Date.now()` is to the system clock). */
  now(): number;
  /** Milliseconds on a monotonic line, for deadlines and elapsed times (what `performance.now()` is to the system clock). */
  monotonicMs(): number;
  /** Calls `callback` once, `ms` from now on this clock; see {@link startTimer}. */
  startTimer(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  /** Resolves `ms` from now on this clock, or on abort; see {@link sleep}. */
  sleep(ms: number, options?: SleepOptions): Promise<void>;
}

/**
 * The system clock: `Date.now()`, `performance.now()` and Node's timers
 * (chained past 2^31 ms). The default everywhere a clock is an option. Each
 * reading looks the global up when it is made, so test tools that replace
 * `Date` or the timer functions (`vi.useFakeTimers()`) still apply.
 *
 * @example
 * ```ts
 * const clock = options.clock ?? systemClock;
 * const startedAtMs = clock.now();
 * ```
 */
export const systemClock: RuntimeClock = Object.freeze({
  now: (): number => Date.now(),
  monotonicMs,
  startTimer,
  sleep,
});

const CLOCK_METHODS = ["now", "monotonicMs", "startTimer", "sleep"] as const;

/**
 * Checks a `clock` option: `undefined` gives {@link systemClock}; anything
 * that is not a {@link RuntimeClock} (an object with `now`, `monotonicMs`,
 * `startTimer` and `sleep`) is an `InvalidArgument` — a bare `() => number`,
 * which is what a store's `clock` option takes, is named as such.
 *
 * @param argument - The option's name, for the message.
 * @throws InvalidArgument when `value` is not a clock.
 * @example
 * ```ts
 * const clock = optionalClock(options.clock, "clock");
 * ```
 */
export function optionalClock(value: unknown, argument: string): RuntimeClock {
  if (value === undefined) return systemClock;
  if (typeof value === "function") {
    throw new InvalidArgument(
      argument,
      `${argument} must be a RuntimeClock (an object with now, monotonicMs, startTimer and sleep, such as @cairnq/testing's VirtualClock), not a function; ` +
        `a bare () => number is what a store's clock option takes`,
    );
  }
  const missing = CLOCK_METHODS.filter((name) => typeof (value as Record<string, unknown> | null)?.[name] !== "function");
  if (typeof value !== "object" || value === null || missing.length > 0) {
    throw new InvalidArgument(
      argument,
      `${argument} must be a RuntimeClock, an object with the methods ${CLOCK_METHODS.join(", ")}` +
        (typeof value === "object" && value !== null ? `; this one lacks ${missing.join(", ")}` : `, got ${value === null ? "null" : typeof value}`),
    );
  }
  return value as RuntimeClock;
}
