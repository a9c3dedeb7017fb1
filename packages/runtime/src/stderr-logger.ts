/**
 * The logger long-lived CairnQ objects fall back to when given neither
 * `onError` nor `logger`: quiet when healthy, never silent when not.
 */
import type { Logger } from "@cairnq/protocol";

/**
 * A {@link Logger} that writes `warn` and `error` lines to stderr and drops
 * `debug` and `info`, so normal operation prints nothing while a failure the
 * process survives (a database it cannot reach, a settlement it could not
 * write) is visible without any setup. Each line is
 * `cairnq <level>: <message> <fields as JSON>`; errors in the fields print
 * as their name, message and code.
 *
 * @param write - Where lines go (tests pass their own). @default process.stderr.write
 */
export function stderrLogger(write: (line: string) => void = (line) => void process.stderr.write(line)): Logger {
  const emit = (level: string, message: string, fields?: Record<string, unknown>): void => {
    write(`cairnq ${level}: ${message}${fields === undefined ? "" : ` ${describeFields(fields)}`}\n`);
  };
  return {
    warn: (message, fields) => emit("warn", message, fields),
    error: (message, fields) => emit("error", message, fields),
  };
}

/**
 * The logger of a long-lived object's `logger` and `onError` options (the
 * worker's, the retention sweeper's): `logger` when given, nothing for
 * `null` (silenced), else {@link stderrLogger} unless `onError` is given —
 * quiet when healthy, never silent when not.
 *
 * @example
 * ```ts
 * const logger = fallbackLogger(options.logger, options.onError);
 * ```
 */
export function fallbackLogger(logger: Logger | null | undefined, onError: unknown): Logger | undefined {
  if (logger === null) return undefined;
  return logger ?? (onError === undefined ? stderrLogger() : undefined);
}

function describeFields(fields: Record<string, unknown>): string {
  try {
    return JSON.stringify(fields, (_key, value: unknown) => {
      if (value instanceof Error) {
        const code = (value as { code?: unknown }).code;
        return { name: value.name, message: value.message, ...(code === undefined ? {} : { code }) };
      }
      if (typeof value === "bigint") return `${value}n`;
      return value;
    });
  } catch {
    return "[fields not printable]";
  }
}
