/**
 * The per-submit options of `client.submit` / `client.call` and a worker's
 * `ctx.submit`, and how they combine with a {@link TaskDef}'s defaults into
 * the store's {@link SubmitInput}.
 */
import type { Conflict } from "./conflict.js";
import type { DebounceOptions } from "./debounce.js";
import { UnsupportedBackend } from "./errors.js";
import type { SubmitInput } from "./store.js";
import type { Task } from "./task.js";
import type { TaskDef } from "./task-def.js";

/**
 * Per-submit options. A {@link TaskDef}'s `queue`, `maxAttempts` and
 * `priority` are defaults these override; anything left unset takes the
 * store's default (§5.1).
 */
export interface SubmitOptions {
  /** Business key: at most one current task per key (§5.1). @default null */
  key?: string | null | undefined;
  /**
   * The task's group: a task name's `groupConcurrency` and `groupRateLimit`
   * apply per group, and claims rotate across groups (validated like `key`;
   * needs a store with `capabilities.groups`). @default null
   */
  group?: string | null | undefined;
  /**
   * Coalesce submits under `key`: while the key's task is still queued, a
   * submit updates its payload and pushes its run time to now + `delayMs`,
   * never past `maxDelayMs` after the first submit, and returns that task.
   * Needs `key`; excludes `conflict` and `runAtDelayMs`. @default null
   */
  debounce?: DebounceOptions | null | undefined;
  /** What a submit does when `key` already points at a task. @default "reuse" */
  conflict?: Conflict | undefined;
  /** @default the TaskDef's queue, else "default" */
  queue?: string | undefined;
  /** Higher is claimed first; a 32-bit integer. @default the TaskDef's priority, else 0 */
  priority?: number | undefined;
  /** Claims allowed before a failure is final; integer ≥ 1. @default the TaskDef's maxAttempts, else 3 */
  maxAttempts?: number | undefined;
  /** Do not claim before this many ms from now; integer ≥ 0. @default 0 */
  runAtDelayMs?: number | undefined;
  /** Groups related tasks for `list({ correlationId })`. @default null; from a handler, the running task's */
  correlationId?: string | null | undefined;
  /** Free-form JSON object stored with the task. @default {} */
  metadata?: Record<string, unknown> | null | undefined;
  /** The task that submitted this one. @default null; from a handler, the running task */
  parentId?: string | null | undefined;
  /** The root of the task tree. @default the new task's id; from a handler, the running task's root */
  rootId?: string | null | undefined;
}

/** Every key of {@link SubmitOptions}, for callers that reject unknown (misspelt) options. */
export const SUBMIT_OPTION_KEYS = Object.freeze([
  "key",
  "group",
  "debounce",
  "conflict",
  "queue",
  "priority",
  "maxAttempts",
  "runAtDelayMs",
  "correlationId",
  "metadata",
  "parentId",
  "rootId",
] as const satisfies readonly (keyof SubmitOptions)[]);

/**
 * The store input for submitting `def` with `payload`: the options win over
 * the definition's `queue`, `maxAttempts` and `priority`; other options pass
 * through unchanged (validation is the store's, §5.1). Keys that are not
 * {@link SubmitOptions} are ignored.
 *
 * @example
 * ```ts
 * const summarize = defineTask("summarize", { queue: "llm", maxAttempts: 5 });
 * submitInputOf(summarize, { url }, { priority: 10 });
 * // { name: "summarize", payload: { url }, queue: "llm", maxAttempts: 5, priority: 10, … }
 * ```
 */
export function submitInputOf(def: Pick<TaskDef, "name" | "queue" | "maxAttempts" | "priority">, payload: unknown, options: SubmitOptions): SubmitInput {
  return {
    name: def.name,
    payload,
    queue: options.queue ?? def.queue,
    maxAttempts: options.maxAttempts ?? def.maxAttempts,
    priority: options.priority ?? def.priority,
    key: options.key,
    ...(options.group === undefined ? {} : { group: options.group }),
    ...(options.debounce === undefined ? {} : { debounce: options.debounce }),
    conflict: options.conflict,
    runAtDelayMs: options.runAtDelayMs,
    correlationId: options.correlationId,
    metadata: options.metadata,
    parentId: options.parentId,
    rootId: options.rootId,
  };
}

/**
 * Refuses a submit with a `group` or a `debounce` to a store without
 * `capabilities.groups`, which would otherwise drop them (running the task
 * outside its group's limits, or reusing instead of debouncing).
 *
 * @throws `UnsupportedBackend` naming the option.
 */
export function requireGroupSupport(store: { readonly capabilities: { readonly groups?: boolean } }, input: Pick<SubmitInput, "group" | "debounce">): void {
  if (store.capabilities.groups === true) return;
  if (input.group !== undefined && input.group !== null) {
    throw new UnsupportedBackend("group", "store's", {
      message: `submit option group '${String(input.group)}' needs a store that records groups (capabilities.groups is not true); SQLiteStore, PostgresStore and MySQLStore do`,
    });
  }
  if (input.debounce !== undefined && input.debounce !== null) {
    throw new UnsupportedBackend("debounce", "store's", {
      message: "submit option debounce needs a store that implements it (capabilities.groups is not true); SQLiteStore, PostgresStore and MySQLStore do",
    });
  }
}

/** The running task a child is submitted from: the columns its lineage reads. */
export type ParentRow = Pick<Task, "id" | "root_id" | "correlation_id">;

/**
 * The lineage of a child task submitted from a running one (§2.4): its parent
 * is the running task, its root and correlation id are the parent's (a row
 * without a root, written by a peer that omits it, is its own root), and an
 * option given explicitly — `null` included — overrides each.
 *
 * @example
 * ```ts
 * submitInputOf(def, payload, { ...options, ...childLineage(parentRow, options) });
 * ```
 */
export function childLineage(
  parent: ParentRow,
  options: Pick<SubmitOptions, "parentId" | "rootId" | "correlationId"> = {},
): { parentId: string | null; rootId: string | null; correlationId: string | null } {
  return {
    parentId: options.parentId !== undefined ? options.parentId : parent.id,
    rootId: options.rootId !== undefined ? options.rootId : (parent.root_id ?? parent.id),
    correlationId: options.correlationId !== undefined ? options.correlationId : parent.correlation_id,
  };
}
