import type { TaskStatus } from "./statuses.js";

/**
 * A task row exactly as protocol v1 §3.1 stores it: snake_case column names,
 * JSON columns decoded, every `*_ms` a number (or `null`).
 *
 * The row is the cross-language wire shape, which is why it keeps the
 * database's names rather than camelCase.
 */
export interface Task<Payload = unknown, Result = unknown> {
  /** `task_` + 26-char ULID; sorts by creation millisecond. */
  id: string;
  /** The handler name a worker looks up. */
  name: string;
  /** The queue the task waits in. @default "default" */
  queue: string;
  status: TaskStatus;
  /** The submitted payload (`{}` when none was given). */
  payload: Payload;
  /** The handler's result; `null` until the task succeeded. */
  result: Result | null;
  /** The last error envelope (§12); kept when the task is requeued, cleared by `retry`. */
  error: unknown;
  /**
   * What the submitter attached (a submit stores `{}` for none), with any trace context CairnQ keeps
   * beside it (`cairnq.trace`). An object for every task CairnQ submits; a row a protocol v1 peer wrote
   * may hold any JSON value (`null`, an array, a string, a number), which readers show as stored.
   */
  metadata: Record<string, unknown>;
  /** Progress reported by the handler; `1` once succeeded. No range check. */
  progress: number | null;
  message: string | null;
  /** Claims since creation or the last reset retry. */
  attempt: number;
  max_attempts: number;
  /** Higher is claimed first. */
  priority: number;
  /** The owner while running; the last attempt's worker once terminal. */
  worker_id: string | null;
  /** Non-null exactly while running. */
  lease_until_ms: number | null;
  /** When the task becomes claimable. */
  run_at_ms: number;
  /** Set when a running task was asked to cancel. */
  cancel_requested_at_ms: number | null;
  parent_id: string | null;
  root_id: string | null;
  correlation_id: string | null;
  created_at_ms: number;
  updated_at_ms: number;
  /** Non-null exactly while terminal. */
  completed_at_ms: number | null;
}

/** What the status probes return: the id and status only (§2.5). */
export interface TaskRef {
  id: string;
  status: TaskStatus;
}

/** Every column of {@link Task}, in the schema's column order (§3.1). */
export const TASK_COLUMNS = [
  "id",
  "name",
  "queue",
  "status",
  "payload",
  "result",
  "error",
  "metadata",
  "progress",
  "message",
  "attempt",
  "max_attempts",
  "priority",
  "worker_id",
  "lease_until_ms",
  "run_at_ms",
  "cancel_requested_at_ms",
  "parent_id",
  "root_id",
  "correlation_id",
  "created_at_ms",
  "updated_at_ms",
  "completed_at_ms",
] as const satisfies readonly (keyof Task)[];

/** A column of the task table. */
export type TaskColumn = (typeof TASK_COLUMNS)[number];

/** The JSON columns: encoded at the boundary (§2.2), decoded on read. */
export const JSON_COLUMNS = ["payload", "result", "error", "metadata"] as const satisfies readonly TaskColumn[];

/** The integer-millisecond columns, normalized to numbers on read. */
export const MS_COLUMNS = [
  "lease_until_ms",
  "run_at_ms",
  "cancel_requested_at_ms",
  "created_at_ms",
  "updated_at_ms",
  "completed_at_ms",
] as const satisfies readonly TaskColumn[];
