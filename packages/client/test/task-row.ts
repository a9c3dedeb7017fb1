/**
 * The task row the `explain` tests explain: a queued task of 'email' on
 * queue 'mail', due since 5 s before {@link EXPLAIN_NOW}, on its first
 * attempt; each test overrides the fields it is about.
 */
import type { Task } from "@cairnq/protocol";

/** The clock the `explain` tests explain at. */
export const EXPLAIN_NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

/** A task row of `fields` over the defaults above. */
export function taskRow(fields: Partial<Task> = {}): Task {
  return {
    id: "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP",
    name: "email",
    queue: "mail",
    status: "queued",
    payload: {},
    result: null,
    error: null,
    metadata: {},
    progress: null,
    message: null,
    attempt: 0,
    max_attempts: 3,
    priority: 0,
    worker_id: null,
    lease_until_ms: null,
    run_at_ms: EXPLAIN_NOW - 5000,
    cancel_requested_at_ms: null,
    parent_id: null,
    root_id: null,
    correlation_id: null,
    created_at_ms: EXPLAIN_NOW - 5000,
    updated_at_ms: EXPLAIN_NOW - 5000,
    completed_at_ms: null,
    ...fields,
  };
}
