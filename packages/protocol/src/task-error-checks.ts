/**
 * The field checks of a `TaskError` (§12): its constructor's options, and a thrown error's fields and
 * `envelope()` before the worker stores them. Kept apart from the error classes in `errors.ts`.
 */
import { describe, isPlainObject } from "./describe.js";
import type { ErrorEnvelope, TaskError, TaskErrorOptions } from "./errors.js";

/** The keys of {@link TaskErrorOptions}: another (`retriable`, `detail`) would be dropped and the default used. */
const TASK_ERROR_OPTION_KEYS = Object.freeze([
  "code",
  "retryable",
  "type",
  "details",
  "cause",
] as const satisfies readonly (keyof TaskErrorOptions)[]);

/** What is wrong with a `TaskError`'s options, or `undefined` when they build a §12 envelope. */
export function taskErrorOptionsProblem(options: unknown): { argument: string; message: string } | undefined {
  if (options === undefined) return undefined;
  if (!isPlainObject(options)) return { argument: "options", message: `options must be an object, got ${describe(options)}` };
  for (const key of Object.keys(options)) {
    if (!(TASK_ERROR_OPTION_KEYS as readonly string[]).includes(key)) {
      return { argument: key, message: `'${key}' is not an option of TaskError; the options are ${TASK_ERROR_OPTION_KEYS.join(", ")}` };
    }
  }
  return envelopeFieldsProblem(options, true);
}

/** The field checks shared by the constructor's options and {@link taskErrorProblem}; absent fields pass when `optional`. */
function envelopeFieldsProblem(fields: Record<string, unknown>, optional: boolean): { argument: string; message: string } | undefined {
  for (const key of ["code", "type"] as const) {
    const value = fields[key];
    if ((value !== undefined || !optional) && typeof value !== "string") {
      return { argument: key, message: `${key} must be a string, got ${describe(value)}` };
    }
  }
  if ((fields.retryable !== undefined || !optional) && typeof fields.retryable !== "boolean") {
    return { argument: "retryable", message: `retryable must be a boolean, got ${describe(fields.retryable)}` };
  }
  if ((fields.details !== undefined || !optional) && !isPlainObject(fields.details)) {
    return { argument: "details", message: `details must be a plain object (stored as JSON), got ${describe(fields.details)}` };
  }
  return undefined;
}

/**
 * Why a thrown `TaskError` cannot be stored as it stands (§12: `type`, `code`, `message` strings, `retryable`
 * a boolean, `details` an object), or `undefined` when it can. The constructor refuses such options, so this
 * finds a field changed afterwards (`Object.assign(err, { retryable: "yes" })`) or a subclass's own fields; a
 * getter or `envelope()` that throws is reported too. Never throws: the worker calls it on its settlement path.
 */
export function taskErrorProblem(err: TaskError): string | undefined {
  const checked = checkTaskError(err);
  return "problem" in checked ? checked.problem : undefined;
}

/**
 * {@link taskErrorProblem}, with the envelope when there is none: `envelope()` is called once, so a subclass's
 * envelope that differs from call to call (or costs something) is stored as it was checked. Never throws.
 */
export function checkTaskError(err: TaskError): { envelope: ErrorEnvelope } | { problem: string } {
  try {
    const problem = envelopeFieldsProblem(
      { code: err.code, type: err.type, retryable: err.retryable, details: err.details },
      false,
    );
    if (problem !== undefined) return { problem: problem.message };
    if (typeof err.message !== "string") return { problem: `message must be a string, got ${describe(err.message)}` };
    const envelope: unknown = err.envelope();
    if (!isPlainObject(envelope)) return { problem: `envelope() must return an object, got ${describe(envelope)}` };
    const fromEnvelope = envelopeFieldsProblem(envelope, false);
    if (fromEnvelope !== undefined) return { problem: `envelope(): ${fromEnvelope.message}` };
    if (typeof envelope.message !== "string") return { problem: `envelope(): message must be a string, got ${describe(envelope.message)}` };
    return { envelope: envelope as ErrorEnvelope };
  } catch {
    return { problem: "reading its fields or calling its envelope() threw" };
  }
}
