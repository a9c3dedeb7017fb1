/**
 * The row as the task list shows it: everything but the payload, result and
 * error, which can be large and load with the task's detail.
 */
import type { Task, TaskStatus } from "@cairnq/protocol";

/** A task as the list shows it: no payload, result or error (those load with the task). */
export interface TaskSummary {
  id: string;
  name: string;
  queue: string;
  status: TaskStatus;
  attempt: number;
  max_attempts: number;
  priority: number;
  progress: number | null;
  message: string | null;
  worker_id: string | null;
  cancel_requested: boolean;
  run_at_ms: number;
  created_at_ms: number;
  updated_at_ms: number;
  completed_at_ms: number | null;
}

/** The {@link TaskSummary} of a row. */
export function taskSummary(t: Task): TaskSummary {
  return {
    id: t.id,
    name: t.name,
    queue: t.queue,
    status: t.status,
    attempt: t.attempt,
    max_attempts: t.max_attempts,
    priority: t.priority,
    progress: t.progress,
    message: t.message,
    worker_id: t.worker_id,
    cancel_requested: t.cancel_requested_at_ms !== null,
    run_at_ms: t.run_at_ms,
    created_at_ms: t.created_at_ms,
    updated_at_ms: t.updated_at_ms,
    completed_at_ms: t.completed_at_ms,
  };
}
