import { describe, expect, it } from "vitest";
import { holds } from "../src/expr.js";
import { LIST_ROWS, QUEUE_DEPTH_ROWS, STATS_ROWS } from "../src/reads.js";
import { queuedRow } from "./fixtures.js";

const row = queuedRow({ id: "task_5", queue: "q", name: "n", status: "queued", root_id: "task_r", correlation_id: "c" });
const none = { status: null, queue: null, name: null, rootId: null, correlationId: null, beforeId: null };
const scope = (params: Record<string, unknown>) => ({ row: row as never, params, nowMs: 0 });

describe("read filters (§5.4–§5.6)", () => {
  it("list: every given filter, AND-ed, and ids before beforeId", () => {
    expect(holds(LIST_ROWS, scope(none))).toBe(true);
    expect(holds(LIST_ROWS, scope({ ...none, queue: "q", status: "queued", name: "n", rootId: "task_r", correlationId: "c" }))).toBe(true);
    for (const miss of [{ queue: "other" }, { status: "running" }, { name: "m" }, { rootId: "task_x" }, { correlationId: "d" }, { beforeId: "task_5" }, { beforeId: "task_1" }]) {
      expect(holds(LIST_ROWS, scope({ ...none, ...miss }))).toBe(false);
    }
    expect(holds(LIST_ROWS, scope({ ...none, beforeId: "task_6" }))).toBe(true);
  });

  it("stats: one queue, or all when the queue is null", () => {
    expect(holds(STATS_ROWS, scope({ queue: null }))).toBe(true);
    expect(holds(STATS_ROWS, scope({ queue: "q" }))).toBe(true);
    expect(holds(STATS_ROWS, scope({ queue: "other" }))).toBe(false);
  });

  it("queueDepth: the queued rows of one queue", () => {
    expect(holds(QUEUE_DEPTH_ROWS, scope({ queue: "q" }))).toBe(true);
    expect(holds(QUEUE_DEPTH_ROWS, scope({ queue: "other" }))).toBe(false);
    expect(holds(QUEUE_DEPTH_ROWS, { row: { ...row, status: "running" }, params: { queue: "q" }, nowMs: 0 })).toBe(false);
  });
});
