/**
 * Bulk cancel and retry batches as pure functions: the selection (guard,
 * filters, cursor, order, limit), the single-row rules' branches reused, and
 * input validation.
 */
import { describe, expect, it } from "vitest";
import { CANCEL_BATCH, DEFAULT_BULK_LIMIT, RETRY_BATCH, cancelBatchParams, nextBatchCursor, retryBatchParams } from "../src/bulk.js";
import { applyBranches, selectRows } from "../src/decide.js";
import { InvalidArgument } from "../src/errors.js";
import { CANCEL, RETRY } from "../src/rules.js";
import type { Task } from "../src/task.js";
import { NOW, W1, idOf, queuedRow, runningRow, terminalRow } from "./fixtures.js";

function rows(): Task[] {
  return [
    queuedRow({ id: idOf(1) }),
    runningRow({ id: idOf(2) }),
    terminalRow("failed", { id: idOf(3), queue: "emails" }),
    terminalRow("canceled", { id: idOf(4) }),
    terminalRow("succeeded", { id: idOf(5) }),
    queuedRow({ id: idOf(6), name: "other", root_id: "task_root", correlation_id: "c1" }),
  ];
}

const ids = (picked: Task[]): string[] => picked.map((row) => row.id);

describe("bulk batches", () => {
  it("reuse the single-row rules' branches and clocks", () => {
    expect(CANCEL_BATCH.branches).toBe(CANCEL.branches);
    expect(RETRY_BATCH.branches).toBe(RETRY.branches);
    expect(CANCEL_BATCH.clock).toBe(CANCEL.clock);
    expect(RETRY_BATCH.clock).toBe(RETRY.clock);
    expect(CANCEL_BATCH.selection.skipLocked).toBe(false);
  });

  it("select only rows the single rule's guard admits, in id order, after the cursor, up to the limit", () => {
    expect(ids(selectRows(CANCEL_BATCH.selection, rows().reverse(), cancelBatchParams(), NOW))).toEqual([idOf(1), idOf(2), idOf(6)]);
    expect(ids(selectRows(RETRY_BATCH.selection, rows(), retryBatchParams(), NOW))).toEqual([idOf(3), idOf(4)]);
    expect(ids(selectRows(CANCEL_BATCH.selection, rows(), cancelBatchParams({ limit: 2 }), NOW))).toEqual([idOf(1), idOf(2)]);
    expect(ids(selectRows(CANCEL_BATCH.selection, rows(), cancelBatchParams({ afterId: idOf(2) }), NOW))).toEqual([idOf(6)]);
  });

  it("AND every list filter", () => {
    const pick = (filter: object) => ids(selectRows(CANCEL_BATCH.selection, rows(), cancelBatchParams(filter), NOW));
    expect(pick({ status: "running" })).toEqual([idOf(2)]);
    expect(pick({ name: "other" })).toEqual([idOf(6)]);
    expect(pick({ rootId: "task_root" })).toEqual([idOf(6)]);
    expect(pick({ correlationId: "c1", queue: "default" })).toEqual([idOf(6)]);
    expect(ids(selectRows(RETRY_BATCH.selection, rows(), retryBatchParams({ queue: "emails", status: "failed" }), NOW))).toEqual([idOf(3)]);
  });

  it("apply the single rule's transition to each picked row", () => {
    const [queued, running] = selectRows(CANCEL_BATCH.selection, rows(), cancelBatchParams(), NOW);
    expect(applyBranches(CANCEL_BATCH.branches, queued as Task, {}, NOW).row).toMatchObject({ status: "canceled", completed_at_ms: NOW });
    expect(applyBranches(CANCEL_BATCH.branches, running as Task, {}, NOW).row).toMatchObject({ status: "running", worker_id: W1, cancel_requested_at_ms: NOW });
    const failed = terminalRow("failed", { id: idOf(3), attempt: 3 });
    expect(applyBranches(RETRY_BATCH.branches, failed, retryBatchParams({ resetAttempt: true }), NOW).row).toMatchObject({ status: "queued", attempt: 0, error: null });
    expect(applyBranches(RETRY_BATCH.branches, failed, retryBatchParams(), NOW).row).toMatchObject({ status: "queued", attempt: 3 });
  });

  it("default the limit and bind every parameter", () => {
    expect(cancelBatchParams(undefined)).toEqual({ status: null, queue: null, name: null, rootId: null, correlationId: null, limit: DEFAULT_BULK_LIMIT, afterId: null });
    expect(retryBatchParams(null as never)).toMatchObject({ resetAttempt: false, limit: DEFAULT_BULK_LIMIT });
    expect(cancelBatchParams({ queue: undefined })).toMatchObject({ queue: null });
  });

  it("reject bad input with InvalidArgument naming it", () => {
    expect(() => cancelBatchParams({ state: "queued" } as never)).toThrow(/'state' is not an option of cancelMany; the options are status, queue/);
    expect(() => cancelBatchParams({ resetAttempt: true } as never)).toThrow(InvalidArgument);
    expect(() => cancelBatchParams([] as never)).toThrow(/an array/);
    expect(() => cancelBatchParams("x" as never)).toThrow(/got "x"$/);
    expect(() => cancelBatchParams({ status: "failed" })).toThrow(/cancelMany status must be one of queued, running \(a failed task is never changed by it\), got "failed"/);
    expect(() => retryBatchParams({ status: "succeeded" })).toThrow(/retryMany status must be one of failed, canceled/);
    expect(() => retryBatchParams({ status: "bogus" as never })).toThrow(/statuses are queued, running/);
    expect(() => retryBatchParams({ status: null as never })).not.toThrow();
    expect(() => cancelBatchParams({ status: 3 as never })).toThrow(/got 3$/);
    expect(() => retryBatchParams({ resetAttempt: null as never, status: undefined })).not.toThrow();
    expect(() => cancelBatchParams(Object.assign(Object.create(null) as object, { status: false }) as never)).toThrow(/got false$/);
    expect(() => cancelBatchParams({ limit: 0 })).toThrow(InvalidArgument);
    expect(() => cancelBatchParams({ queue: "" })).toThrow(InvalidArgument);
    expect(() => retryBatchParams({ resetAttempt: "yes" as never })).toThrow(/resetAttempt must be a boolean, got "yes"/);
    expect(() => retryBatchParams({ resetAttempt: 1 as never })).toThrow(/got 1$/);
  });

  it("hold every filter to the same TEXT_LIMITS as list and purge", () => {
    const cases: [string, number, () => unknown][] = [
      ["queue", 256, () => cancelBatchParams({ queue: "q".repeat(2000) })],
      ["name", 1024, () => retryBatchParams({ name: "n".repeat(2000) })],
      ["rootId", 1024, () => cancelBatchParams({ rootId: "r".repeat(2000) })],
      ["correlationId", 1024, () => cancelBatchParams({ correlationId: "c".repeat(2000) })],
      ["afterId", 1024, () => retryBatchParams({ afterId: "a".repeat(2000) })],
    ];
    for (const [argument, limit, call] of cases) {
      expect(call).toThrow(InvalidArgument);
      expect(call).toThrow(new RegExp(`^${argument} is 2000 bytes long in UTF-8, over the limit of ${limit} bytes`));
    }
    expect(cancelBatchParams({ queue: "q".repeat(256) }).queue).toHaveLength(256);
  });

  it("move the cursor to the greatest id changed", () => {
    expect(nextBatchCursor([])).toBeNull();
    expect(nextBatchCursor([idOf(3), idOf(7), idOf(5)])).toBe(idOf(7));
  });
});
