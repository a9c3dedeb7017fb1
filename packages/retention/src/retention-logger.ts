/**
 * A structural logger: any object with some of `debug/info/warn/error(msg, fields)`.
 *
 * Structural so that `console`, pino or a test spy fit without an adapter;
 * every method is optional and a missing one is simply not called. The
 * sweeper logs nothing unless a logger is given.
 *
 * @example
 * ```ts
 * const sweeper = new RetentionSweeper(store, { olderThanMs: 86_400_000, logger: console });
 * ```
 */
export interface RetentionLogger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
  error?(message: string, fields?: Record<string, unknown>): void;
}

/** Calls `logger[level]` if present; a logger's own failure must never stop retention. */
export function log(logger: RetentionLogger | undefined, level: keyof RetentionLogger, message: string, fields: Record<string, unknown>): void {
  if (logger === undefined) return;
  try {
    logger[level]?.(message, fields);
  } catch {
    // Nowhere better to report a broken logger.
  }
}
