/**
 * Building the error envelopes a failed task stores (§12, §5.16, §8.4, §8.6).
 *
 * These functions tolerate any thrown value (objects without prototypes,
 * throwing getters or `toString`s) without throwing themselves, because they
 * run on the worker's settlement path, where an exception would leave a task
 * to lease expiry instead of recording why it failed.
 */
import type { ErrorEnvelope } from "./errors.js";
import { TaskError } from "./errors.js";
import { checkTaskError } from "./task-error-checks.js";
import { sanitizeText } from "./json.js";

/** A failure ready to write: the error JSON for `fail` and its `retryable` flag. */
export interface Failure<E = ErrorEnvelope> {
  envelope: E;
  retryable: boolean;
}

/** The envelope fields, with `details` optional. */
export interface ErrorEnvelopeFields {
  type: string;
  code: string;
  message: string;
  retryable: boolean;
  /** @default {} */
  details?: Record<string, unknown>;
}

/**
 * Builds an envelope with the five §12 keys in their contractual order.
 *
 * Key order matters only for readers that compare stored text (none should),
 * but peers write this order, so we do too.
 *
 * @example
 * ```ts
 * errorEnvelope({ type: "TaskError", code: "bad_input", message: "no url", retryable: false });
 * ```
 */
export function errorEnvelope(fields: ErrorEnvelopeFields): ErrorEnvelope {
  return {
    type: fields.type,
    code: fields.code,
    message: fields.message,
    retryable: fields.retryable,
    details: fields.details ?? {},
  };
}

/**
 * What lease recovery stores when a task's attempts are exhausted (§5.10).
 *
 * Byte-for-byte the protocol's literal once `JSON.stringify`-ed; frozen so no
 * caller can change what every store writes.
 */
export const LEASE_EXPIRED_ENVELOPE: Readonly<ErrorEnvelope> = Object.freeze({
  type: "LeaseExpired",
  code: "lease_expired",
  message: "task lease expired and max attempts reached",
  retryable: false,
  details: Object.freeze({}) as Record<string, unknown>,
});

/**
 * The worker's envelope when a handler call exceeded `maxRunMs` (§8.4).
 *
 * Retryable: a slow run may succeed next time.
 */
export function handlerTimeoutEnvelope(maxRunMs: number): ErrorEnvelope {
  return errorEnvelope({
    type: "HandlerTimeout",
    code: "handler_timeout",
    message: `handler did not finish within maxRunMs (${maxRunMs}ms), so the attempt was abandoned; it is retried while attempts remain`,
    retryable: true,
  });
}

/**
 * The worker's envelope for a claimed task whose name has no handler (§8.4).
 *
 * Not retryable: the same worker would claim it again and fail the same way.
 */
export function noHandlerEnvelope(name: string): ErrorEnvelope {
  return errorEnvelope({
    type: "NoHandler",
    code: "no_handler",
    message: `no handler is registered for task name '${name}' on the worker that claimed it; register one and retry the task`,
    retryable: false,
  });
}

/**
 * The worker's envelope when a handler's result cannot be stored as JSON (§8.4).
 *
 * Not retryable: the handler would most likely return the same value again.
 * `err` is the `SerializationError` raised by `complete`; its message (which
 * names the bad path) is kept.
 */
export function unserializableResultEnvelope(err: unknown): ErrorEnvelope {
  const reason = isInstance(err, Error) ? safeString(read(err, "message")) : safeString(err);
  return errorEnvelope({
    type: "SerializationError",
    code: "unserializable_result",
    message: `the handler's result could not be stored as JSON: ${reason}`,
    retryable: false,
  });
}

/**
 * The §5.16 fallback stored when the given error itself cannot be encoded.
 *
 * Reads `type`, `code` and `message` from `error` when it is an object and
 * stringifies them; `details` is dropped because it is the usual culprit.
 */
export function fallbackEnvelope(error: unknown, retryable: boolean): ErrorEnvelope {
  const isObject = (typeof error === "object" || typeof error === "function") && error !== null;
  const type = isObject ? read(error, "type") : undefined;
  const code = isObject ? read(error, "code") : undefined;
  const message = isObject ? read(error, "message") : undefined;
  return errorEnvelope({
    type: safeString(type ?? "TaskError"),
    code: safeString(code ?? "task_error"),
    message: safeString(message ?? ""),
    retryable,
  });
}

/**
 * Maps whatever a handler threw to the failure the worker writes (§8.4 settlement table).
 *
 * - `TaskError` → its envelope and its own `retryable` (default false); one that cannot be stored as it stands
 *   (`retryable: "yes"` set after construction) → `invalid_task_error`, not retryable.
 * - any other `Error` → `handler_error`, `type` = its name, retryable.
 * - a plain object → `handler_error`, `type` from its `name` (else `"Error"`),
 *   `message` from its `message` (else its string form), retryable.
 * - a primitive → a `TaskError`-shaped envelope with its string form, retryable.
 *
 * `LostLease` and `maxRunMs` are not handled here: they write nothing or a
 * fixed envelope, and the worker checks them first.
 *
 * @example
 * ```ts
 * const { envelope, retryable } = envelopeFromThrown(err);
 * await store.fail({ taskId, workerId, error: envelope, retryable, delayMs: retryable ? retryDelayMs(attempt) : 0 });
 * ```
 */
export function envelopeFromThrown(err: unknown): Failure {
  if (isInstance(err, TaskError)) return taskErrorFailure(err);
  if (isInstance(err, Error)) {
    return { envelope: handlerErrorEnvelope(err, true), retryable: true };
  }
  if (typeof err === "object" && err !== null) {
    const name = read(err, "name");
    const message = read(err, "message");
    return {
      envelope: errorEnvelope({
        type: name == null ? "Error" : safeString(name),
        code: "handler_error",
        message: safeString(message ?? err),
        retryable: true,
      }),
      retryable: true,
    };
  }
  return { envelope: taskErrorShaped(safeString(err), true), retryable: true };
}

/**
 * Maps the reason given to `ctx.fail(reason, { retryable })` to the failure to write (§8.6).
 *
 * - string → `TaskError`-shaped envelope with the caller's flag.
 * - `TaskError` → its own envelope and its own flag (the caller's is ignored).
 * - any other `Error` → `handler_error` with the caller's flag.
 * - plain object → stored as-is, with the caller's flag.
 * - `null`/`undefined` → the default reason; other primitives → their string form.
 *
 * `options.retryable` is the caller's flag, checked beforehand with `requireRetryable` (a
 * `TaskError` ignores it, but a non-boolean flag is still a caller's mistake); this never throws.
 *
 * @example
 * ```ts
 * const { envelope, retryable } = envelopeForCtxFail("upstream 503", { retryable: true });
 * ```
 */
export function envelopeForCtxFail(
  reason: unknown = "task failed",
  options: { retryable?: boolean } = {},
): Failure<ErrorEnvelope | Record<string, unknown>> {
  // Checked by the caller (`requireRetryable`, as ctx.fail does): a flag of any other type reads as absent here.
  const retryable = typeof options.retryable === "boolean" ? options.retryable : true;
  if (isInstance(reason, TaskError)) return taskErrorFailure(reason);
  if (isInstance(reason, Error)) {
    return { envelope: handlerErrorEnvelope(reason, retryable), retryable };
  }
  if (typeof reason === "object" && reason !== null) {
    return { envelope: reason as Record<string, unknown>, retryable };
  }
  return { envelope: taskErrorShaped(reason == null ? "task failed" : safeString(reason), retryable), retryable };
}

/**
 * A `TaskError`'s envelope and flag, or — when it cannot be stored as it stands (a field changed after
 * construction, a subclass's own fields: see `checkTaskError`) — a permanent failure, code
 * `invalid_task_error`, that says why and keeps the message: the task is settled, never left `running` until its
 * lease expires to be re-run by a store write refusing `retryable: "yes"`.
 */
function taskErrorFailure(err: TaskError): Failure {
  const checked = checkTaskError(err);
  if ("envelope" in checked) return { envelope: checked.envelope, retryable: err.retryable };
  const problem = checked.problem;
  const message = safeString(read(err, "message") ?? "");
  return {
    envelope: errorEnvelope({
      type: "InvalidTaskError",
      code: "invalid_task_error",
      message: `the handler threw a TaskError that cannot be stored as it stands (${safeString(problem)}), so the task failed for good instead of retrying; its message: ${message}. Give TaskError a string code and type, a boolean retryable and an object details`,
      retryable: false,
    }),
    retryable: false,
  };
}

function handlerErrorEnvelope(err: Error, retryable: boolean): ErrorEnvelope {
  return errorEnvelope({
    type: safeString(read(err, "name") ?? "Error"),
    code: "handler_error",
    message: safeString(read(err, "message") ?? ""),
    retryable,
  });
}

function taskErrorShaped(message: string, retryable: boolean): ErrorEnvelope {
  return errorEnvelope({ type: "TaskError", code: "task_error", message, retryable });
}

/** `value instanceof cls`, treating a throwing proxy trap as "no". */
function isInstance<T>(value: unknown, cls: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof cls;
  } catch {
    return false;
  }
}

/** Reads a property, treating a throwing getter or proxy trap as absent. */
function read(target: object, key: string): unknown {
  try {
    return (target as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/**
 * `String(value)` that cannot throw (`String(Object.create(null))` does), made
 * storable on every backend (U+0000 and lone surrogates become U+FFFD), so the
 * fallback envelope itself always encodes.
 */
function safeString(value: unknown): string {
  try {
    return sanitizeText(String(value));
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return "[unprintable value]";
    }
  }
}
