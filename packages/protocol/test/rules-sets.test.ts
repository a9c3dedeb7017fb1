/**
 * The state machine of protocol v1, continued: ownership on every owned write,
 * the set transitions (heartbeat batches, lease recovery, retry, purge), the
 * claim probe, and the §4 invariants after every branch.
 */
import { describe, expect, it } from "vitest";
import { buildInsert, decideRow, selectRows } from "../src/decide.js";
import type { Params } from "../src/decide.js";
import { evaluate, holds, x } from "../src/expr.js";
import type { Expr } from "../src/expr.js";
import {
  CANCEL,
  CLAIMABLE,
  COMPLETE,
  DRAW,
  EXPIRED,
  FAIL,
  FLAG,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  OWNER,
  PARAMS,
  PARENT_WAITING,
  PROBE,
  PROGRESS,
  PURGE,
  RECOVER,
  RETRY,
  SUBMIT,
  SUCCEED,
  flattenAssignments,
} from "../src/rules.js";
import type { Branch, RowTransition, SetTransition } from "../src/rules.js";
import { isTerminalStatus } from "../src/statuses.js";
import type { TaskStatus } from "../src/statuses.js";
import { TASK_COLUMNS } from "../src/task.js";
import type { Task, TaskColumn } from "../src/task.js";
import { CREATED, ID, NOW, W1, W2, expectPostState, idOf, ownedParams, queuedRow, runningRow, terminalRow } from "./fixtures.js";
import { ERROR, LEASE_EXPIRED_TEXT, applied, drawParams, failParams, purgeParams, runSet } from "./rule-runs.js";

describe("the ownership predicate (§5.0) on every owned write", () => {
  const ops: [string, RowTransition, Params][] = [
    ["heartbeat", HEARTBEAT, { leaseMs: 1_000 }],
    ["progress", PROGRESS, { progress: 0.1, message: null }],
    ["succeed", SUCCEED, { result: null, message: null }],
    ["complete", COMPLETE, { result: null }],
    ["fail", FAIL, { error: ERROR, retryable: true, delayMs: 0 }],
  ];

  describe.each(ops)("%s", (_op, transition, extra) => {
    const decide = (row: Task | null, params: Params = {}) => decideRow(transition, row, ownedParams({ ...extra, ...params }), NOW);
    const lost = { kind: "lost-lease" };

    it("applies for the owner with a live lease", () => {
      expect(decide(runningRow()).kind).toBe("applied");
      expect(decide(runningRow({ lease_until_ms: NOW + 1 })).kind).toBe("applied");
    });

    it("wrong worker → lost-lease", () => {
      expect(decide(runningRow({ worker_id: W2 }))).toEqual(lost);
      expect(decide(runningRow(), { workerId: W2 })).toEqual(lost);
    });

    it("expired lease → lost-lease; the comparison is strict (lease = now is expired)", () => {
      expect(decide(runningRow({ lease_until_ms: NOW }))).toEqual(lost);
      expect(decide(runningRow({ lease_until_ms: NOW - 1 }))).toEqual(lost);
      expect(decide(runningRow({ lease_until_ms: null }))).toEqual(lost);
    });

    it("not running → lost-lease (each status, even with the owner's worker and a future lease)", () => {
      for (const status of ["queued", "succeeded", "failed", "canceled"] as TaskStatus[]) {
        expect(decide(runningRow({ status })), status).toEqual(lost);
      }
      expect(decide(queuedRow())).toEqual(lost);
      expect(decide(terminalRow("succeeded"))).toEqual(lost);
    });

    it("a stale attempt fence → lost-lease; a matching one applies; a null attempt means no fence", () => {
      const row = runningRow({ attempt: 2 });
      expect(decide(row, { attempt: 1 })).toEqual(lost);
      expect(decide(row, { attempt: 3 })).toEqual(lost);
      expect(decide(row, { attempt: 2 }).kind).toBe("applied");
      expect(decide(row, { attempt: null }).kind).toBe("applied");
      expect(decide(row, { attempt: undefined }).kind).toBe("applied");
    });

    it("a missing task or another task's id → lost-lease", () => {
      expect(decide(null)).toEqual(lost);
      expect(decide(runningRow(), { taskId: "task_other" })).toEqual(lost);
    });

    it("the guard reads the row at the moment of the write: a task re-claimed by the same worker still matches without a fence", () => {
      // Lease lost, recovered, re-claimed by W1 (attempt 2): an unfenced stale write passes (hence the fence).
      const reclaimed = runningRow({ attempt: 2, lease_until_ms: NOW + 5_000 });
      expect(decide(reclaimed).kind).toBe("applied");
      expect(decide(reclaimed, { attempt: 1 })).toEqual(lost);
    });
  });

  it("OWNER (strict >) and EXPIRED (≤) never both hold, and exactly one holds for a running row with a lease", () => {
    for (const lease of [NOW - 1, NOW, NOW + 1]) {
      const scope = { row: runningRow({ lease_until_ms: lease }) as unknown as Record<string, unknown>, params: { workerId: W1, attempt: null }, nowMs: NOW };
      expect(holds(OWNER, scope) !== holds(EXPIRED, scope), String(lease - NOW)).toBe(true);
    }
  });
});

describe("heartbeat_batch (§5.12)", () => {
  const rows = [
    runningRow({ id: idOf(1), lease_until_ms: NOW + 10 }),
    runningRow({ id: idOf(2), lease_until_ms: NOW + 10, cancel_requested_at_ms: NOW - 3 }),
    runningRow({ id: idOf(3), lease_until_ms: NOW }), // expired: strict
    runningRow({ id: idOf(4), worker_id: W2 }), // another owner
    terminalRow("succeeded", { id: idOf(5) }), // settled
    runningRow({ id: idOf(6) }), // not listed
  ];
  const params = (taskIds: string[], workerId = W1) => ({ taskIds, workerId, leaseMs: 7_000, attempt: null });

  it("renews every listed row still owned, and only those; the flag stays readable", () => {
    const out = runSet(HEARTBEAT_BATCH, rows, params([1, 2, 3, 4, 5].map(idOf)));
    expect(out.map((o) => o.row.id)).toEqual([idOf(1), idOf(2)]);
    for (const o of out) {
      const before = rows.find((r) => r.id === o.row.id)!;
      expect(o.branch).toBe("renew");
      expectPostState(o.row, before, { lease_until_ms: NOW + 7_000 });
    }
    expect(out.map((o) => o.row.cancel_requested_at_ms !== null)).toEqual([false, true]);
  });

  it("unlisted rows are untouched; empty ids or another worker select nothing", () => {
    expect(runSet(HEARTBEAT_BATCH, rows, params([idOf(1)])).map((o) => o.row.id)).toEqual([idOf(1)]);
    expect(runSet(HEARTBEAT_BATCH, rows, params([]))).toEqual([]);
    expect(runSet(HEARTBEAT_BATCH, rows, params([1, 2, 6].map(idOf), "worker_other"))).toEqual([]);
  });
});

describe("T11/T12/T13 lease recovery (§5.10 step 4)", () => {
  it("selects running rows with a non-null lease ≤ now, over the whole table (any queue, any name)", () => {
    const rows = [
      runningRow({ id: idOf(1), lease_until_ms: NOW, queue: "a", name: "x" }),
      runningRow({ id: idOf(2), lease_until_ms: NOW - 1, queue: "b", name: "y" }),
      runningRow({ id: idOf(3), lease_until_ms: NOW + 1 }),
      runningRow({ id: idOf(4), lease_until_ms: null }),
      queuedRow({ id: idOf(5) }),
      terminalRow("failed", { id: idOf(6), lease_until_ms: NOW - 1 }),
    ];
    expect(selectRows(RECOVER.selection, rows, {}, NOW).map((r) => r.id)).toEqual([idOf(1), idOf(2)]);
    expect(RECOVER.selection.where).toBe(EXPIRED);
    expect(RECOVER.selection.limit).toBe(null);
  });

  it("T11 flag → canceled: worker, run_at, error, progress/message kept; completed now; lease NULL", () => {
    const before = runningRow({ lease_until_ms: NOW - 1, cancel_requested_at_ms: NOW - 50, error: ERROR, attempt: 3, max_attempts: 3 });
    const [out] = runSet(RECOVER, [before], {});
    expect(out!.branch).toBe("cancel");
    expectPostState(out!.row, before, { status: "canceled", completed_at_ms: NOW, lease_until_ms: null });
  });

  it("T11 with attempts left still ends canceled (cancel wins, never requeued)", () => {
    const before = runningRow({ lease_until_ms: NOW, cancel_requested_at_ms: NOW - 50, attempt: 1, max_attempts: 3 });
    const [out] = runSet(RECOVER, [before], {});
    expect(out!.branch).toBe("cancel");
    expect(out!.row.status).toBe("canceled");
    expect(out!.row.error).toBe(null);
  });

  it("T12 no flag, attempt < max → queued: worker NULL, run_at now, error kept, completed kept (NULL), progress/message NULL, lease NULL", () => {
    const before = runningRow({ lease_until_ms: NOW, attempt: 2, max_attempts: 3, error: ERROR, run_at_ms: CREATED });
    const [out] = runSet(RECOVER, [before], {});
    expect(out!.branch).toBe("requeue");
    expectPostState(out!.row, before, { status: "queued", worker_id: null, run_at_ms: NOW, progress: null, message: null, lease_until_ms: null });
    expect(out!.row.attempt).toBe(2);
  });

  it("T13 no flag, attempt ≥ max → failed: lease-expired envelope (exact), completed now, worker/run_at/progress/message kept", () => {
    for (const attempt of [3, 4]) {
      const before = runningRow({ lease_until_ms: NOW - 1, attempt, max_attempts: 3 });
      const [out] = runSet(RECOVER, [before], {});
      expect(out!.branch).toBe("fail");
      expectPostState(out!.row, before, {
        status: "failed",
        error: JSON.parse(LEASE_EXPIRED_TEXT),
        completed_at_ms: NOW,
        lease_until_ms: null,
      });
      expect(JSON.stringify(out!.row.error)).toBe(LEASE_EXPIRED_TEXT);
    }
  });

  it("the envelope is a fresh document per row (writing into one row's error cannot change another's)", () => {
    const rows = [1, 2].map((n) => runningRow({ id: idOf(n), lease_until_ms: NOW - 1, attempt: 3, max_attempts: 3 }));
    const [a, b] = runSet(RECOVER, rows, {});
    expect(a!.row.error).not.toBe(b!.row.error);
  });

  it("a just-recovered task is claimable by a draw in the same cycle", () => {
    const before = runningRow({ lease_until_ms: NOW - 1, attempt: 1 });
    const [recovered] = runSet(RECOVER, [before], {});
    const [drawn] = runSet(DRAW, [recovered!.row], drawParams());
    expect(drawn!.row).toMatchObject({ status: "running", worker_id: W2, attempt: 2, lease_until_ms: NOW + 5_000 });
  });
});

describe("T14 retry (§5.8)", () => {
  const cleared = {
    status: "queued" as const,
    error: null,
    worker_id: null,
    lease_until_ms: null,
    cancel_requested_at_ms: null,
    completed_at_ms: null,
    progress: null,
    message: null,
    run_at_ms: NOW,
  };

  it("failed → queued: error, worker, lease, flag, completed, progress, message NULL; run_at now; attempt kept; result untouched", () => {
    const before = terminalRow("failed", { attempt: 3, max_attempts: 3, error: ERROR });
    const out = applied(decideRow(RETRY, before, { taskId: ID, resetAttempt: false }, NOW));
    expect(out.branch).toBe("requeue");
    expectPostState(out.row, before, cleared);
    expect(out.row.attempt).toBe(3);
  });

  it("canceled (with flag) → queued, the flag cleared; reset_attempt sets attempt to 0", () => {
    const before = terminalRow("canceled", { attempt: 2, cancel_requested_at_ms: NOW - 100, result: { kept: true } });
    const out = applied(decideRow(RETRY, before, { taskId: ID, resetAttempt: true }, NOW));
    expectPostState(out.row, before, { ...cleared, attempt: 0 });
    expect(out.row.result).toEqual({ kept: true });
  });

  it("a task canceled while queued (never ran) is retried too", () => {
    const before = queuedRow({ status: "canceled", completed_at_ms: NOW - 10, run_at_ms: NOW + 60_000 });
    expectPostState(applied(decideRow(RETRY, before, { taskId: ID, resetAttempt: false }, NOW)).row, before, cleared);
  });

  it("a null reset_attempt keeps the attempt", () => {
    const before = terminalRow("failed", { attempt: 2 });
    expect(applied(decideRow(RETRY, before, { taskId: ID, resetAttempt: null }, NOW)).row.attempt).toBe(2);
  });

  it.each([["queued"], ["running"], ["succeeded"]] as const)("a %s task is not matched (succeeded cannot be retried)", (status) => {
    const row = status === "queued" ? queuedRow() : status === "running" ? runningRow() : terminalRow("succeeded");
    expect(decideRow(RETRY, row, { taskId: ID, resetAttempt: true }, NOW)).toEqual({ kind: "not-matched" });
  });

  it("a missing task is not matched", () => {
    expect(decideRow(RETRY, null, { taskId: ID, resetAttempt: false }, NOW)).toEqual({ kind: "not-matched" });
  });

  it("without reset an exhausted task gets exactly one more attempt", () => {
    let row = terminalRow("failed", { attempt: 3, max_attempts: 3 });
    row = applied(decideRow(RETRY, row, { taskId: ID, resetAttempt: false }, NOW)).row;
    row = runSet(DRAW, [row], drawParams({ workerId: W1 }))[0]!.row;
    expect(row.attempt).toBe(4);
    const out = applied(decideRow(FAIL, row, failParams(), NOW));
    expect(out.row.status).toBe("failed");
  });
});

describe("T15 purge (§5.9)", () => {
  const at = (completed: number, overrides: Partial<Task> = {}, status: "succeeded" | "failed" | "canceled" = "succeeded") =>
    terminalRow(status, { completed_at_ms: completed, ...overrides });
  const ids = (rows: Task[], params: Params = purgeParams()) => selectRows(PURGE.selection, rows, params, NOW).map((r) => r.id);

  it("eligibility is strict: completed_at_ms < now − older_than_ms", () => {
    const rows = [at(NOW - 1_001, { id: idOf(1) }), at(NOW - 1_000, { id: idOf(2) }), at(NOW - 999, { id: idOf(3) })];
    expect(ids(rows, purgeParams({ olderThanMs: 1_000 }))).toEqual([idOf(1)]);
    // Cutoff 0: a row completed in this very millisecond is not yet old enough.
    expect(ids([at(NOW, { id: idOf(4) }), at(NOW - 1, { id: idOf(5) })])).toEqual([idOf(5)]);
  });

  it("terminal rows only: every terminal status qualifies; queued/running never do, even with a status filter", () => {
    const rows = [
      at(NOW - 10, { id: idOf(1) }, "succeeded"),
      at(NOW - 10, { id: idOf(2) }, "failed"),
      at(NOW - 10, { id: idOf(3) }, "canceled"),
      // Inconsistent rows (a peer bug, or a retried row read mid-way) carrying a completion time.
      queuedRow({ id: idOf(4), completed_at_ms: NOW - 10 }),
      runningRow({ id: idOf(5), completed_at_ms: NOW - 10 }),
    ];
    expect(ids(rows)).toEqual([1, 2, 3].map(idOf));
    expect(ids(rows, purgeParams({ status: "queued" }))).toEqual([]);
    expect(ids(rows, purgeParams({ status: "running" }))).toEqual([]);
  });

  it("a terminal row without completed_at_ms is never purged", () => {
    expect(ids([terminalRow("failed", { completed_at_ms: null })])).toEqual([]);
  });

  it("optional filters: queue, status, name each narrow; null means no filter; they AND together", () => {
    const rows = [
      at(NOW - 10, { id: idOf(1), queue: "rpc", name: "alpha" }, "succeeded"),
      at(NOW - 10, { id: idOf(2), queue: "rpc", name: "beta" }, "failed"),
      at(NOW - 10, { id: idOf(3), queue: "jobs", name: "alpha" }, "failed"),
      at(NOW - 10, { id: idOf(4), queue: "jobs", name: "beta" }, "canceled"),
    ];
    expect(ids(rows)).toEqual([1, 2, 3, 4].map(idOf));
    expect(ids(rows, purgeParams({ queue: "rpc" }))).toEqual([1, 2].map(idOf));
    expect(ids(rows, purgeParams({ status: "failed" }))).toEqual([2, 3].map(idOf));
    expect(ids(rows, purgeParams({ name: "alpha" }))).toEqual([1, 3].map(idOf));
    expect(ids(rows, purgeParams({ queue: "jobs", status: "failed" }))).toEqual([idOf(3)]);
    expect(ids(rows, purgeParams({ queue: "jobs", status: "failed", name: "beta" }))).toEqual([]);
    expect(ids(rows, purgeParams({ queue: "unknown" }))).toEqual([]);
  });

  it("keeps a finished child while its parent is queued or running (extension: the parent's join may still read it)", () => {
    const parent = (id: string, row: Task) => ({ ...row, id });
    const child = (n: number, parentId: string | null) => at(NOW - 10, { id: idOf(n), parent_id: parentId });
    const rows = [
      parent("pq", queuedRow({ completed_at_ms: null })),
      parent("pr", runningRow({ completed_at_ms: null })),
      parent("pd", at(NOW - 1)),
      child(1, "pq"),
      child(2, "pr"),
      child(3, "pd"),
      child(4, "purged"),
      child(5, null),
    ];
    expect(ids(rows)).toEqual([idOf(3), idOf(4), idOf(5), "pd"]);
    expect(PARENT_WAITING).toEqual(x.parent(x.in(x.col("status"), ["queued", "running"])));
  });

  it("chooses rows in completed_at_ms ASC order, up to limit", () => {
    const rows = [at(NOW - 10, { id: idOf(1) }), at(NOW - 30, { id: idOf(2) }), at(NOW - 20, { id: idOf(3) })];
    expect(ids(rows)).toEqual([idOf(2), idOf(3), idOf(1)]);
    expect(ids(rows, purgeParams({ limit: 2 }))).toEqual([idOf(2), idOf(3)]);
    expect(ids(rows, purgeParams({ limit: 1 }))).toEqual([idOf(2)]);
    expect(PURGE.selection.orderBy).toEqual([{ column: "completed_at_ms", direction: "asc" }]);
    expect(PURGE.selection.limit).toBe(PARAMS.limit);
  });
});

describe("the claim probe (§5.10 step 2)", () => {
  const s = (row: Task, params: Params) => ({ row: row as unknown as Record<string, unknown>, params, nowMs: NOW });
  const probe = (row: Task, params: Params = { queues: ["default"], names: null }) =>
    holds(PROBE.claimable, s(row, params)) || holds(PROBE.expired, s(row, {}));

  it("is true for a due queued row in the queues and names", () => {
    expect(probe(queuedRow({ run_at_ms: NOW }))).toBe(true);
    expect(probe(queuedRow(), { queues: ["default"], names: ["summarize"] })).toBe(true);
  });

  it("is false for a future, filtered-out or non-queued row", () => {
    expect(probe(queuedRow({ run_at_ms: NOW + 1 }))).toBe(false);
    expect(probe(queuedRow(), { queues: ["other"], names: null })).toBe(false);
    expect(probe(queuedRow(), { queues: ["default"], names: ["other"] })).toBe(false);
    expect(probe(queuedRow(), { queues: ["default"], names: [] })).toBe(false);
    expect(probe(runningRow())).toBe(false);
    expect(probe(terminalRow("failed"))).toBe(false);
  });

  it("is true for an expired lease in any queue and under any name", () => {
    const row = runningRow({ lease_until_ms: NOW, queue: "elsewhere", name: "unregistered" });
    expect(probe(row, { queues: ["default"], names: [] })).toBe(true);
  });

  it("is the same predicate the draw and recovery use", () => {
    expect(PROBE.claimable).toBe(CLAIMABLE);
    expect(PROBE.expired).toBe(EXPIRED);
  });
});

describe("flattenAssignments (what a SQL store puts in SET)", () => {
  it("always sets updated_at_ms = now, even when no branch assigns anything", () => {
    const out = flattenAssignments([{ name: "noop", to: "running", when: null, set: {} }]);
    expect([...out.keys()]).toEqual(["updated_at_ms"]);
    expect(out.get("updated_at_ms")).toEqual(x.now);
  });

  it("assignments identical in every branch emit no CASE", () => {
    const out = flattenAssignments(FAIL.branches);
    expect(out.get("lease_until_ms")).toEqual(x.lit(null));
    expect(out.get("error")).toBe(PARAMS.error);
    const complete = flattenAssignments(COMPLETE.branches);
    expect(complete.get("completed_at_ms")).toEqual(x.now);
    expect(complete.get("lease_until_ms")).toEqual(x.lit(null));
  });

  it("a single-branch transition emits its values as they are", () => {
    const out = flattenAssignments(HEARTBEAT.branches);
    expect(out.get("lease_until_ms")).toEqual(x.add(x.now, PARAMS.leaseMs));
    expect([...out.keys()].sort()).toEqual(["lease_until_ms", "updated_at_ms"]);
  });

  it("differing assignments become one CASE in branch order; a branch that does not assign keeps the column", () => {
    const out = flattenAssignments(FAIL.branches);
    const requeue = FAIL.branches[1]!;
    expect(out.get("worker_id")).toEqual(x.case([{ when: FLAG, then: x.col("worker_id") }, { when: requeue.when!, then: x.lit(null) }], x.col("worker_id")));
    expect(out.get("status")).toEqual(
      x.case(
        [
          { when: FLAG, then: x.lit("canceled") },
          { when: requeue.when!, then: x.lit("queued") },
        ],
        x.lit("failed"),
      ),
    );
  });

  it("covers the union of the columns any branch assigns", () => {
    const keys = (b: readonly Branch[]) => [...flattenAssignments(b).keys()].sort();
    expect(keys(FAIL.branches)).toEqual(
      ["completed_at_ms", "error", "lease_until_ms", "message", "progress", "run_at_ms", "status", "updated_at_ms", "worker_id"].sort(),
    );
    expect(keys(COMPLETE.branches)).toEqual(["completed_at_ms", "lease_until_ms", "progress", "result", "status", "updated_at_ms"]);
    expect(keys(CANCEL.branches)).toEqual(["cancel_requested_at_ms", "completed_at_ms", "status", "updated_at_ms"]);
    expect(keys(RECOVER.branches)).toEqual(["completed_at_ms", "error", "lease_until_ms", "message", "progress", "run_at_ms", "status", "updated_at_ms", "worker_id"]);
    expect(keys(DRAW.branches)).toEqual(["attempt", "lease_until_ms", "status", "updated_at_ms", "worker_id"]);
    expect(keys(SUCCEED.branches)).toEqual(["completed_at_ms", "lease_until_ms", "message", "progress", "result", "status", "updated_at_ms"]);
    expect(keys(PROGRESS.branches)).toEqual(["message", "progress", "updated_at_ms"]);
    expect(keys(RETRY.branches)).toEqual(
      ["attempt", "cancel_requested_at_ms", "completed_at_ms", "error", "lease_until_ms", "message", "progress", "run_at_ms", "status", "updated_at_ms", "worker_id"].sort(),
    );
    expect(keys(HEARTBEAT_BATCH.branches)).toEqual(["lease_until_ms", "updated_at_ms"]);
  });

  it("throws when an 'otherwise' branch that is not last would need a CASE", () => {
    const bad: Branch[] = [
      { name: "early", to: "failed", when: null, set: { status: x.lit("failed") } },
      { name: "late", to: "queued", when: null, set: { status: x.lit("queued") } },
    ];
    expect(() => flattenAssignments(bad)).toThrow(/only the last branch may be 'otherwise' \(branch early\)/);
  });

  it("does not throw for a non-final 'otherwise' whose assignments need no CASE", () => {
    const same = x.lit("failed");
    const out = flattenAssignments([
      { name: "a", to: "failed", when: null, set: { status: same } },
      { name: "b", to: "failed", when: null, set: { status: same } },
    ]);
    expect(out.get("status")).toBe(same);
  });

  it("the flattened SET evaluates, per branch, to that branch's own values (compiled form = evaluated form)", () => {
    const rows: [RowTransition, Task, Params][] = [
      [FAIL, runningRow({ cancel_requested_at_ms: 1 }), failParams()],
      [FAIL, runningRow(), failParams({ delayMs: 3 })],
      [FAIL, runningRow(), failParams({ retryable: false })],
      [COMPLETE, runningRow({ cancel_requested_at_ms: 1 }), ownedParams({ result: 1 })],
      [COMPLETE, runningRow(), ownedParams({ result: 1 })],
      [CANCEL, queuedRow(), { taskId: ID }],
      [CANCEL, runningRow(), { taskId: ID }],
    ];
    for (const [t, row, params] of rows) {
      const scope = { row: row as unknown as Record<string, unknown>, params, nowMs: NOW };
      const branch = t.branches.find((b) => b.when === null || holds(b.when, scope))!;
      const flat = flattenAssignments(t.branches);
      for (const [column, expr] of Object.entries(branch.set) as [TaskColumn, Expr][]) {
        expect(evaluate(flat.get(column)!, scope), `${t.op}/${branch.name}/${column}`).toEqual(evaluate(expr, scope));
      }
    }
  });
});

describe("cancel wins (§4)", () => {
  it("a flagged task ends canceled on every exit from running except raw succeed, and is never requeued", () => {
    const flagged = runningRow({ cancel_requested_at_ms: NOW - 1, attempt: 1, max_attempts: 3 });
    expect(applied(decideRow(COMPLETE, flagged, ownedParams({ result: 1 }), NOW)).row.status).toBe("canceled");
    expect(applied(decideRow(FAIL, flagged, failParams(), NOW)).row.status).toBe("canceled");
    expect(runSet(RECOVER, [{ ...flagged, lease_until_ms: NOW }], {})[0]!.row.status).toBe("canceled");
    expect(applied(decideRow(SUCCEED, flagged, ownedParams({ result: 1, message: null }), NOW)).row.status).toBe("succeeded");
  });
});

describe("attempt accounting (§4): with max_attempts = m, at most m runs", () => {
  /** Claims and ends the task until it settles; each round 10 s after the last. */
  function runUntilSettled(m: number, end: (row: Task, nowMs: number) => Task): number {
    let row = queuedRow({ max_attempts: m });
    let runs = 0;
    for (let clock = NOW; runs < 10 && row.status === "queued"; clock += 10_000) {
      const drawn = runSet(DRAW, [row], drawParams({ workerId: W1 }), clock);
      expect(drawn).toHaveLength(1);
      row = drawn[0]!.row;
      runs++;
      row = end(row, clock);
    }
    expect(row.status).toBe("failed");
    return runs;
  }

  it.each([1, 2, 3, 5])("retryable fail, m = %d", (m) => {
    expect(runUntilSettled(m, (row, clock) => applied(decideRow(FAIL, row, failParams(), clock)).row)).toBe(m);
  });

  it.each([1, 2, 3, 5])("lease recovery, m = %d", (m) => {
    const runs = runUntilSettled(m, (row, clock) => {
      // The draw leased for 5 s; recover once it has expired.
      const [out] = runSet(RECOVER, [row], {}, clock + 5_000);
      return out!.row;
    });
    expect(runs).toBe(m);
  });
});

describe("§4 invariants after every transition branch", () => {
  interface Case {
    label: string;
    /** The transition's name and the branch expected to apply. */
    branch: string;
    run: () => { branch: string; row: Task; to: TaskStatus };
  }

  const row = (t: RowTransition, before: Task, params: Params): Case["run"] => () => {
    const out = applied(decideRow(t, before, params, NOW));
    return { ...out, to: t.branches.find((b) => b.name === out.branch)!.to };
  };
  const set = (t: SetTransition, before: Task, params: Params): Case["run"] => () => {
    const outs = runSet(t, [before], params);
    expect(outs).toHaveLength(1);
    const out = outs[0]!;
    return { ...out, to: t.branches.find((b) => b.name === out.branch)!.to };
  };

  const flagged = runningRow({ cancel_requested_at_ms: NOW - 10 });
  const expiredRun = runningRow({ lease_until_ms: NOW - 1 });

  const cases: Case[] = [
    { label: "T1 submit", branch: "insert", run: () => ({ branch: "insert", row: buildInsert(SUBMIT, { taskId: ID, name: "n", queue: "q", payload: {}, metadata: {}, maxAttempts: 3, priority: 0, runAtDelayMs: 0, parentId: null, rootId: null, correlationId: null }, NOW), to: "queued" }) },
    { label: "T2 draw", branch: "lease", run: set(DRAW, queuedRow(), drawParams()) },
    { label: "T3 cancel queued", branch: "cancel-queued", run: row(CANCEL, queuedRow(), { taskId: ID }) },
    { label: "T4 cancel running", branch: "flag-running", run: row(CANCEL, runningRow(), { taskId: ID }) },
    { label: "T5 succeed", branch: "succeed", run: row(SUCCEED, runningRow(), ownedParams({ result: 1, message: null })) },
    { label: "T5 succeed, flagged", branch: "succeed", run: row(SUCCEED, flagged, ownedParams({ result: 1, message: "m" })) },
    { label: "T6 complete", branch: "succeed", run: row(COMPLETE, runningRow(), ownedParams({ result: 1 })) },
    { label: "T7 complete, flagged", branch: "cancel", run: row(COMPLETE, flagged, ownedParams({ result: 1 })) },
    { label: "T8 fail, flagged", branch: "cancel", run: row(FAIL, flagged, failParams()) },
    { label: "T9 fail, requeue", branch: "requeue", run: row(FAIL, runningRow(), failParams({ delayMs: 100 })) },
    { label: "T10 fail, permanent", branch: "fail", run: row(FAIL, runningRow(), failParams({ retryable: false })) },
    { label: "T10 fail, exhausted", branch: "fail", run: row(FAIL, runningRow({ attempt: 3 }), failParams()) },
    { label: "T11 recover, flagged", branch: "cancel", run: set(RECOVER, { ...expiredRun, cancel_requested_at_ms: NOW - 10 }, {}) },
    { label: "T12 recover, requeue", branch: "requeue", run: set(RECOVER, expiredRun, {}) },
    { label: "T13 recover, exhausted", branch: "fail", run: set(RECOVER, { ...expiredRun, attempt: 3 }, {}) },
    { label: "T14 retry failed", branch: "requeue", run: row(RETRY, terminalRow("failed"), { taskId: ID, resetAttempt: false }) },
    { label: "T14 retry canceled, reset", branch: "requeue", run: row(RETRY, terminalRow("canceled", { cancel_requested_at_ms: NOW - 5 }), { taskId: ID, resetAttempt: true }) },
    { label: "heartbeat", branch: "renew", run: row(HEARTBEAT, runningRow(), ownedParams({ leaseMs: 10 })) },
    { label: "heartbeat_batch", branch: "renew", run: set(HEARTBEAT_BATCH, runningRow(), { taskIds: [ID], workerId: W1, leaseMs: 10, attempt: null }) },
    { label: "progress", branch: "report", run: row(PROGRESS, runningRow(), ownedParams({ progress: 0.7, message: "m" })) },
  ];

  it.each(cases)("$label", ({ branch, run }) => {
    const out = run();
    const r = out.row;
    expect(out.branch).toBe(branch);
    // The branch's declared target is the status the row ends in.
    expect(r.status).toBe(out.to);
    // Every column is present.
    expect(Object.keys(r).sort()).toEqual([...TASK_COLUMNS].sort());
    // Every update (and the insert) stamps updated_at_ms = now.
    expect(r.updated_at_ms).toBe(NOW);
    // lease ⇔ running.
    expect(r.lease_until_ms !== null).toBe(r.status === "running");
    // completed ⇔ terminal.
    expect(r.completed_at_ms !== null).toBe(isTerminalStatus(r.status));
    // worker: NULL while queued; set while running.
    if (r.status === "queued") expect(r.worker_id).toBe(null);
    if (r.status === "running") expect(r.worker_id).not.toBe(null);
    // Every path back to queued clears progress and message; the flag is never set on a queued row.
    if (r.status === "queued") {
      expect(r.progress).toBe(null);
      expect(r.message).toBe(null);
      expect(r.cancel_requested_at_ms).toBe(null);
    }
    // Success sets progress = 1.0; result only ever on a succeeded row.
    if (r.status === "succeeded") expect(r.progress).toBe(1);
    if (r.result !== null) expect(r.status).toBe("succeeded");
  });

  it("covers every transition of §4 except purge (a delete, covered above)", () => {
    const labels = cases.map((c) => c.label.split(" ")[0]);
    for (let t = 1; t <= 14; t++) expect(labels).toContain(`T${t}`);
  });
});
