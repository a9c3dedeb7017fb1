/**
 * Where a failure the dashboard did not mean goes: a store or driver error, a
 * throw from the `authorize` hook, a bug. The client gets only
 * `{ error: "internal error", errorId }` — an error's message can carry a
 * connection string, a password or a row, and whoever made the request may
 * be anyone (the `authorize` hook runs before anyone is known). The error
 * itself goes to `onError`, else to `logger.error`, else to stderr, with the
 * same `errorId` so an operator can match a user's report to the log line.
 *
 * Words: a *deliberate* error is one the dashboard raised with a status
 * (`HttpError`, 4xx, or an `InvalidArgument` from checking the request's
 * input, 400); its message is written for the client and is sent. Anything
 * else is *internal*.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "@cairnq/protocol";
import { logSafely } from "@cairnq/protocol/sdk";
import { stderrLogger } from "@cairnq/runtime";

/** What {@link DashboardSettings.onError} learns besides the error. */
export interface DashboardErrorInfo {
  /** The id the client was answered with (`{ error: "internal error", errorId }`), or shown in a live `problem` event. */
  readonly errorId: string;
  /** The request's method, or `"POLL"` for the live view's background read of the counts. */
  readonly method: string;
  /** The path under the mount (percent-encoded, as sent, without the query). */
  readonly path: string;
}

/** Reports one internal error; never throws. */
export type ErrorReporter = (error: unknown, info: Omit<DashboardErrorInfo, "errorId">) => string;

/** A short random id naming one reported error in the answer and in the log. */
function newErrorId(): string {
  return randomBytes(6).toString("hex");
}

/**
 * The reporter of a dashboard's `onError` and `logger` options: `onError`
 * when given (a throw or rejection from it goes to the logger), else
 * `logger.error`, else stderr; `logger: null` with no `onError` is silent.
 */
export function createErrorReporter(onError: ((error: unknown, info: DashboardErrorInfo) => unknown) | undefined, logger: Logger | null | undefined): ErrorReporter {
  // Stderr (the line every CairnQ object writes without a logger) also hears a failing `onError`.
  const sink = logger === null ? null : (logger ?? stderrLogger());
  const log = (message: string, fields: Record<string, unknown>): void => {
    if (sink !== null) logSafely(sink, "error", message, fields);
  };
  return (error, where) => {
    const info: DashboardErrorInfo = { errorId: newErrorId(), ...where };
    if (onError === undefined) {
      log("dashboard request failed", { error, ...info });
      return info.errorId;
    }
    const hookFailed = (hookError: unknown): void => log("dashboard onError threw", { error: hookError, original: error, ...info });
    try {
      const result = onError(error, info);
      if (result instanceof Promise) result.catch(hookFailed);
    } catch (hookError) {
      hookFailed(hookError);
    }
    return info.errorId;
  };
}
