import { describe, expect, it } from "vitest";
import { COLUMN_DEFAULTS, applyBranches, buildInsert, chooseBranch, decideRow, selectRows } from "../src/decide.js";
import { x } from "../src/expr.js";
import type { Branch, InsertRule, RowTransition, Selection } from "../src/rules.js";
import { TASK_COLUMNS } from "../src/task.js";
import type { Task } from "../src/task.js";
import { CREATED, ID, NOW, expectPostState, idOf, queuedRow, runningRow } from "./fixtures.js";

const isRunning = x.eq(x.col("status"), x.lit("running"));

describe("chooseBranch", () => {
  const branches: Branch[] = [
    { name: "first", to: "canceled", when: x.eq(x.col("attempt"), x.lit(1)), set: {} },
    { name: "second", to: "failed", when: x.eq(x.col("attempt"), x.lit(2)), set: {} },
    { name: "otherwise", to: "queued", when: null, set: {} },
  ];
  const s = (row: Record<string, unknown>) => ({ row, params: {}, nowMs: NOW });

  it("picks the first branch whose condition holds", () => {
    expect(chooseBranch(branches, s({ attempt: 1 })).name).toBe("first");
    expect(chooseBranch(branches, s({ attempt: 2 })).name).toBe("second");
  });

  it("falls through to the otherwise branch, including when a condition is unknown", () => {
    expect(chooseBranch(branches, s({ attempt: 3 })).name).toBe("otherwise");
    expect(chooseBranch(branches, s({ attempt: null })).name).toBe("otherwise");
  });

  it("throws when no branch holds and there is no otherwise", () => {
    expect(() => chooseBranch(branches.slice(0, 2), s({ attempt: 3 }))).toThrow(/'otherwise'/);
    expect(() => chooseBranch([], s({}))).toThrow(/'otherwise'/);
  });
});

describe("applyBranches", () => {
  it("evaluates every assignment against the row as it was before the write (UPDATE … SET)", () => {
    const branches: Branch[] = [
      {
        name: "bump",
        to: "running",
        when: null,
        // priority reads attempt, which this very branch also assigns.
        set: { attempt: x.add(x.col("attempt"), x.lit(1)), priority: x.col("attempt"), message: x.col("status"), status: x.lit("running") },
      },
    ];
    const before = queuedRow({ attempt: 4 });
    const out = applyBranches(branches, before, {}, NOW);
    expect(out.branch).toBe("bump");
    expectPostState(out.row, before, { attempt: 5, priority: 4, message: "queued", status: "running" });
  });

  it("does not mutate the input row and always sets updated_at_ms = now", () => {
    const before = queuedRow();
    const snapshot = structuredClone(before);
    const out = applyBranches([{ name: "noop", to: "queued", when: null, set: {} }], before, {}, NOW);
    expect(before).toEqual(snapshot);
    expect(out.row).not.toBe(before);
    expectPostState(out.row, before, {});
  });

  it("applies the chosen branch's values and leaves columns other branches assign untouched", () => {
    const branches: Branch[] = [
      { name: "a", to: "canceled", when: x.eq(x.param("pick", "text"), x.lit("a")), set: { status: x.lit("canceled"), message: x.lit("A") } },
      { name: "b", to: "failed", when: null, set: { status: x.lit("failed"), progress: x.lit(0.25) } },
    ];
    const before = runningRow();
    const a = applyBranches(branches, before, { pick: "a" }, NOW);
    expect(a.branch).toBe("a");
    expectPostState(a.row, before, { status: "canceled", message: "A" });
    const b = applyBranches(branches, before, { pick: "b" }, NOW);
    expect(b.branch).toBe("b");
    expectPostState(b.row, before, { status: "failed", progress: 0.25 });
  });
});

describe("decideRow", () => {
  const transition = (onMiss: RowTransition["onMiss"]): RowTransition => ({
    op: "test",
    clock: "transaction",
    guard: x.and(x.eq(x.col("id"), x.param("taskId", "text")), isRunning),
    branches: [{ name: "done", to: "succeeded", when: null, set: { status: x.lit("succeeded") } }],
    onMiss,
  });

  it("a missing row is lost-lease for owned writes and not-matched for client operations", () => {
    expect(decideRow(transition("lost-lease"), null, { taskId: ID }, NOW)).toEqual({ kind: "lost-lease" });
    expect(decideRow(transition("null"), null, { taskId: ID }, NOW)).toEqual({ kind: "not-matched" });
  });

  it("a failed guard is a miss, whether false or unknown", () => {
    const row = queuedRow();
    expect(decideRow(transition("lost-lease"), row, { taskId: ID }, NOW)).toEqual({ kind: "lost-lease" });
    expect(decideRow(transition("null"), row, { taskId: ID }, NOW)).toEqual({ kind: "not-matched" });
    // Another id; and a null id parameter makes the guard unknown.
    expect(decideRow(transition("null"), runningRow(), { taskId: "task_other" }, NOW)).toEqual({ kind: "not-matched" });
    expect(decideRow(transition("null"), runningRow(), { taskId: null }, NOW)).toEqual({ kind: "not-matched" });
  });

  it("a matched guard applies the branches and reports the branch", () => {
    const before = runningRow();
    const d = decideRow(transition("lost-lease"), before, { taskId: ID }, NOW);
    expect(d.kind).toBe("applied");
    if (d.kind !== "applied") return;
    expect(d.branch).toBe("done");
    expectPostState(d.row, before, { status: "succeeded" });
  });
});

describe("selectRows", () => {
  const rows: Task[] = [
    queuedRow({ id: idOf(3), priority: 0, run_at_ms: 10 }),
    queuedRow({ id: idOf(1), priority: 0, run_at_ms: 10 }),
    queuedRow({ id: idOf(2), priority: 5, run_at_ms: 30 }),
    queuedRow({ id: idOf(4), priority: 0, run_at_ms: 5 }),
    runningRow({ id: idOf(5), priority: 9 }),
  ];
  const sel = (overrides: Partial<Selection> = {}): Selection => ({
    where: x.eq(x.col("status"), x.lit("queued")),
    orderBy: [
      { column: "priority", direction: "desc" },
      { column: "run_at_ms", direction: "asc" },
      { column: "id", direction: "asc" },
    ],
    limit: x.param("limit", "int"),
    skipLocked: false,
    ...overrides,
  });
  const ids = (picked: Task[]) => picked.map((r) => r.id);

  it("filters by the where clause and sorts by each order column in turn", () => {
    expect(ids(selectRows(sel(), rows, { limit: 10 }, NOW))).toEqual([idOf(2), idOf(4), idOf(1), idOf(3)]);
  });

  it("bounds by the limit parameter", () => {
    expect(ids(selectRows(sel(), rows, { limit: 2 }, NOW))).toEqual([idOf(2), idOf(4)]);
    expect(selectRows(sel(), rows, { limit: 0 }, NOW)).toEqual([]);
    expect(selectRows(sel(), rows, { limit: -3 }, NOW)).toEqual([]);
  });

  it("a non-numeric limit parameter does not bound", () => {
    expect(selectRows(sel(), rows, { limit: null }, NOW)).toHaveLength(4);
    expect(selectRows(sel(), rows, {}, NOW)).toHaveLength(4);
  });

  it("a selection without a limit or an order keeps every match in input order", () => {
    expect(ids(selectRows(sel({ limit: null, orderBy: [] }), rows, {}, NOW))).toEqual([idOf(3), idOf(1), idOf(2), idOf(4)]);
  });

  it("rows equal on every order column keep their relative order", () => {
    const twins = [queuedRow({ id: ID, message: "a" }), queuedRow({ id: ID, message: "b" })];
    const out = selectRows(sel({ orderBy: [{ column: "id", direction: "asc" }] }), twins, { limit: 5 }, NOW);
    expect(out.map((r) => r.message)).toEqual(["a", "b"]);
  });

  it("reads the rows through any iterable and never returns the rows it rejected", () => {
    const map = new Map(rows.map((r) => [r.id, r]));
    expect(ids(selectRows(sel({ where: isRunning }), map.values(), { limit: 5 }, NOW))).toEqual([idOf(5)]);
  });
});

describe("buildInsert", () => {
  const rule: InsertRule = {
    op: "submit",
    clock: "statement",
    values: {
      id: x.param("taskId", "text"),
      name: x.param("name", "text"),
      queue: x.param("queue", "text"),
      status: x.lit("queued"),
      priority: x.param("priority", "int"),
      run_at_ms: x.add(x.now, x.param("delay", "int")),
      created_at_ms: x.now,
    },
  };

  it("sets every column: the rule's values, then column defaults, then null", () => {
    const row = buildInsert(rule, { taskId: ID, name: "n", queue: "rpc", priority: 7, delay: 5 }, NOW);
    expect(Object.keys(row)).toEqual([...TASK_COLUMNS]);
    expect(row).toMatchObject({ id: ID, name: "n", queue: "rpc", status: "queued", priority: 7, run_at_ms: NOW + 5, created_at_ms: NOW });
    // Columns the rule does not set: their default (§3.1) or null.
    expect(row.attempt).toBe(0);
    expect(row.max_attempts).toBe(3);
    expect(row.metadata).toEqual({});
    expect(row.updated_at_ms).toBe(null);
    expect(row.worker_id).toBe(null);
  });

  it("an explicit null stays null, as a SQL insert of NULL does; unset columns take their defaults", () => {
    const row = buildInsert(rule, { taskId: ID, name: null, queue: null, priority: null, delay: 0 }, NOW);
    expect(row.queue).toBe(null);
    expect(row.priority).toBe(null);
    expect(row.name).toBe(null);
    expect(row.attempt).toBe(0);
  });

  it("defaults are copied per row, never shared", () => {
    const a = buildInsert({ op: "submit", clock: "statement", values: {} }, {}, NOW);
    const b = buildInsert({ op: "submit", clock: "statement", values: {} }, {}, NOW);
    (a.metadata).x = 1;
    expect(b.metadata).toEqual({});
  });

  it("reads no row: a rule referencing a column gets null", () => {
    const row = buildInsert({ op: "submit", clock: "statement", values: { message: x.col("message") } }, {}, NOW);
    expect(row.message).toBe(null);
  });

  it("COLUMN_DEFAULTS are the §3.1 defaults", () => {
    expect(COLUMN_DEFAULTS).toEqual({ queue: "default", metadata: {}, attempt: 0, max_attempts: 3, priority: 0 });
  });

  it("a created row is built at the given clock reading", () => {
    const row = buildInsert(rule, { taskId: ID, name: "n", queue: "q", priority: 0, delay: 0 }, CREATED);
    expect(row.created_at_ms).toBe(CREATED);
  });
});
