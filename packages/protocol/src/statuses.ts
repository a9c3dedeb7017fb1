import type { Task, TaskRef } from "./task.js";

/**
 * Every status a task row can hold, in life-cycle order.
 *
 * Declared once here; the schema's CHECK constraint and every store read this
 * list (protocol v1 §4), and the conformance kit tests the two agree.
 */
export const STATUSES = ["queued", "running", "succeeded", "failed", "canceled"] as const;

/** One of {@link STATUSES}. */
export type TaskStatus = (typeof STATUSES)[number];

/** The statuses a task never leaves except by `retry` (failed, canceled) or `purge`. */
export const TERMINAL_STATUSES = ["succeeded", "failed", "canceled"] as const;

/** One of {@link TERMINAL_STATUSES}. */
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/** The statuses `retry` accepts (protocol v1 §5.8): `succeeded` cannot be retried. */
export const RETRYABLE_STATUSES = ["failed", "canceled"] as const;

/** The statuses `cancel` accepts (protocol v1 §5.7): the live ones, those not yet terminal. */
export const CANCELABLE_STATUSES = ["queued", "running"] as const;

/**
 * The statuses a row whose `cancel_requested_at_ms` is set may hold (§4): the
 * flag is raised on a running task, which then ends `canceled` (or
 * `succeeded` by a raw succeed); `retry` clears it.
 */
export const FLAGGABLE_STATUSES = ["running", "canceled", "succeeded"] as const;

/** True when `value` is one of the five protocol statuses. */
export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === "string" && (STATUSES as readonly string[]).includes(value);
}

/** True for `succeeded`, `failed` and `canceled`. */
export function isTerminalStatus(status: string): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** True when the task (or status probe) has reached a terminal status. */
export function isTerminal(task: Pick<TaskRef, "status">): boolean {
  return isTerminalStatus(task.status);
}

/** True while the task waits to be claimed (including a delayed or retrying one). */
export function isQueued(task: Pick<TaskRef, "status">): boolean {
  return task.status === "queued";
}

/** True while a worker holds the task's lease. */
export function isRunning(task: Pick<TaskRef, "status">): boolean {
  return task.status === "running";
}

/** True once the task ended with a result. */
export function isSucceeded(task: Pick<TaskRef, "status">): boolean {
  return task.status === "succeeded";
}

/** True once the task ended with an error and no attempt left (or a permanent error). */
export function isFailed(task: Pick<TaskRef, "status">): boolean {
  return task.status === "failed";
}

/** True once the task ended canceled. */
export function isCanceled(task: Pick<TaskRef, "status">): boolean {
  return task.status === "canceled";
}

/**
 * True when a cancel was requested while the task ran: the handler should stop,
 * and whatever it reports the task ends `canceled` (cancel wins, §4).
 */
export function cancelRequested(task: Pick<Task, "cancel_requested_at_ms">): boolean {
  return task.cancel_requested_at_ms !== null;
}
