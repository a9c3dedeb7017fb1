/**
 * Keeps a user callback's rejected promise from crashing the process. The
 * worker calls loggers, `onError` and event listeners without awaiting them
 * (they return `void`), yet an `async` one — a remote log sink that is down —
 * returns a promise; left alone, its rejection is unhandled and Node exits.
 */
import type { Logger, LogLevel } from "@cairnq/protocol";

const LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/** Hands a rejection of `returned` (when it is a promise or another thenable) to `onRejected`; anything else is left alone. */
export function catchRejection(returned: unknown, onRejected: (err: unknown) => void = () => {}): void {
  if (returned === null || (typeof returned !== "object" && typeof returned !== "function")) return;
  try {
    const then: unknown = (returned as { then?: unknown }).then;
    if (typeof then === "function") (then as (onFulfilled: undefined, onRejected: (err: unknown) => void) => unknown).call(returned, undefined, onRejected);
  } catch {
    // A thenable whose `then` throws has nothing more to report.
  }
}

/**
 * The logger the worker calls: `logger`'s methods, each one's rejected promise swallowed (a logger's own failure
 * has nowhere better to go, as `logSafely` does for one that throws). It has the methods `logger` had when given,
 * so a missing level still costs nothing, and calls them on `logger` (pino's need their `this`).
 */
export function catchingLogger(logger: Logger | undefined): Logger | undefined {
  if (logger === undefined) return undefined;
  const wrapped: Logger = {};
  for (const level of LEVELS) {
    if (typeof logger[level] !== "function") continue;
    wrapped[level] = (message, fields) => catchRejection(logger[level]?.(message, fields));
  }
  return wrapped;
}
