/**
 * Shared fixtures for the pure state-machine tests: rows in each status at a
 * pinned clock, owned-write parameters, and a full post-state assertion.
 *
 * Rows are built as the protocol stores them (§3.1) so a test can assert the
 * whole row after a transition: every column not named as changed must be
 * exactly what it was before.
 */
import { expect } from "vitest";
import type { Task } from "../src/task.js";

/** The operation's clock reading (§2.1). */
export const NOW = 1_700_000_000_000;
/** The worker that owns the running fixtures. */
export const W1 = "worker_01JAAAAAAAAAAAAAAAAAAAAAAA";
/** Another worker. */
export const W2 = "worker_01JBBBBBBBBBBBBBBBBBBBBBBB";
/** The id of every single-row fixture. */
export const ID = "task_01JCCCCCCCCCCCCCCCCCCCCCCC";

/** An earlier instant every fixture's history uses. */
export const CREATED = NOW - 60_000;

/** A queued task that is due, never claimed. */
export function queuedRow(overrides: Partial<Task> = {}): Task {
  return {
    id: ID,
    name: "summarize",
    queue: "default",
    status: "queued",
    payload: { url: "https://example.com" },
    result: null,
    error: null,
    metadata: { origin: "test" },
    progress: null,
    message: null,
    attempt: 0,
    max_attempts: 3,
    priority: 0,
    worker_id: null,
    lease_until_ms: null,
    run_at_ms: CREATED,
    cancel_requested_at_ms: null,
    parent_id: null,
    root_id: ID,
    correlation_id: null,
    created_at_ms: CREATED,
    updated_at_ms: CREATED,
    completed_at_ms: null,
    ...overrides,
  };
}

/**
 * A task W1 is running on its first attempt with a live lease, some progress
 * reported (so "kept" and "cleared" are visible per column).
 */
export function runningRow(overrides: Partial<Task> = {}): Task {
  return queuedRow({
    status: "running",
    attempt: 1,
    worker_id: W1,
    lease_until_ms: NOW + 10_000,
    progress: 0.5,
    message: "half",
    updated_at_ms: CREATED + 1_000,
    ...overrides,
  });
}

/** A terminal task (default `failed`) that W1 ran once, completed 5 s before {@link NOW}. */
export function terminalRow(status: "succeeded" | "failed" | "canceled" = "failed", overrides: Partial<Task> = {}): Task {
  return runningRow({
    status,
    lease_until_ms: null,
    completed_at_ms: NOW - 5_000,
    error: status === "failed" ? { code: "boom" } : null,
    result: status === "succeeded" ? { ok: true } : null,
    progress: status === "succeeded" ? 1 : 0.5,
    ...overrides,
  });
}

/** Parameters of an owned write by `workerId` (no attempt fence unless given). */
export function ownedParams(extra: Record<string, unknown> = {}, workerId = W1): Record<string, unknown> {
  return { taskId: ID, workerId, attempt: null, ...extra };
}

/**
 * Asserts the full post-state: `after` equals `before` with exactly `changes`
 * applied and `updated_at_ms = NOW` (§5.0: every update sets it).
 */
export function expectPostState(after: Task, before: Task, changes: Partial<Task>): void {
  expect(after).toEqual({ ...before, ...changes, updated_at_ms: NOW });
  // toEqual treats undefined and missing alike; a column must never go missing.
  expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
}

/** A task id whose ULID part sorts by `n` (for ordering tests). */
export function idOf(n: number): string {
  return `task_01J${String(n).padStart(23, "0")}`;
}
