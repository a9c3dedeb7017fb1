/**
 * `@cairnq/runtime` — internal support for CairnQ packages: the sleep and
 * timer that honour durations past 2^31 ms, the clock seam they sit behind
 * (`RuntimeClock`, `systemClock`), `deferred`, the keep-alive handle, the waiter
 * set of the wake-up channels, the options checker, the loader of the
 * database driver the application installs, and times and error envelopes
 * formatted for people.
 * No stability promise for use outside CairnQ's own packages.
 *
 * @packageDocumentation
 */
export { MAX_TIMER_MS, monotonicMs, nextTurn, sleep, sleepOn, startTimer } from "./timers.js";
export type { SleepOptions, StartTimer, TimerHandle, TimerOptions } from "./timers.js";
export { optionalClock, systemClock } from "./runtime-clock.js";
export type { RuntimeClock } from "./runtime-clock.js";
export { abortPromise, deferred } from "./deferred.js";
export type { Deferred } from "./deferred.js";
export { keepAlive } from "./keep-alive.js";
export type { KeepAlive } from "./keep-alive.js";
export { WaiterSet } from "./waiter-set.js";
export type { Waiter, WaiterSetOptions } from "./waiter-set.js";
export {
  checkOptions,
  closest,
  describeKind,
  MAX_DURATION_MS,
  optionalCount,
  optionalDurationMs,
  requireCount,
  requireDurationMs,
  requireHook,
} from "./options.js";
export type { DurationRule } from "./options.js";
export { fallbackLogger, stderrLogger } from "./stderr-logger.js";
export { loadDriver } from "./driver.js";
export type { DriverSpec } from "./driver.js";
export { formatDuration, formatInstant, formatRelative, formatWhen } from "./format.js";
export type { DurationRounding } from "./format.js";
export { describeError } from "./describe-error.js";
export { lostInFlightMessage, namedDriverError } from "./connection-lost.js";
export * from "./telemetry/index.js";
