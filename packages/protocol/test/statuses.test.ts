import { describe, expect, it } from "vitest";
import {
  CANCELABLE_STATUSES,
  FLAGGABLE_STATUSES,
  RETRYABLE_STATUSES,
  STATUSES,
  TERMINAL_STATUSES,
  cancelRequested,
  isCanceled,
  isFailed,
  isQueued,
  isRunning,
  isSucceeded,
  isTaskStatus,
  isTerminal,
  isTerminalStatus,
} from "../src/statuses.js";
import type { TaskStatus } from "../src/statuses.js";

describe("status lists (§4)", () => {
  it("declares the five statuses in life-cycle order, matching the CHECK of §3.1", () => {
    expect(STATUSES).toEqual(["queued", "running", "succeeded", "failed", "canceled"]);
  });

  it("terminal = succeeded, failed, canceled", () => {
    expect(TERMINAL_STATUSES).toEqual(["succeeded", "failed", "canceled"]);
  });

  it("retry accepts failed and canceled only; succeeded cannot be retried (§5.8)", () => {
    expect(RETRYABLE_STATUSES).toEqual(["failed", "canceled"]);
  });

  it("cancel accepts queued and running only (§5.7)", () => {
    expect(CANCELABLE_STATUSES).toEqual(["queued", "running"]);
  });

  it("a cancel flag may stand on running, canceled and succeeded rows only (§4)", () => {
    expect(FLAGGABLE_STATUSES).toEqual(["running", "canceled", "succeeded"]);
  });

  it("every terminal, retryable, cancelable and flaggable status is one of the five", () => {
    for (const s of [...TERMINAL_STATUSES, ...RETRYABLE_STATUSES, ...CANCELABLE_STATUSES, ...FLAGGABLE_STATUSES]) expect(STATUSES).toContain(s);
  });
});

describe("isTaskStatus", () => {
  it.each(STATUSES)("accepts %s", (status) => {
    expect(isTaskStatus(status)).toBe(true);
  });

  it.each([["Queued"], ["done"], [""], [" queued"], [null], [undefined], [1], [{}], [["queued"]]])("rejects %j", (value) => {
    expect(isTaskStatus(value)).toBe(false);
  });
});

describe("status predicates", () => {
  const table: Record<TaskStatus, { terminal: boolean; queued: boolean; running: boolean; succeeded: boolean; failed: boolean; canceled: boolean }> = {
    queued: { terminal: false, queued: true, running: false, succeeded: false, failed: false, canceled: false },
    running: { terminal: false, queued: false, running: true, succeeded: false, failed: false, canceled: false },
    succeeded: { terminal: true, queued: false, running: false, succeeded: true, failed: false, canceled: false },
    failed: { terminal: true, queued: false, running: false, succeeded: false, failed: true, canceled: false },
    canceled: { terminal: true, queued: false, running: false, succeeded: false, failed: false, canceled: true },
  };

  it.each(STATUSES)("%s", (status) => {
    const want = table[status];
    const ref = { id: "task_x", status };
    expect(isTerminalStatus(status)).toBe(want.terminal);
    expect(isTerminal(ref)).toBe(want.terminal);
    expect(isQueued(ref)).toBe(want.queued);
    expect(isRunning(ref)).toBe(want.running);
    expect(isSucceeded(ref)).toBe(want.succeeded);
    expect(isFailed(ref)).toBe(want.failed);
    expect(isCanceled(ref)).toBe(want.canceled);
  });

  it("isTerminalStatus agrees with TERMINAL_STATUSES and rejects unknown strings", () => {
    for (const s of STATUSES) expect(isTerminalStatus(s)).toBe((TERMINAL_STATUSES as readonly string[]).includes(s));
    expect(isTerminalStatus("done")).toBe(false);
    expect(isTerminalStatus("")).toBe(false);
  });

  it("cancelRequested is true exactly when cancel_requested_at_ms is non-null (the §4 flag)", () => {
    expect(cancelRequested({ cancel_requested_at_ms: null })).toBe(false);
    expect(cancelRequested({ cancel_requested_at_ms: 0 })).toBe(true);
    expect(cancelRequested({ cancel_requested_at_ms: 1_700_000_000_000 })).toBe(true);
  });
});
