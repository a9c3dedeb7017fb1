/**
 * The longest delay: how far ahead of now a duration may put an instant the
 * store computes (`run_at_ms = now + runAtDelayMs`, a debounce's push-out, a
 * retry's `now + delayMs`, a lease's `now + leaseMs`, a park's wake time).
 *
 * The store adds the duration to its own clock (the database's, in SQL), so
 * the validation that runs first has no "now" to check the sum against, as
 * `requireWakeAtMs` does for a handler's wake times. A constant bound
 * stands in for it: 100 years is far more than any task should wait, and far
 * inside every range the sum must fit, from any plausible now — a JavaScript
 * `Date` (and `PARK_FOREVER_AT_MS`, the instant that means "no
 * timeout") ends 8.64e15 ms after the epoch, about 273,000 years, and the
 * backends' BIGINT columns later still. Without it a delay such as
 * `Number.MAX_SAFE_INTEGER` was written as a run time no `Date` can hold
 * (and, on SQLite, past 2^63 as a float).
 *
 * Absolute instants (`ctx.sleepUntil`, a wait's deadline, a schedule slot)
 * are bounded by the `Date` range itself, since there is no sum to overflow.
 */
import { describe } from "./describe.js";
import { InvalidArgument } from "./errors.js";

/**
 * The longest delay, in milliseconds, any input that becomes a future
 * instant accepts: 100 years of 365 days (3,153,600,000,000 ms). See the
 * module comment for why a constant, and why this one.
 *
 * @example
 * ```ts
 * await client.submit("renew", payload, { runAtDelayMs: Math.min(untilRenewalMs, MAX_DELAY_MS) });
 * ```
 */
export const MAX_DELAY_MS = 3_153_600_000_000;

/**
 * A delay in milliseconds: an integer from 0 to {@link MAX_DELAY_MS}, checked
 * before anything is written, so a delay too long for the run time it becomes
 * fails as an input error instead of writing an instant no `Date` holds.
 *
 * @param argument - How the input is named in the error (`runAtDelayMs`, `debounce.delayMs`, …).
 * @param what - How the caller wrote the call, when clearer than the argument alone:
 *   `ctx.sleep('nap', 9007199254740991)`. @default argument
 * @throws InvalidArgument naming `argument`, the bound and the value given.
 * @example
 * ```ts
 * const runAtDelayMs = requireDelayMs(input.runAtDelayMs, "runAtDelayMs");
 * ```
 */
export function requireDelayMs(value: unknown, argument: string, what: string = argument): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new InvalidArgument(argument, `${argument} must be an integer number of milliseconds from 0 to ${MAX_DELAY_MS} (MAX_DELAY_MS), got ${describe(value)}`);
  }
  if (value > MAX_DELAY_MS) {
    throw new InvalidArgument(
      argument,
      `${what} asks for a delay of ${value} ms, over MAX_DELAY_MS (${MAX_DELAY_MS} ms, 100 years): the store adds a delay to its current time, ` +
        `and this bound keeps that instant inside what a JavaScript Date and every backend hold; use a shorter ${argument}`,
    );
  }
  return value;
}
