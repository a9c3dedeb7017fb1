/**
 * The state machine of protocol v1 (§4, §5) exercised as pure functions: every
 * transition T1–T15 and every branch, with the full post-state asserted
 * against protocol.md's tables.
 */
import { describe, expect, it } from "vitest";
import { buildInsert, decideRow, selectRows } from "../src/decide.js";
import { paramsOf } from "../src/expr.js";
import type { Expr } from "../src/expr.js";
import {
  CANCEL,
  CLAIMABLE,
  COMPLETE,
  DRAW,
  FAIL,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  PARAMS,
  PROBE,
  PROGRESS,
  PURGE,
  RECOVER,
  RETRY,
  ROW_TRANSITIONS,
  SUBMIT,
  SUCCEED,
  compareClaimOrder,
} from "../src/rules.js";
import type { Branch, RowTransition } from "../src/rules.js";
import { TERMINAL_STATUSES } from "../src/statuses.js";
import { PROTOCOL_VERSION, SCHEMA_VERSION } from "../src/version.js";
import { ID, NOW, W1, W2, expectPostState, idOf, ownedParams, queuedRow, runningRow, terminalRow } from "./fixtures.js";
import { ERROR, applied, drawParams, failParams, runSet } from "./rule-runs.js";

describe("versions (§11)", () => {
  it("implements protocol_version 1; schema_version 10 after every migration of §3.6", () => {
    expect(PROTOCOL_VERSION).toBe(1);
    expect(SCHEMA_VERSION).toBe(10);
  });
});

describe("compareClaimOrder (§5.10 step 5, DRAW's order)", () => {
  it("sorts higher priority first, then the earlier run time, then the smaller id", () => {
    const row = (id: string, priority: number, run_at_ms: number) => ({ id, priority, run_at_ms });
    const rows = [row("b", 0, 5), row("c", 0, 5), row("a", 0, 5), row("d", 0, 3), row("e", 9, 10), row("f", -1, 0)];
    expect([...rows].sort(compareClaimOrder).map((r) => r.id)).toEqual(["e", "d", "a", "b", "c", "f"]);
    expect(compareClaimOrder(row("x", 1, 1), row("x", 1, 1))).toBe(0);
  });
});

describe("clocks (§2.1) and locking (§13)", () => {
  it("insert, lease recovery and claim draws read real time (clock_timestamp)", () => {
    expect(SUBMIT.clock).toBe("statement");
    expect(RECOVER.clock).toBe("statement");
    expect(DRAW.clock).toBe("statement");
  });

  it("cancel, retry, purge, heartbeat(_batch), progress, succeed, complete, fail read the transaction clock (now())", () => {
    for (const t of [CANCEL, RETRY, HEARTBEAT, PROGRESS, SUCCEED, COMPLETE, FAIL, HEARTBEAT_BATCH, PURGE]) {
      expect(t.clock, t.op).toBe("transaction");
    }
  });

  it("draws, recovery and purge select FOR UPDATE SKIP LOCKED; heartbeat_batch does not", () => {
    expect(DRAW.selection.skipLocked).toBe(true);
    expect(RECOVER.selection.skipLocked).toBe(true);
    expect(PURGE.selection.skipLocked).toBe(true);
    expect(HEARTBEAT_BATCH.selection.skipLocked).toBe(false);
  });

  it("client operations report null on a miss; owned writes report lost-lease (§5.0)", () => {
    expect(CANCEL.onMiss).toBe("null");
    expect(RETRY.onMiss).toBe("null");
    for (const t of [HEARTBEAT, PROGRESS, SUCCEED, COMPLETE, FAIL]) expect(t.onMiss, t.op).toBe("lost-lease");
  });

  it("ROW_TRANSITIONS indexes every single-row transition by its op", () => {
    expect(ROW_TRANSITIONS).toEqual({ cancel: CANCEL, retry: RETRY, heartbeat: HEARTBEAT, progress: PROGRESS, succeed: SUCCEED, complete: COMPLETE, fail: FAIL });
    for (const [op, t] of Object.entries(ROW_TRANSITIONS)) expect(t.op).toBe(op);
  });

  it("every transition ends with exactly one 'otherwise' branch, last", () => {
    for (const t of [...Object.values(ROW_TRANSITIONS), RECOVER, DRAW, HEARTBEAT_BATCH]) {
      const branches: readonly Branch[] = t.branches;
      expect(branches.at(-1)?.when, t.op).toBe(null);
      expect(branches.slice(0, -1).every((b) => b.when !== null), t.op).toBe(true);
    }
  });
});

describe("parameters each rule reads (what a store binds)", () => {
  const names = (...exprs: (Expr | null | undefined)[]): string[] => {
    const into = new Map();
    for (const e of exprs) if (e) paramsOf(e, into);
    return [...into.keys()].sort();
  };
  const ofBranches = (branches: readonly Branch[]) => branches.flatMap((b) => [b.when, ...Object.values(b.set)]);
  const ofRow = (t: RowTransition) => names(t.guard, ...ofBranches(t.branches));

  it("single-row transitions", () => {
    expect(ofRow(CANCEL)).toEqual(["taskId"]);
    expect(ofRow(RETRY)).toEqual(["resetAttempt", "taskId"]);
    expect(ofRow(HEARTBEAT)).toEqual(["attempt", "leaseMs", "taskId", "workerId"]);
    expect(ofRow(PROGRESS)).toEqual(["attempt", "message", "progress", "taskId", "workerId"]);
    expect(ofRow(SUCCEED)).toEqual(["attempt", "message", "result", "taskId", "workerId"]);
    expect(ofRow(COMPLETE)).toEqual(["attempt", "result", "taskId", "workerId"]);
    expect(ofRow(FAIL)).toEqual(["attempt", "delayMs", "error", "retryable", "taskId", "workerId"]);
  });

  it("set transitions, purge, probe and submit", () => {
    expect(names(RECOVER.selection.where, ...ofBranches(RECOVER.branches))).toEqual([]);
    expect(names(DRAW.selection.where, DRAW.selection.limit, ...ofBranches(DRAW.branches))).toEqual(["leaseMs", "limit", "names", "queues", "workerId"]);
    expect(names(HEARTBEAT_BATCH.selection.where, ...ofBranches(HEARTBEAT_BATCH.branches))).toEqual(["attempt", "leaseMs", "taskIds", "workerId"]);
    expect(names(PURGE.selection.where, PURGE.selection.limit)).toEqual(["limit", "name", "olderThanMs", "queue", "status"]);
    expect(names(PROBE.claimable)).toEqual(["names", "queues"]);
    expect(names(PROBE.expired)).toEqual([]);
    expect(names(...Object.values(SUBMIT.values))).toEqual(
      ["correlationId", "maxAttempts", "metadata", "name", "parentId", "payload", "priority", "queue", "rootId", "runAtDelayMs", "taskId"].sort(),
    );
  });

  it("PARAMS declares each parameter once, with its binding type (§2.3)", () => {
    for (const [key, param] of Object.entries(PARAMS)) expect(param.name).toBe(key);
    expect(PARAMS.retryable.type).toBe("bool");
    expect(PARAMS.resetAttempt.type).toBe("bool");
    expect(PARAMS.queues.type).toBe("textList");
    expect(PARAMS.names.type).toBe("textList");
    expect(PARAMS.taskIds.type).toBe("textList");
    expect(PARAMS.error.type).toBe("json");
    expect(PARAMS.result.type).toBe("json");
    expect(PARAMS.payload.type).toBe("json");
    expect(PARAMS.metadata.type).toBe("json");
    expect(PARAMS.progress.type).toBe("float");
  });
});

describe("T1 submit (§5.1)", () => {
  const base = {
    taskId: ID,
    name: "summarize",
    queue: "rpc",
    payload: { url: "u" },
    metadata: { m: 1 },
    maxAttempts: 5,
    priority: -2,
    runAtDelayMs: 1_500,
    parentId: "task_parent",
    rootId: "task_root",
    correlationId: "corr",
  };

  it("inserts a queued row: given values, run_at = now + delay, created = updated = now, all else default/NULL", () => {
    expect(buildInsert(SUBMIT, base, NOW)).toEqual({
      id: ID,
      name: "summarize",
      queue: "rpc",
      status: "queued",
      payload: { url: "u" },
      result: null,
      error: null,
      metadata: { m: 1 },
      progress: null,
      message: null,
      attempt: 0,
      max_attempts: 5,
      priority: -2,
      worker_id: null,
      lease_until_ms: null,
      run_at_ms: NOW + 1_500,
      cancel_requested_at_ms: null,
      parent_id: "task_parent",
      root_id: "task_root",
      correlation_id: "corr",
      created_at_ms: NOW,
      updated_at_ms: NOW,
      completed_at_ms: null,
    });
  });

  it("root_id defaults to the new id; attempt takes its column default", () => {
    const row = buildInsert(SUBMIT, { ...base, rootId: null, parentId: null, correlationId: null, runAtDelayMs: 0 }, NOW);
    expect(row.root_id).toBe(ID);
    expect(row.attempt).toBe(0);
    expect(row.parent_id).toBe(null);
    expect(row.correlation_id).toBe(null);
    expect(row.run_at_ms).toBe(NOW);
  });
});

describe("T2 claim draw (§5.10 step 5)", () => {
  it("leases a due queued row: running, worker, lease = now + lease_ms, attempt + 1, nothing else", () => {
    // A requeued row still shows its last error and an old result field; a draw leaves them.
    const before = queuedRow({ attempt: 1, error: ERROR, run_at_ms: NOW });
    const [out, ...rest] = runSet(DRAW, [before], drawParams());
    expect(rest).toEqual([]);
    expect(out?.branch).toBe("lease");
    expectPostState(out!.row, before, { status: "running", worker_id: W2, lease_until_ms: NOW + 5_000, attempt: 2 });
  });

  it("takes only due rows (run_at_ms ≤ now)", () => {
    const rows = [queuedRow({ id: idOf(1), run_at_ms: NOW }), queuedRow({ id: idOf(2), run_at_ms: NOW + 1 }), queuedRow({ id: idOf(3), run_at_ms: NOW - 1 })];
    expect(selectRows(DRAW.selection, rows, drawParams(), NOW).map((r) => r.id)).toEqual([idOf(3), idOf(1)]);
  });

  it("takes only queued rows", () => {
    const rows = [runningRow({ id: idOf(1), lease_until_ms: NOW - 1 }), terminalRow("failed", { id: idOf(2) }), terminalRow("canceled", { id: idOf(3) }), queuedRow({ id: idOf(4) })];
    expect(selectRows(DRAW.selection, rows, drawParams(), NOW).map((r) => r.id)).toEqual([idOf(4)]);
  });

  it("orders by priority DESC, run_at_ms ASC, id ASC — FIFO by due time, not creation", () => {
    const rows = [
      queuedRow({ id: idOf(1), priority: 0, run_at_ms: NOW - 10, created_at_ms: NOW - 100 }),
      queuedRow({ id: idOf(2), priority: 0, run_at_ms: NOW - 20, created_at_ms: NOW - 10 }),
      queuedRow({ id: idOf(3), priority: 1, run_at_ms: NOW - 1 }),
      queuedRow({ id: idOf(5), priority: 0, run_at_ms: NOW - 20 }),
      queuedRow({ id: idOf(4), priority: 0, run_at_ms: NOW - 20 }),
      queuedRow({ id: idOf(6), priority: -1, run_at_ms: NOW - 1000 }),
    ];
    expect(selectRows(DRAW.selection, rows, drawParams(), NOW).map((r) => r.id)).toEqual([idOf(3), idOf(2), idOf(4), idOf(5), idOf(1), idOf(6)]);
    expect(DRAW.selection.orderBy).toEqual([
      { column: "priority", direction: "desc" },
      { column: "run_at_ms", direction: "asc" },
      { column: "id", direction: "asc" },
    ]);
  });

  it("takes at most `limit` rows, the first in claim order", () => {
    const rows = [1, 2, 3, 4].map((n) => queuedRow({ id: idOf(n), priority: n }));
    expect(runSet(DRAW, rows, drawParams({ limit: 2 })).map((o) => o.row.id)).toEqual([idOf(4), idOf(3)]);
    expect(runSet(DRAW, rows, drawParams({ limit: 0 }))).toEqual([]);
  });

  it("queues filter: only listed queues; an empty list takes nothing", () => {
    const rows = [queuedRow({ id: idOf(1), queue: "a" }), queuedRow({ id: idOf(2), queue: "b" }), queuedRow({ id: idOf(3), queue: "c" })];
    const ids = (queues: string[]) => selectRows(DRAW.selection, rows, drawParams({ queues }), NOW).map((r) => r.id);
    expect(ids(["a", "c"])).toEqual([idOf(1), idOf(3)]);
    expect(ids(["b"])).toEqual([idOf(2)]);
    expect(ids([])).toEqual([]);
    expect(ids(["zzz"])).toEqual([]);
  });

  it("names filter: null = every name, [] = none, a list = only those names", () => {
    const rows = [queuedRow({ id: idOf(1), name: "alpha" }), queuedRow({ id: idOf(2), name: "beta" }), queuedRow({ id: idOf(3), name: "gamma" })];
    const ids = (names: string[] | null) => selectRows(DRAW.selection, rows, drawParams({ names }), NOW).map((r) => r.id);
    expect(ids(null)).toEqual([idOf(1), idOf(2), idOf(3)]);
    expect(ids([])).toEqual([]);
    expect(ids(["alpha"])).toEqual([idOf(1)]);
    expect(ids(["beta", "gamma"])).toEqual([idOf(2), idOf(3)]);
    expect(ids(["delta"])).toEqual([]);
  });

  it("CLAIMABLE is the draw's where clause", () => {
    expect(DRAW.selection.where).toBe(CLAIMABLE);
    expect(DRAW.selection.limit).toBe(PARAMS.limit);
  });
});

describe("T3/T4 cancel (§5.7)", () => {
  it("T3 queued → canceled, completed_at = now, flag stays NULL", () => {
    const before = queuedRow();
    const out = applied(decideRow(CANCEL, before, { taskId: ID }, NOW));
    expect(out.branch).toBe("cancel-queued");
    expectPostState(out.row, before, { status: "canceled", completed_at_ms: NOW });
    expect(out.row.cancel_requested_at_ms).toBe(null);
    expect(out.row.worker_id).toBe(null);
  });

  it("T3 also cancels a delayed (not yet due) queued task", () => {
    const before = queuedRow({ run_at_ms: NOW + 60_000 });
    expectPostState(applied(decideRow(CANCEL, before, { taskId: ID }, NOW)).row, before, { status: "canceled", completed_at_ms: NOW });
  });

  it("T4 running → running with the flag set to now; nothing else changes", () => {
    const before = runningRow();
    const out = applied(decideRow(CANCEL, before, { taskId: ID }, NOW));
    expect(out.branch).toBe("flag-running");
    expectPostState(out.row, before, { cancel_requested_at_ms: NOW });
  });

  it("a repeat cancel of a running task refreshes the flag", () => {
    const before = runningRow({ cancel_requested_at_ms: NOW - 500 });
    expectPostState(applied(decideRow(CANCEL, before, { taskId: ID }, NOW)).row, before, { cancel_requested_at_ms: NOW });
  });

  it("a running task whose lease already expired is still flagged (recovery then ends it canceled)", () => {
    const before = runningRow({ lease_until_ms: NOW - 1 });
    expectPostState(applied(decideRow(CANCEL, before, { taskId: ID }, NOW)).row, before, { cancel_requested_at_ms: NOW });
  });

  it.each(TERMINAL_STATUSES)("a %s task is not matched (→ null)", (status) => {
    expect(decideRow(CANCEL, terminalRow(status), { taskId: ID }, NOW)).toEqual({ kind: "not-matched" });
  });

  it("a missing task or another id is not matched", () => {
    expect(decideRow(CANCEL, null, { taskId: ID }, NOW)).toEqual({ kind: "not-matched" });
    expect(decideRow(CANCEL, queuedRow(), { taskId: "task_other" }, NOW)).toEqual({ kind: "not-matched" });
  });
});

describe("T5 succeed, the raw primitive (§5.14)", () => {
  it("succeeded, result, progress 1.0, message kept when null, lease NULL, completed now; keeps worker and error", () => {
    const before = runningRow({ error: ERROR });
    const out = applied(decideRow(SUCCEED, before, ownedParams({ result: { ok: true }, message: null }), NOW));
    expect(out.branch).toBe("succeed");
    expectPostState(out.row, before, { status: "succeeded", result: { ok: true }, progress: 1, lease_until_ms: null, completed_at_ms: NOW });
    expect(out.row.worker_id).toBe(W1);
    expect(out.row.message).toBe("half");
    expect(out.row.error).toEqual(ERROR);
  });

  it("a given message replaces the old one", () => {
    const before = runningRow();
    const out = applied(decideRow(SUCCEED, before, ownedParams({ result: null, message: "done" }), NOW));
    expectPostState(out.row, before, { status: "succeeded", result: null, progress: 1, message: "done", lease_until_ms: null, completed_at_ms: NOW });
  });

  it("ignores the cancel flag: a flagged task still ends succeeded, and the flag stays", () => {
    const before = runningRow({ cancel_requested_at_ms: NOW - 5 });
    const out = applied(decideRow(SUCCEED, before, ownedParams({ result: 7, message: null }), NOW));
    expectPostState(out.row, before, { status: "succeeded", result: 7, progress: 1, lease_until_ms: null, completed_at_ms: NOW });
    expect(out.row.cancel_requested_at_ms).toBe(NOW - 5);
  });
});

describe("T6/T7 complete (§5.15)", () => {
  it("T6 no flag → succeeded, result, progress 1.0, lease NULL, completed now; message, error, worker kept", () => {
    const before = runningRow({ error: ERROR });
    const out = applied(decideRow(COMPLETE, before, ownedParams({ result: { n: 1 } }), NOW));
    expect(out.branch).toBe("succeed");
    expectPostState(out.row, before, { status: "succeeded", result: { n: 1 }, progress: 1, lease_until_ms: null, completed_at_ms: NOW });
  });

  it("T6 with a null result stores NULL", () => {
    const before = runningRow();
    const out = applied(decideRow(COMPLETE, before, ownedParams({ result: null }), NOW));
    expectPostState(out.row, before, { status: "succeeded", result: null, progress: 1, lease_until_ms: null, completed_at_ms: NOW });
  });

  it("T7 flag → canceled; the supplied result is discarded, progress and message unchanged", () => {
    const before = runningRow({ cancel_requested_at_ms: NOW - 5 });
    const out = applied(decideRow(COMPLETE, before, ownedParams({ result: { ok: true } }), NOW));
    expect(out.branch).toBe("cancel");
    expectPostState(out.row, before, { status: "canceled", lease_until_ms: null, completed_at_ms: NOW });
    expect(out.row.result).toBe(null);
    expect(out.row.progress).toBe(0.5);
    expect(out.row.message).toBe("half");
    expect(out.row.worker_id).toBe(W1);
  });
});

describe("T8/T9/T10 fail (§5.16)", () => {
  it("T8 flag → canceled: worker kept, run_at kept, completed now, progress/message kept, error set, lease NULL, attempt unchanged", () => {
    const before = runningRow({ cancel_requested_at_ms: NOW - 5 });
    const out = applied(decideRow(FAIL, before, failParams({ delayMs: 9_000 }), NOW));
    expect(out.branch).toBe("cancel");
    expectPostState(out.row, before, { status: "canceled", error: ERROR, lease_until_ms: null, completed_at_ms: NOW });
  });

  it("T8 applies even when not retryable or out of attempts (cancel wins)", () => {
    for (const extra of [{ retryable: false }, {}]) {
      const before = runningRow({ cancel_requested_at_ms: NOW - 5, attempt: 3, max_attempts: 3 });
      const out = applied(decideRow(FAIL, before, failParams(extra), NOW));
      expect(out.branch).toBe("cancel");
      expectPostState(out.row, before, { status: "canceled", error: ERROR, lease_until_ms: null, completed_at_ms: NOW });
    }
  });

  it("T9 requeue → queued: worker NULL, run_at now + delay, completed NULL, progress/message NULL, error set, lease NULL, attempt unchanged", () => {
    const before = runningRow({ attempt: 2, max_attempts: 3 });
    const out = applied(decideRow(FAIL, before, failParams({ delayMs: 1_234 }), NOW));
    expect(out.branch).toBe("requeue");
    expectPostState(out.row, before, {
      status: "queued",
      error: ERROR,
      worker_id: null,
      run_at_ms: NOW + 1_234,
      completed_at_ms: null,
      progress: null,
      message: null,
      lease_until_ms: null,
    });
    expect(out.row.attempt).toBe(2);
  });

  it("T9 with delay 0 is due immediately", () => {
    const out = applied(decideRow(FAIL, runningRow(), failParams({ delayMs: 0 }), NOW));
    expect(out.row.run_at_ms).toBe(NOW);
  });

  it("T10 not retryable → failed: worker kept, run_at kept, completed now, progress/message kept, error set, lease NULL", () => {
    const before = runningRow();
    const out = applied(decideRow(FAIL, before, failParams({ retryable: false, delayMs: 5_000 }), NOW));
    expect(out.branch).toBe("fail");
    expectPostState(out.row, before, { status: "failed", error: ERROR, lease_until_ms: null, completed_at_ms: NOW });
  });

  it("T10 attempts exhausted (attempt = max_attempts) → failed even when retryable", () => {
    const before = runningRow({ attempt: 3, max_attempts: 3 });
    const out = applied(decideRow(FAIL, before, failParams(), NOW));
    expect(out.branch).toBe("fail");
    expectPostState(out.row, before, { status: "failed", error: ERROR, lease_until_ms: null, completed_at_ms: NOW });
  });

  it("T10 after a retry without reset (attempt > max_attempts) any failure is final", () => {
    const before = runningRow({ attempt: 4, max_attempts: 3 });
    expect(applied(decideRow(FAIL, before, failParams(), NOW)).branch).toBe("fail");
  });

  it("an unknown retryable (null) does not requeue", () => {
    expect(applied(decideRow(FAIL, runningRow(), failParams({ retryable: null }), NOW)).branch).toBe("fail");
  });

  it("stores exactly the given error, whatever its shape (the store does not validate envelopes, §12)", () => {
    for (const error of [{}, { code: "boom" }, "text", [1, 2]]) {
      expect(applied(decideRow(FAIL, runningRow(), failParams({ error, retryable: false }), NOW)).row.error).toEqual(error);
    }
  });
});

describe("heartbeat (§5.11) and progress (§5.13)", () => {
  it("heartbeat renews the lease to now + lease_ms and changes nothing else", () => {
    const before = runningRow({ lease_until_ms: NOW + 1 });
    const out = applied(decideRow(HEARTBEAT, before, ownedParams({ leaseMs: 30_000 }), NOW));
    expect(out.branch).toBe("renew");
    expectPostState(out.row, before, { lease_until_ms: NOW + 30_000 });
  });

  it("heartbeat returns the flag to the caller in the row (status stays running)", () => {
    const before = runningRow({ cancel_requested_at_ms: NOW - 1 });
    const out = applied(decideRow(HEARTBEAT, before, ownedParams({ leaseMs: 100 }), NOW));
    expectPostState(out.row, before, { lease_until_ms: NOW + 100 });
  });

  it("progress: (0.5,'reading') → (null,'writing') keeps 0.5 → (0.9,null) keeps 'writing' (conformance 23)", () => {
    let row = runningRow({ progress: null, message: null });
    const step = (progress: number | null, message: string | null) => {
      const before = row;
      row = applied(decideRow(PROGRESS, before, ownedParams({ progress, message }), NOW)).row;
      return before;
    };
    let before = step(0.5, "reading");
    expectPostState(row, before, { progress: 0.5, message: "reading" });
    before = step(null, "writing");
    expectPostState(row, before, { progress: 0.5, message: "writing" });
    before = step(0.9, null);
    expectPostState(row, before, { progress: 0.9, message: "writing" });
    before = step(null, null);
    expectPostState(row, before, {});
  });

  it("progress has no range check and leaves status, lease and flag alone", () => {
    const before = runningRow({ cancel_requested_at_ms: NOW - 1 });
    const out = applied(decideRow(PROGRESS, before, ownedParams({ progress: 42, message: "" }), NOW));
    expect(out.branch).toBe("report");
    expectPostState(out.row, before, { progress: 42, message: "" });
  });
});
