/**
 * Debounce — a keyed submit that coalesces (an extension of protocol v1's
 * §5.1 key handling; a v1 peer sees only ordinary rows and updates).
 *
 * The rule, for a submit with `key` and `debounce: { delayMs, maxDelayMs? }`,
 * decided under the key lock:
 * - the key's task is `queued` and has not begun — no durable-step entries
 *   (`steps.ts`): a task that parked on a sleep, wait or join, or is queued
 *   for a retry after recording steps, has them: that task is updated —
 *   `payload` = this submit's, `run_at_ms` = `now + delayMs`, never later
 *   than `created_at_ms + maxDelayMs` (its first submit plus the cap) — and
 *   returned (`created: false`, as `reuse` does);
 * - otherwise (no task, or it is running, has begun, or finished): a new task
 *   is inserted with `run_at_ms = now + delayMs` and the key points at it; a
 *   running or begun task is left alone (it works on the payload it began
 *   with — its journal was recorded for that payload, so a new one would mix
 *   the two on replay — and the new task carries the newer one);
 * - but a key whose task is of another task name and not finished (queued or
 *   running) is not this submit's to take: nothing is written and the submit
 *   fails with {@link AlreadyExists} ({@link debounceConflict}). A key is one
 *   namespace for every name (§5.1), and a debounce of `reindex` must neither
 *   rewrite a queued `email` task's payload and run time nor take its key.
 *
 * So a burst of submits closer together than `delayMs` runs the handler once,
 * with the last payload, `delayMs` after the burst ends or `maxDelayMs` after
 * it began, whichever is first.
 */
import { requireDelayMs } from "./delay.js";
import { AlreadyExists, InvalidArgument } from "./errors.js";
import { x } from "./expr.js";
import type { RowTransition } from "./rules.js";
import type { TaskStatus } from "./statuses.js";
import { isTerminalStatus } from "./statuses.js";

/** The submit option `debounce`. */
export interface DebounceOptions {
  /** Run this long after the last submit of a burst; an integer from 0 to `MAX_DELAY_MS` (100 years, in ms). */
  readonly delayMs: number;
  /** But never later than this long after the burst's first submit; an integer from `delayMs` to `MAX_DELAY_MS` (ms). @default unbounded */
  readonly maxDelayMs?: number;
}

/** A validated {@link DebounceOptions}. */
export interface NormalizedDebounce {
  readonly delayMs: number;
  readonly maxDelayMs: number | null;
}

/**
 * Validates `debounce` against the rest of the submit: it needs a `key` (it
 * coalesces submits under one), decides by itself what a submit under the
 * key does (so no `conflict`) and when the task runs (so no `runAtDelayMs`).
 */
export function normalizeDebounce(
  input: unknown,
  submit: { readonly key?: string | null; readonly conflict?: unknown; readonly runAtDelayMs?: unknown },
): NormalizedDebounce | null {
  if (input === undefined || input === null) return null;
  if (typeof input !== "object" || Array.isArray(input)) throw new InvalidArgument("debounce", "debounce must be an object { delayMs, maxDelayMs? }");
  const value = input as Record<string, unknown>;
  for (const k of Object.keys(value)) {
    if (k !== "delayMs" && k !== "maxDelayMs") throw new InvalidArgument(`debounce.${k}`, `debounce has no option '${k}'; valid options are delayMs, maxDelayMs`);
  }
  const delayMs = requireDelayMs(value.delayMs, "debounce.delayMs");
  const maxDelayMs = value.maxDelayMs === undefined ? null : requireDelayMs(value.maxDelayMs, "debounce.maxDelayMs");
  if (maxDelayMs !== null && maxDelayMs < delayMs) {
    throw new InvalidArgument("debounce.maxDelayMs", `debounce.maxDelayMs (${maxDelayMs}) is below delayMs (${delayMs}); the cap must leave room for at least one delay`);
  }
  if (submit.key === undefined || submit.key === null) {
    throw new InvalidArgument("debounce", "debounce needs a key: submits are coalesced under one key, e.g. { key: `reindex:${userId}`, debounce: { delayMs: 500 } }");
  }
  if (submit.conflict !== undefined && submit.conflict !== null) {
    throw new InvalidArgument("conflict", "debounce decides what a submit under its key does (update the queued task, else a new one); drop the conflict option");
  }
  if (submit.runAtDelayMs !== undefined && submit.runAtDelayMs !== null) {
    throw new InvalidArgument("runAtDelayMs", "debounce sets the run time (now + delayMs, capped by maxDelayMs); drop runAtDelayMs");
  }
  return Object.freeze({ delayMs, maxDelayMs });
}

/** What a debounced submit does with the key's current task. */
export type DebounceDecision =
  | { readonly kind: "update"; readonly taskId: string }
  | { readonly kind: "insert" }
  /** The key names an unfinished task of another name: nothing is written (see {@link debounceConflict}). */
  | { readonly kind: "reject" };

/** The key's current task as the rule reads it. */
export interface DebounceKeyTask {
  readonly id: string;
  readonly name: string;
  readonly status: TaskStatus;
}

/**
 * Whether the rule's choice for `existing` depends on the task's durable-step journal: it is a queued
 * task of the submit's `name`. Only then does a store read it, under the key lock, for {@link resolveDebounce}.
 */
export function debounceReadsJournal(name: string, existing: DebounceKeyTask | null): boolean {
  return existing !== null && existing.status === "queued" && existing.name === name;
}

/**
 * The rule's choice for a debounced submit of task name `name` (see the module comment): update a
 * `queued` task of the same name that has not begun, refuse a key held by an unfinished task of another
 * name, else insert. `journaled`: whether the task has durable-step entries, as read where
 * {@link debounceReadsJournal} says (else pass `false`: it is not read).
 */
export function resolveDebounce(name: string, existing: DebounceKeyTask | null, journaled: boolean): DebounceDecision {
  if (existing === null || isTerminalStatus(existing.status)) return { kind: "insert" };
  if (existing.name !== name) return { kind: "reject" };
  return debounceReadsJournal(name, existing) && !journaled ? { kind: "update", taskId: existing.id } : { kind: "insert" };
}

/** The error of a `reject` decision: `key` names `existing`, an unfinished task of another name than the submit's `name`. */
export function debounceConflict(key: string, name: string, existing: DebounceKeyTask): AlreadyExists {
  return new AlreadyExists(key, {
    message:
      `the key '${key}' names task ${existing.id} of task name '${existing.name}' (${existing.status}); a debounced submit of '${name}' ` +
      `coalesces only into a queued task of its own name, so nothing was submitted and that task is unchanged; ` +
      `give each task name keys of its own (e.g. '${name}:…')`,
  });
}

const thisTask = x.eq(x.col("id"), x.param("taskId", "text"));
const delayed = x.add(x.now, x.param("delayMs", "int"));
const cap = x.add(x.col("created_at_ms"), x.param("maxDelayMs", "int"));

/** The update of a queued task by a debounced submit without `maxDelayMs`: new payload, `run_at_ms = now + delayMs`. */
export const DEBOUNCE: RowTransition = {
  op: "debounce",
  clock: "transaction",
  guard: x.and(thisTask, x.eq(x.col("status"), x.lit("queued"))),
  branches: [{ name: "push-out", to: "queued", when: null, set: { payload: x.param("payload", "json"), run_at_ms: delayed } }],
  onMiss: "null",
};

/** As {@link DEBOUNCE}, with the run time capped at `created_at_ms + maxDelayMs`. */
export const DEBOUNCE_CAPPED: RowTransition = {
  ...DEBOUNCE,
  op: "debounceCapped",
  branches: [
    {
      name: "push-out",
      to: "queued",
      when: null,
      set: { payload: x.param("payload", "json"), run_at_ms: x.case([{ when: x.le(delayed, cap), then: delayed }], cap) },
    },
  ],
};

/** The transition and its parameters for updating `taskId` with an encoded `payload`. */
export function debounceUpdate(debounce: NormalizedDebounce, taskId: string, payload: string): { rule: RowTransition; params: Record<string, unknown> } {
  return debounce.maxDelayMs === null
    ? { rule: DEBOUNCE, params: { taskId, payload, delayMs: debounce.delayMs } }
    : { rule: DEBOUNCE_CAPPED, params: { taskId, payload, delayMs: debounce.delayMs, maxDelayMs: debounce.maxDelayMs } };
}
