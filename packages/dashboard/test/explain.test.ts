/** `explainTask` and the formatters, as pure functions of a row and a clock. */
import type { Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { describeError, explainTask, formatDuration, formatRelative } from "@cairnq/dashboard";

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

function row(fields: Partial<Task>): Task {
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
    run_at_ms: NOW - 5000,
    cancel_requested_at_ms: null,
    parent_id: null,
    root_id: "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP",
    correlation_id: null,
    created_at_ms: NOW - 5000,
    updated_at_ms: NOW - 5000,
    completed_at_ms: null,
    ...fields,
  };
}

const ENVELOPE = { type: "TaskError", code: "upstream", message: "503", retryable: true, details: {} };

describe("explainTask", () => {
  it("queued and not due: delayed, or backing off after a failed attempt", () => {
    expect(explainTask(row({ run_at_ms: NOW + 300_000 }), { nowMs: NOW })).toMatchObject({
      state: "delayed",
      atMs: NOW + 300_000,
      summary: expect.stringContaining("Not due until 2026-12-01T10:05:00.000Z (in 5 min)"),
    });
    const backingOff = explainTask(row({ run_at_ms: NOW + 2000, attempt: 2, error: ENVELOPE }), { nowMs: NOW });
    expect(backingOff.state).toBe("backing-off");
    expect(backingOff.summary).toContain("Backing off after attempt 2 of 3 failed");
    expect(backingOff.summary).toContain("for attempt 3");
    expect(backingOff.summary).toContain('TaskError upstream: "503" (retryable)');
  });

  it("queued and due: unclaimed when nothing claims the queue recently, waiting when workers are busy", () => {
    const none = { runningOnQueue: 0, runningWithName: 0, lastFinishedAtMs: null, queuedOnQueue: 1 };
    expect(explainTask(row({}), { nowMs: NOW, activity: none })).toMatchObject({
      state: "unclaimed",
      summary: expect.stringContaining("Is a worker running with a handler for 'email' on queue 'mail' against this database?"),
    });
    const stale = { ...none, lastFinishedAtMs: NOW - 600_000 };
    expect(explainTask(row({}), { nowMs: NOW, activity: stale }).summary).toContain("the last one finished 2026-12-01T09:50:00.000Z (10 min ago)");
    const busy = { runningOnQueue: 3, runningWithName: 1, lastFinishedAtMs: NOW - 1000, queuedOnQueue: 40 };
    const waiting = explainTask(row({ priority: 2 }), { nowMs: NOW, activity: busy });
    expect(waiting.state).toBe("waiting");
    expect(waiting.summary).toContain("3 tasks of the queue are running now (1 named 'email')");
    expect(waiting.summary).toContain("40 tasks are queued in it, claimed by priority (this one has 2)");
    const recent = explainTask(row({}), { nowMs: NOW, activity: { ...none, lastFinishedAtMs: NOW - 60_000 } });
    expect(recent.state).toBe("waiting");
    expect(explainTask(row({}), { nowMs: NOW }).state).toBe("waiting");
  });

  it("running: under its worker, cancel requested, or lease expired awaiting recovery", () => {
    const running = row({ status: "running", attempt: 1, worker_id: "worker_A", lease_until_ms: NOW + 20_000, progress: 0.25, message: "step 2" });
    expect(explainTask(running, { nowMs: NOW })).toMatchObject({
      state: "running",
      atMs: NOW + 20_000,
      summary: expect.stringContaining('Running under worker worker_A (attempt 1 of 3); its lease is held until 2026-12-01T10:00:20.000Z (in 20 s)'),
    });
    expect(explainTask(running, { nowMs: NOW }).summary).toContain('Last progress: 25% "step 2".');
    const flagged = explainTask({ ...running, cancel_requested_at_ms: NOW - 2000 }, { nowMs: NOW });
    expect(flagged.state).toBe("cancel-requested");
    expect(flagged.summary).toContain("Cancel requested 2026-12-01T09:59:58.000Z (2 s ago)");
    const expired = explainTask({ ...running, lease_until_ms: NOW - 1000 }, { nowMs: NOW });
    expect(expired.state).toBe("lease-expired");
    expect(expired.summary).toContain("goes back to the queue for attempt 2");
    expect(explainTask({ ...running, attempt: 3, lease_until_ms: NOW - 1 }, { nowMs: NOW }).summary).toContain("ends failed with lease_expired");
    expect(explainTask({ ...running, lease_until_ms: NOW - 1, cancel_requested_at_ms: NOW - 5 }, { nowMs: NOW }).summary).toContain("ends canceled");
  });

  it("finished: succeeded, failed with its envelope, canceled and how", () => {
    const done = { worker_id: "worker_A", attempt: 1, completed_at_ms: NOW - 60_000 };
    expect(explainTask(row({ ...done, status: "succeeded", created_at_ms: NOW - 90_000 }), { nowMs: NOW }).summary).toBe(
      "Finished: succeeded 2026-12-01T09:59:00.000Z (1 min ago) on attempt 1 of 3 under worker worker_A, 30 s after it was submitted.",
    );
    const failed = explainTask(row({ ...done, status: "failed", attempt: 3, error: { ...ENVELOPE, retryable: false } }), { nowMs: NOW });
    expect(failed.summary).toContain('with no attempts left: TaskError upstream: "503" (not retryable)');
    expect(explainTask(row({ ...done, status: "failed", error: null }), { nowMs: NOW }).summary).toContain("by a non-retryable failure: no error envelope");
    expect(explainTask(row({ status: "canceled", completed_at_ms: NOW }), { nowMs: NOW }).summary).toContain("while queued, before any worker claimed it");
    expect(explainTask(row({ ...done, status: "canceled", cancel_requested_at_ms: NOW - 61_000 }), { nowMs: NOW }).summary).toContain("while running under worker worker_A");
    expect(explainTask(row({ ...done, status: "canceled", error: ENVELOPE }), { nowMs: NOW }).summary).toContain("while queued between attempts");
  });
});

describe("formatting", () => {
  it("durations take at most two units; relative times say in/ago", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_000)).toBe("12 s");
    expect(formatDuration(250_000)).toBe("4 min 10 s");
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000 + 7000)).toBe("3 h 5 min");
    expect(formatDuration(2 * 86_400_000)).toBe("2 d");
    expect(formatRelative(NOW + 300, NOW)).toBe("just now");
    expect(formatRelative(NOW - 90_000, NOW)).toBe("1 min 30 s ago");
    expect(formatRelative(NOW + 7_200_000, NOW)).toBe("in 2 h");
  });

  it("describeError reads an envelope, tolerating partial ones", () => {
    expect(describeError({ code: "boom" })).toBe("boom");
    expect(describeError({ message: "plain" })).toBe('"plain"');
    expect(describeError({})).toBeNull();
    expect(describeError("text")).toBeNull();
    expect(describeError(null)).toBeNull();
  });
});
