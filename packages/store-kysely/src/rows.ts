import type { Task, TaskRef, TaskStatus } from "@cairnq/protocol";
import { decodeJson, toMs } from "@cairnq/protocol/adapter";
import type { Row } from "./executor.js";

function text(value: unknown): string | null {
  return value === null || value === undefined ? null : (value as string);
}

function num(value: unknown): number {
  return typeof value === "number" ? value : Number(value);
}

/**
 * Decodes a task row as a driver returned it (§2.2, §2.5): every column of
 * §3.1 in order, JSON columns parsed (only when the driver returned text),
 * `*_ms` columns as numbers (Postgres drivers may return `bigint` as text),
 * SQL NULL as `null`.
 *
 * @example
 * const task = decodeTask(result.rows[0]);
 */
export function decodeTask(row: Row): Task {
  return {
    id: String(row.id),
    name: String(row.name),
    queue: String(row.queue),
    status: row.status as TaskStatus,
    payload: decodeJson(row.payload),
    result: decodeJson(row.result),
    error: decodeJson(row.error),
    metadata: decodeJson(row.metadata) as Record<string, unknown>,
    progress: row.progress === null || row.progress === undefined ? null : num(row.progress),
    message: text(row.message),
    attempt: num(row.attempt),
    max_attempts: num(row.max_attempts),
    priority: num(row.priority),
    worker_id: text(row.worker_id),
    lease_until_ms: toMs(row.lease_until_ms),
    run_at_ms: toMs(row.run_at_ms) as number,
    cancel_requested_at_ms: toMs(row.cancel_requested_at_ms),
    parent_id: text(row.parent_id),
    root_id: text(row.root_id),
    correlation_id: text(row.correlation_id),
    created_at_ms: toMs(row.created_at_ms) as number,
    updated_at_ms: toMs(row.updated_at_ms) as number,
    completed_at_ms: toMs(row.completed_at_ms),
  };
}

/** Decodes an `{ id, status }` row (§2.5 "TaskRef"). */
export function decodeTaskRef(row: Row): TaskRef {
  return { id: String(row.id), status: row.status as TaskStatus };
}

/** `rows` by their `id` column: how a multi-row statement's rows are matched to their callers (never by position). */
export function rowsById(rows: readonly Row[]): Map<string, Row> {
  const out = new Map<string, Row>();
  for (const row of rows) out.set(String(row.id), row);
  return out;
}
