/**
 * Typed task definitions: a name plus submit defaults, carrying payload and result types.
 *
 * A definition is shared by the code that submits a task and the worker that
 * handles it, so `client.call(def, payload)` and `worker.task(def, handler)`
 * agree on types without repeating them; at run time it is just the name and
 * the defaults.
 */

import { describe } from "./describe.js";
import { InvalidArgument } from "./errors.js";
import { requireKnownKeys, requireLimitedText } from "./inputs.js";
import type { JsonProblem } from "./json-type.js";
import { SUBMIT_OPTION_KEYS } from "./submit-options.js";

/** Submit defaults a definition may carry; each is overridable per submit. */
export interface TaskDefOptions {
  /** The queue the task is submitted to. @default "default" (the store's default) */
  queue?: string;
  /** Claims allowed before a failure is final; an integer ≥ 1. @default 3 (the store's default) */
  maxAttempts?: number;
  /** Higher is claimed first; a 32-bit integer (Postgres stores `integer`). @default 0 */
  priority?: number;
}

/**
 * A named task type with payload type `P` and result type `R`.
 *
 * `__types` exists only in the type system (it is never set), so that
 * functions taking a `TaskDef<P, R>` can infer `P` and `R` from it.
 */
export interface TaskDef<P = unknown, R = unknown> {
  readonly name: string;
  readonly queue?: string;
  readonly maxAttempts?: number;
  readonly priority?: number;
  /** Phantom: never present at run time. */
  readonly __types?: { readonly payload: P; readonly result: R };
}

/** The payload type of a {@link TaskDef}. */
export type TaskPayload<D> = D extends TaskDef<infer P, unknown> ? P : never;
/** The result type of a {@link TaskDef}. */
export type TaskResult<D> = D extends TaskDef<unknown, infer R> ? R : never;


/**
 * The payload and options arguments after a {@link TaskDef}: the payload is
 * optional only when the definition's payload type accepts `undefined`.
 */
export type PayloadArgs<P, O> = undefined extends P ? [payload?: P, options?: O] : [payload: P, options?: O];

/**
 * The payload type a submit of `D` takes: the {@link TaskDef}'s payload
 * type, or for a task name the explicit `P` (`submit<P>("name", …)`), else
 * `unknown`.
 */
export type PayloadFor<D, P = never> = [P] extends [never] ? (D extends TaskDef<infer X, unknown> ? X : unknown) : P;

/** The result type of `D`: the {@link TaskDef}'s, or for a task name the explicit `R`, else `unknown`. */
export type ResultFor<D, R = never> = [R] extends [never] ? (D extends TaskDef<unknown, infer X> ? X : unknown) : R;

/**
 * `T` when both the payload type `P` and the result type `R` survive JSON;
 * otherwise the {@link JsonProblem} message, so that passing anything there
 * fails to compile with the reason.
 */
export type IfJson<P, R, T> = [JsonProblem<P, "payload">] extends [never] ? ([JsonProblem<R, "result">] extends [never] ? T : JsonProblem<R, "result">) : JsonProblem<P, "payload">;

/** Every key of {@link TaskDefOptions}: a definition carries these defaults and nothing else. */
const TASK_DEF_OPTION_KEYS: readonly string[] = Object.freeze(["queue", "maxAttempts", "priority"] satisfies (keyof TaskDefOptions)[]);

/**
 * Refuses options that are not an object of {@link TASK_DEF_OPTION_KEYS} (`null` reads as none, as for a
 * submit's options): a misspelt `queu` or a per-submit `key` would otherwise be dropped, and every task of the
 * definition would go to the 'default' queue.
 */
function requireTaskDefOptions(name: string, options: unknown): Record<string, unknown> {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) {
    throw new InvalidArgument("options", `task '${name}': defineTask's options must be an object of ${TASK_DEF_OPTION_KEYS.join(", ")}, got ${describe(options)}`);
  }
  const given = options as Record<string, unknown>;
  // A per-submit option gets its own hint; any other unknown key the shared refusal.
  for (const key of Object.keys(given)) {
    if (given[key] === undefined || TASK_DEF_OPTION_KEYS.includes(key) || !(SUBMIT_OPTION_KEYS as readonly string[]).includes(key)) continue;
    throw new InvalidArgument(
      key,
      `task '${name}': '${key}' is a per-submit option, not a default a definition carries; pass it to each submit (submit(def, payload, { ${key} })). defineTask's options are ${TASK_DEF_OPTION_KEYS.join(", ")}`,
    );
  }
  requireKnownKeys(given, TASK_DEF_OPTION_KEYS, `defineTask('${name}')`);
  return given;
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * Defines a task type: a frozen `{ name, queue?, maxAttempts?, priority? }`.
 *
 * Options are validated here, at definition time, so a bad default (or a key
 * that is not one of them: a misspelt `queu`, a per-submit `key`) fails when
 * the module loads rather than on the first submit (`InvalidArgument`). Only the options given
 * appear as keys.
 *
 * `P` and `R` must be types that survive JSON (payloads and results are
 * stored as JSON): `defineTask<{ at: Date }>("x")` does not compile, and the
 * error names the field ("payload.at is a Date, which JSON turns into a
 * string…").
 *
 * @example
 * ```ts
 * export const summarize = defineTask<{ url: string }, { summary: string }>("summarize", { queue: "llm" });
 * const { summary } = await client.call(summarize, { url }); // typed
 * worker.task(summarize, async (ctx, { url }) => ({ summary: await run(url) }));
 * ```
 */
export function defineTask<P = unknown, R = unknown>(taskName: IfJson<P, R, string>, options: TaskDefOptions = {}): TaskDef<P, R> {
  const name: unknown = taskName;
  if (typeof name !== "string" || name === "") {
    throw new InvalidArgument(
      "name",
      "defineTask needs a non-empty task name: workers find handlers by name, so pass the name used in worker.task(...)",
    );
  }
  // What a submit would refuse (U+0000, a lone surrogate, over TEXT_LIMITS) is refused here, where the def is written.
  requireLimitedText(name, "name");
  const def: { name: string; queue?: string; maxAttempts?: number; priority?: number } = { name };
  const { queue, maxAttempts, priority } = requireTaskDefOptions(name, options) as TaskDefOptions;
  if (queue !== undefined) {
    if (typeof queue !== "string" || queue === "") {
      throw new InvalidArgument("queue", `task '${name}': queue must be a non-empty string; omit it to use the 'default' queue`);
    }
    def.queue = requireLimitedText(queue, "queue");
  }
  if (maxAttempts !== undefined) {
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > INT32_MAX) {
      throw new InvalidArgument(
        "maxAttempts",
        `task '${name}': maxAttempts must be an integer from 1 to ${INT32_MAX}, got ${String(maxAttempts)}; 1 means never retry`,
      );
    }
    def.maxAttempts = maxAttempts;
  }
  if (priority !== undefined) {
    if (!Number.isInteger(priority) || priority < INT32_MIN || priority > INT32_MAX) {
      throw new InvalidArgument(
        "priority",
        `task '${name}': priority must be a 32-bit integer (higher is claimed first), got ${String(priority)}`,
      );
    }
    def.priority = priority;
  }
  return Object.freeze(def);
}
