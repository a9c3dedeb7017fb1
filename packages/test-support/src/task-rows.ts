/**
 * Rows the tests of the client and the CLI render or explain without a store:
 * a task row ({@link taskRow}) and a journal entry ({@link stepRecord}), each a
 * fixed default that a test overrides field by field. @cairnq/protocol keeps
 * its own fixtures (its tests cannot import this package, which depends on
 * it).
 */
import type { StepRecord, Task } from "@cairnq/protocol";

/** The clock the rows are laid out around (2026-12-01T10:00:00.000Z). */
export const TASK_ROW_NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

/**
 * A task row of `fields` over a queued task of 'email' on queue 'mail', due since 5 s before
 * {@link TASK_ROW_NOW}, on its first attempt (`attempt` 0 of 3).
 *
 * @example
 * const running = taskRow({ status: "running", attempt: 1, worker_id: "w1" });
 */
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
    run_at_ms: TASK_ROW_NOW - 5000,
    cancel_requested_at_ms: null,
    parent_id: null,
    root_id: null,
    correlation_id: null,
    created_at_ms: TASK_ROW_NOW - 5000,
    updated_at_ms: TASK_ROW_NOW - 5000,
    completed_at_ms: null,
    ...fields,
  };
}

/**
 * A durable-steps journal entry of `fields` over the first entry (`seq` 1) of a sleep 'nap' recorded on attempt 1
 * at {@link TASK_ROW_NOW}, still `waiting`, waking a minute later.
 *
 * @example
 * const wait = stepRecord({ name: "approval", kind: "wait", waitingFor: "approval", wakeAtMs: PARK_FOREVER_AT_MS });
 */
export function stepRecord(fields: Partial<StepRecord> = {}): StepRecord {
  return {
    name: "nap",
    kind: "sleep",
    status: "waiting",
    result: null,
    error: null,
    attempt: 1,
    atMs: TASK_ROW_NOW,
    wakeAtMs: TASK_ROW_NOW + 60_000,
    waitingFor: null,
    seq: 1,
    ...fields,
  };
}
