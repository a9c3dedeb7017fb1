/**
 * The structural logger every CairnQ package accepts (client, worker,
 * retention, the backpressure gate), defined once so that one object fits
 * them all.
 */

/**
 * A structural logger: any object with some of `debug/info/warn/error(msg, fields)`.
 *
 * Structural so that `console`, pino or a test spy fit without an adapter;
 * every method is optional and a missing one is simply not called. `fields`
 * are scoped (`queue`, `taskId`, `workerId`, `attempt`, …) so they can be
 * indexed. Nothing in CairnQ logs unless a logger is given.
 *
 * @example
 * ```ts
 * const client = new CairnQ(store, { logger: console });
 * const worker = new Worker(store, { logger: pino() });
 * ```
 */
export interface Logger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
  error?(message: string, fields?: Record<string, unknown>): void;
}

/** The log levels a {@link Logger} may implement. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Calls `logger[level](message, fields)` if the logger has that method,
 * swallowing anything it throws: a broken logger must never turn a
 * successful operation into a failed one, nor stop a worker or a sweeper.
 *
 * @example
 * ```ts
 * logSafely(options.logger, "debug", "claimed tasks", { workerId, count: 3 });
 * ```
 */
export function logSafely(logger: Logger | undefined, level: LogLevel, message: string, fields?: Record<string, unknown>): void {
  if (logger === undefined || typeof logger[level] !== "function") return;
  try {
    // Typed as returning void, yet an async logger (a remote sink) returns a promise: its rejection is swallowed
    // too, where left alone it would be unhandled and end the process.
    catchRejection(logger[level](message, fields));
  } catch {
    // A logger's own failure has nowhere better to go.
  }
}

/**
 * Hands a rejection of `returned` — what a user's callback typed as returning `void` returned: an `async`
 * logger's, listener's or `onError`'s promise, or another thenable — to `onRejected` (by default: swallowed), so
 * it is never an unhandled rejection that ends the process. Anything else is left alone; never throws.
 *
 * @example
 * ```ts
 * catchRejection(listener(payload), (err) => logSafely(logger, "error", "a listener failed", { error: err }));
 * ```
 */
export function catchRejection(returned: unknown, onRejected: (err: unknown) => void = () => {}): void {
  if (returned === null || (typeof returned !== "object" && typeof returned !== "function")) return;
  try {
    const then: unknown = (returned as { then?: unknown }).then;
    if (typeof then === "function") (then as (onFulfilled: undefined, onRejected: (err: unknown) => void) => unknown).call(returned, undefined, onRejected);
  } catch {
    // A thenable whose `then` throws has nothing more to report.
  }
}
