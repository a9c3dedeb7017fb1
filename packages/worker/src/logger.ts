/**
 * A structural logger: any object with these methods fits (console, pino
 * child loggers wrapped as `(msg, fields)`, winston), so the worker needs no
 * adapter and prints nothing unless given one. Every method is optional.
 */
export interface WorkerLogger {
  debug?(message: string, fields?: Record<string, unknown>): void;
  info?(message: string, fields?: Record<string, unknown>): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
  error?(message: string, fields?: Record<string, unknown>): void;
}

/** The four levels of {@link WorkerLogger}. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Logs through `logger` if there is one; a throwing logger is ignored, because
 * logging must never change what the worker does with a task.
 */
export function log(
  logger: WorkerLogger | undefined,
  level: LogLevel,
  message: string,
  fields: Record<string, unknown>,
): void {
  if (logger === undefined) return;
  try {
    logger[level]?.(message, fields);
  } catch {
    // A broken logger must not break the worker.
  }
}
