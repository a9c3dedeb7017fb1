/**
 * Input checks per operation (§5.4–§5.16), the parameters they hand the rules,
 * and the text limits every backend stores exactly.
 */
import { describe, expect, it } from "vitest";
import type { Params } from "../src/decide.js";
import { MAX_DELAY_MS } from "../src/delay.js";
import { SerializationError } from "../src/errors.js";
import { paramsOf } from "../src/expr.js";
import type { Expr } from "../src/expr.js";
import {
  completeParams,
  drawParams,
  encodeFailError,
  failParams,
  requireRetryable,
  heartbeatBatchParams,
  heartbeatBatchResult,
  heartbeatParams,
  leaseMsOf,
  normalizeClaim,
  normalizeList,
  normalizeSubmit,
  probeParams,
  progressParams,
  purgeParams,
  requireCutoffMs,
  queueDepthArgs,
  requireKey,
  requireLimitedText,
  requireName,
  retryParams,
  TEXT_LIMITS,
  utf8Length,
  succeedParams,
} from "../src/inputs.js";
import {
  CANCEL,
  COMPLETE,
  DRAW,
  FAIL,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  PROBE,
  PROGRESS,
  PURGE,
  RETRY,
  SUBMIT,
  SUCCEED,
} from "../src/rules.js";
import type { Branch, RowTransition } from "../src/rules.js";
import type { ClaimInput, FailInput, ListInput, ProgressInput, PurgeInput, SubmitInput, SucceedInput } from "../src/store.js";
import { ID, W1 } from "./fixtures.js";
import { expectInvalid, loose, owned } from "./input-checks.js";

describe("heartbeat / heartbeat_batch (§5.11, §5.12)", () => {
  it("heartbeatBatchResult maps renewed ids to their flag, in requested order, leaving out ids not renewed", () => {
    const result = heartbeatBatchResult(
      ["task_c", "task_a", "task_lost", "task_b"],
      [
        { id: "task_a", cancel_requested_at_ms: null },
        { id: "task_b", cancel_requested_at_ms: 1_700_000_000_000 },
        { id: "task_c" },
      ],
    );
    expect([...result]).toEqual([
      ["task_c", false],
      ["task_a", false],
      ["task_b", true],
    ]);
    expect(heartbeatBatchResult([], [{ id: "task_a", cancel_requested_at_ms: 1 }]).size).toBe(0);
  });

  it("lease_ms defaults to 30000 and must be an integer ≥ 1", () => {
    expect(heartbeatParams(owned)).toEqual({ ...owned, attempt: null, leaseMs: 30_000 });
    expect(heartbeatParams({ ...owned, leaseMs: 1 }).leaseMs).toBe(1);
    expect(leaseMsOf(undefined)).toBe(30_000);
    expect(leaseMsOf(null)).toBe(30_000);
    expect(leaseMsOf(5)).toBe(5);
    expectInvalid(() => heartbeatParams({ ...owned, leaseMs: 0 }), "leaseMs");
    expectInvalid(() => leaseMsOf(-5), "leaseMs");
    expectInvalid(() => leaseMsOf(1.5), "leaseMs");
    // The lease ends now + leaseMs: bounded like every delay.
    expect(leaseMsOf(MAX_DELAY_MS)).toBe(MAX_DELAY_MS);
    expectInvalid(() => leaseMsOf(MAX_DELAY_MS + 1), "leaseMs", /over MAX_DELAY_MS/);
    expectInvalid(() => heartbeatBatchParams({ taskIds: [ID], workerId: W1, leaseMs: Number.MAX_SAFE_INTEGER }), "leaseMs", /over MAX_DELAY_MS/);
    expectInvalid(() => normalizeClaim({ queues: ["q"], workerId: W1, leaseMs: Number.MAX_SAFE_INTEGER }), "leaseMs", /over MAX_DELAY_MS/);
  });

  it("batch: ids list (may be empty), worker, lease; never fenced by attempt", () => {
    expect(heartbeatBatchParams({ taskIds: [ID, "task_2"], workerId: W1 })).toEqual({ taskIds: [ID, "task_2"], workerId: W1, leaseMs: 30_000, attempt: null });
    expect(heartbeatBatchParams({ taskIds: [], workerId: W1, leaseMs: 50 })).toEqual({ taskIds: [], workerId: W1, leaseMs: 50, attempt: null });
  });

  it("batch: rejects a non-list, an empty id, a bad worker or lease", () => {
    expectInvalid(() => heartbeatBatchParams(loose({ taskIds: ID, workerId: W1 })), "taskIds", /array of non-empty strings/);
    expectInvalid(() => heartbeatBatchParams(loose({ taskIds: null, workerId: W1 })), "taskIds");
    expectInvalid(() => heartbeatBatchParams(loose({ taskIds: [ID, ""], workerId: W1 })), "taskIds[1]");
    expectInvalid(() => heartbeatBatchParams(loose({ taskIds: [ID, 3], workerId: W1 })), "taskIds[1]");
    expectInvalid(() => heartbeatBatchParams(loose({ taskIds: [], workerId: "" })), "workerId");
    expectInvalid(() => heartbeatBatchParams({ taskIds: [], workerId: W1, leaseMs: 0 }), "leaseMs");
  });

  it("batch: the list is copied, so a later change by the caller does not leak in", () => {
    const ids = [ID];
    const p = heartbeatBatchParams({ taskIds: ids, workerId: W1 });
    ids.push("task_late");
    expect(p.taskIds).toEqual([ID]);
  });
});

describe("progress (§5.13)", () => {
  it("null or absent progress/message mean 'keep'", () => {
    expect(progressParams(owned)).toEqual({ ...owned, attempt: null, progress: null, message: null });
    expect(progressParams({ ...owned, progress: null, message: null })).toMatchObject({ progress: null, message: null });
  });

  it("passes any finite number (no range check) and any string", () => {
    expect(progressParams({ ...owned, progress: 42, message: "" })).toMatchObject({ progress: 42, message: "" });
    expect(progressParams({ ...owned, progress: -0.5 })).toMatchObject({ progress: -0.5 });
  });

  it.each([[NaN], [Infinity], [-Infinity], ["0.5"], [true]])("rejects progress %s", (progress) => {
    expectInvalid(() => progressParams(loose<ProgressInput>({ ...owned, progress })), "progress", /finite number or null/);
  });

  it.each([[1], [{}], [false]])("rejects message %s", (message) => {
    expectInvalid(() => progressParams(loose<ProgressInput>({ ...owned, message })), "message", /string or null/);
  });
});

describe("succeed / complete (§5.14, §5.15)", () => {
  it("result null or absent → SQL NULL; anything else compact JSON", () => {
    expect(succeedParams(owned)).toEqual({ ...owned, attempt: null, result: null, message: null });
    expect(succeedParams({ ...owned, result: null })).toMatchObject({ result: null });
    expect(succeedParams({ ...owned, result: { ok: true }, message: "done" })).toMatchObject({ result: '{"ok":true}', message: "done" });
    expect(completeParams(owned)).toEqual({ ...owned, attempt: null, result: null });
    expect(completeParams({ ...owned, result: 0 })).toMatchObject({ result: "0" });
    expect(completeParams({ ...owned, result: [null] })).toMatchObject({ result: "[null]" });
    expect(completeParams({ ...owned, result: false })).toMatchObject({ result: "false" });
  });

  it("succeed rejects a non-string message", () => {
    expectInvalid(() => succeedParams(loose<SucceedInput>({ ...owned, message: 3 })), "message");
  });

  it("an unencodable result raises SerializationError", () => {
    expect(() => completeParams({ ...owned, result: { n: NaN } })).toThrow(SerializationError);
    expect(() => succeedParams({ ...owned, result: 1n })).toThrow(SerializationError);
  });
});

describe("fail (§5.16)", () => {
  it("retryable defaults to true, delay to 0, error to {}", () => {
    expect(failParams(owned)).toEqual({ ...owned, attempt: null, error: "{}", retryable: true, delayMs: 0 });
    expect(failParams(loose<FailInput>({ ...owned, error: null, retryable: null, delayMs: null }))).toMatchObject({ error: "{}", retryable: true, delayMs: 0 });
  });

  it("stores any given error JSON as is", () => {
    const error = { type: "TaskError", code: "boom", message: "m", retryable: false, details: {} };
    expect(failParams({ ...owned, error, retryable: false, delayMs: 250 })).toMatchObject({ error: JSON.stringify(error), retryable: false, delayMs: 250 });
    expect(failParams({ ...owned, error: { code: "boom" } }).error).toBe('{"code":"boom"}');
    expect(failParams({ ...owned, error: "text" }).error).toBe('"text"');
  });

  it("an unencodable error is replaced by the §5.16 fallback envelope carrying the retryable flag", () => {
    const error = { type: "Boom", code: "bad_thing", message: "oops", details: { n: NaN } };
    expect(JSON.parse(failParams({ ...owned, error, retryable: true }).error as string)).toEqual({
      type: "Boom",
      code: "bad_thing",
      message: "oops",
      retryable: true,
      details: {},
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(encodeFailError(cyclic, false)).toBe('{"type":"TaskError","code":"task_error","message":"","retryable":false,"details":{}}');
  });

  it("encodeFailError encodes null/undefined as {}", () => {
    expect(encodeFailError(null, true)).toBe("{}");
    expect(encodeFailError(undefined, true)).toBe("{}");
    expect(encodeFailError({ a: [1] }, true)).toBe('{"a":[1]}');
  });

  it("rejects a non-boolean retryable and a bad delay", () => {
    expectInvalid(() => failParams(loose<FailInput>({ ...owned, retryable: "yes" })), "retryable", /must be a boolean, got "yes"/);
    // ctx.fail's FailOptions.retryable is a boolean: there null is refused too, and the message names the call.
    expect(requireRetryable(undefined, "ctx.fail(reason, { retryable })")).toBe(true);
    expect(requireRetryable(false, "ctx.fail(reason, { retryable })")).toBe(false);
    expectInvalid(() => requireRetryable(null, "ctx.fail(reason, { retryable })"), "retryable", /^ctx\.fail\(reason, \{ retryable \}\): retryable must be a boolean, got null$/);
    expectInvalid(() => requireRetryable("yes", "ctx.fail(reason, { retryable })"), "retryable", /^ctx\.fail\(reason, \{ retryable \}\): retryable must be a boolean, got "yes"$/);
    expect(requireRetryable(null)).toBe(true);
    expectInvalid(() => failParams(loose<FailInput>({ ...owned, retryable: 1 })), "retryable");
    expectInvalid(() => failParams({ ...owned, delayMs: -1 }), "delayMs");
    expectInvalid(() => failParams({ ...owned, delayMs: 0.5 }), "delayMs");
    expectInvalid(() => failParams({ ...owned, delayMs: MAX_DELAY_MS + 1 }), "delayMs", /over MAX_DELAY_MS/);
    expect(failParams({ ...owned, delayMs: MAX_DELAY_MS }).delayMs).toBe(MAX_DELAY_MS);
    expect(failParams({ ...owned, delayMs: null as never }).delayMs).toBe(0);
  });
});

describe("cancel / retry (§5.7, §5.8)", () => {
  it("reset_attempt defaults to false", () => {
    expect(retryParams(ID)).toEqual({ taskId: ID, resetAttempt: false });
    expect(retryParams(ID, {})).toEqual({ taskId: ID, resetAttempt: false });
    expect(retryParams(ID, { resetAttempt: true })).toEqual({ taskId: ID, resetAttempt: true });
  });

  it("rejects an empty id (named 'id') and a non-boolean reset", () => {
    expectInvalid(() => retryParams(""), "id");
    expectInvalid(() => retryParams(loose(null)), "id");
    expectInvalid(() => retryParams(ID, loose({ resetAttempt: "true" })), "resetAttempt");
  });

  it("refuses an unknown key ({ reset: true } would requeue without resetting the attempts)", () => {
    expectInvalid(() => retryParams(ID, loose({ reset: true })), "reset", /'reset' is not an option of retry; the options are resetAttempt/);
  });
});

describe("claim (§5.10)", () => {
  it("defaults: lease 30000, names null (no filter), one draw (names, limit 1)", () => {
    const c = normalizeClaim({ queues: ["default"], workerId: W1 });
    expect(c).toMatchObject({ queues: ["default"], workerId: W1, leaseMs: 30_000, names: null });
    expect(c.draws([], 0)).toEqual({ names: null, limit: 1, last: true });
    expect(c.draws([], 1)).toBe(null);
  });

  it("a queue named twice is one queue, in the order first named", () => {
    expect(normalizeClaim({ queues: ["b", "a", "b", "a"], workerId: W1 }).queues).toEqual(["b", "a"]);
  });

  it("the default draw carries the names and limit given", () => {
    const c = normalizeClaim({ queues: ["a", "b"], workerId: W1, names: ["alpha"], limit: 4, leaseMs: 100 });
    expect(c).toMatchObject({ queues: ["a", "b"], names: ["alpha"], leaseMs: 100 });
    expect(c.draws([], 0)).toEqual({ names: ["alpha"], limit: 4, last: true });
    expect(normalizeClaim(loose<ClaimInput>({ queues: ["a"], workerId: W1, names: null, limit: null })).draws([], 0)).toEqual({ names: null, limit: 1, last: true });
  });

  it("names [] is kept (claim nothing), not turned into null", () => {
    expect(normalizeClaim({ queues: ["a"], workerId: W1, names: [] }).names).toEqual([]);
  });

  it("a caller's draw planner is used as is", () => {
    const draws: ClaimInput["draws"] = () => null;
    expect(normalizeClaim({ queues: ["a"], workerId: W1, draws }).draws).toBe(draws);
  });

  it("rejects bad queues, names, worker, limit and lease", () => {
    expectInvalid(() => normalizeClaim(loose({ queues: "default", workerId: W1 })), "queues");
    expectInvalid(() => normalizeClaim(loose({ queues: ["a", ""], workerId: W1 })), "queues[1]");
    expectInvalid(() => normalizeClaim(loose({ queues: ["a"], workerId: W1, names: "alpha" })), "names");
    expectInvalid(() => normalizeClaim(loose({ queues: ["a"], workerId: W1, names: [null] })), "names[0]");
    expectInvalid(() => normalizeClaim(loose({ queues: ["a"] })), "workerId");
    expectInvalid(() => normalizeClaim({ queues: ["a"], workerId: W1, limit: -1 }), "limit");
    expectInvalid(() => normalizeClaim({ queues: ["a"], workerId: W1, limit: 1.5 }), "limit");
    expectInvalid(() => normalizeClaim({ queues: ["a"], workerId: W1, leaseMs: 0 }), "leaseMs");
  });

  it("drawParams: a draw with limit ≤ 0, names [] or no queues runs no statement", () => {
    const c = normalizeClaim({ queues: ["a"], workerId: W1, leaseMs: 500 });
    expect(drawParams(c, null, 0)).toBe(null);
    expect(drawParams(c, null, -1)).toBe(null);
    expect(drawParams(c, [], 5)).toBe(null);
    expect(drawParams(normalizeClaim({ queues: [], workerId: W1 }), null, 5)).toBe(null);
  });

  it("drawParams: otherwise the DRAW parameters, names copied", () => {
    const c = normalizeClaim({ queues: ["a"], workerId: W1, leaseMs: 500 });
    expect(drawParams(c, null, 3)).toEqual({ queues: ["a"], names: null, limit: 3, workerId: W1, leaseMs: 500 });
    const names = ["alpha"];
    const p = drawParams(c, names, 1)!;
    expect(p).toEqual({ queues: ["a"], names: ["alpha"], limit: 1, workerId: W1, leaseMs: 500 });
    expect(p.names).not.toBe(names);
  });

  it("probeParams: the cycle's queues and names filter", () => {
    expect(probeParams(normalizeClaim({ queues: ["a"], workerId: W1, names: ["x"] }))).toEqual({ queues: ["a"], names: ["x"] });
    expect(probeParams(normalizeClaim({ queues: ["a"], workerId: W1 }))).toEqual({ queues: ["a"], names: null });
  });
});

describe("list (§5.4)", () => {
  it("defaults: no filters, limit 100, offset 0", () => {
    const none = { status: null, queue: null, name: null, rootId: null, correlationId: null, limit: 100, offset: 0, order: "created", beforeId: null };
    expect(normalizeList()).toEqual(none);
    expect(normalizeList({})).toEqual(none);
    expect(normalizeList(loose<ListInput>({ status: null, limit: null, offset: null }))).toEqual(none);
  });

  it("keeps given filters; limit and offset may be 0", () => {
    expect(normalizeList({ status: "failed", queue: "q", name: "n", rootId: "r", correlationId: "c", limit: 0, offset: 0 })).toEqual({
      status: "failed",
      queue: "q",
      name: "n",
      rootId: "r",
      correlationId: "c",
      limit: 0,
      offset: 0,
      order: "created",
      beforeId: null,
    });
    expect(normalizeList({ order: "id", beforeId: "task_1" })).toMatchObject({ order: "id", beforeId: "task_1" });
  });

  it("order is created or id; beforeId needs order id and is non-empty text", () => {
    expect(expectInvalid(() => normalizeList(loose<ListInput>({ order: "newest" })), "order").message).toContain('"created" or "id"');
    expect(expectInvalid(() => normalizeList({ beforeId: "task_1" }), "beforeId").message).toContain('order: "id"');
    expectInvalid(() => normalizeList({ order: "id", beforeId: "" }), "beforeId");
  });

  it("status must be one of the five", () => {
    const err = expectInvalid(() => normalizeList(loose<ListInput>({ status: "done" })), "status");
    expect(err.message).toContain("queued, running, succeeded, failed, canceled");
    expectInvalid(() => normalizeList(loose<ListInput>({ status: 1 })), "status");
  });

  it("rejects empty text filters and negative or fractional limit/offset", () => {
    expectInvalid(() => normalizeList({ queue: "" }), "queue");
    expectInvalid(() => normalizeList({ name: "" }), "name");
    expectInvalid(() => normalizeList({ rootId: "" }), "rootId");
    expectInvalid(() => normalizeList({ correlationId: "" }), "correlationId");
    expectInvalid(() => normalizeList({ limit: -1 }), "limit");
    expectInvalid(() => normalizeList({ offset: -1 }), "offset");
    expectInvalid(() => normalizeList({ offset: 0.5 }), "offset");
  });

  it("refuses a key list does not take, naming it and the accepted ones, instead of listing every task", () => {
    for (const key of ["parentId", "stauts", "group"]) {
      expectInvalid(() => normalizeList(loose<ListInput>({ [key]: "x" })), key, new RegExp(`^'${key}' is not an option of list; the options are status, queue, name, rootId, correlationId, limit, offset, order, beforeId$`));
    }
    expect(normalizeList(loose<ListInput>({ parentId: undefined })).limit).toBe(100);
  });
});

describe("purge (§5.9)", () => {
  it("defaults: older_than 0, no filters, limit 1000", () => {
    const none = { olderThanMs: 0, queue: null, status: null, name: null, limit: 1000 };
    expect(purgeParams()).toEqual(none);
    expect(purgeParams({})).toEqual(none);
    expect(purgeParams(loose<PurgeInput>({ olderThanMs: null, status: null, limit: null }))).toEqual(none);
  });

  it("refuses an unknown key, which a store would drop and so purge every queue", () => {
    expectInvalid(() => purgeParams(loose<PurgeInput>({ olderThanMs: 0, queues: ["scratch"] })), "queues", /'queues' is not an option of purge; the options are olderThanMs, queue, status, name, limit/);
  });

  it("keeps given filters; any terminal status is accepted", () => {
    for (const status of ["succeeded", "failed", "canceled"] as const) {
      expect(purgeParams({ olderThanMs: 3_600_000, queue: "q", status, name: "n", limit: 1 })).toEqual({ olderThanMs: 3_600_000, queue: "q", status, name: "n", limit: 1 });
    }
  });

  it("a fractional older_than is floored (same cutoff for integer completion times)", () => {
    expect(purgeParams({ olderThanMs: 1.9 }).olderThanMs).toBe(1);
  });

  it.each([[-1], [NaN], [Infinity], ["5"]])("rejects older_than %s", (olderThanMs) => {
    expectInvalid(() => purgeParams(loose<PurgeInput>({ olderThanMs })), "olderThanMs", /finite number of milliseconds from 0 to 3153600000000 \(MAX_DELAY_MS/);
  });

  it("bounds older_than by MAX_DELAY_MS, so now - older_than fits every backend's BIGINT", () => {
    expect(purgeParams({ olderThanMs: MAX_DELAY_MS }).olderThanMs).toBe(MAX_DELAY_MS);
    for (const olderThanMs of [MAX_DELAY_MS + 1, 1e20, Number.MAX_VALUE]) {
      expectInvalid(() => purgeParams({ olderThanMs }), "olderThanMs", new RegExp(`from 0 to ${MAX_DELAY_MS} \\(MAX_DELAY_MS, 100 years.*got ${String(olderThanMs).replace(/[.+]/g, "\\$&")}$`));
    }
    expectInvalid(() => requireCutoffMs(1e20, "olderThanMs.failed"), "olderThanMs.failed", /olderThanMs\.failed must be .*MAX_DELAY_MS/);
  });

  it.each([["queued"], ["running"], ["done"]])("rejects the non-terminal status %s", (status) => {
    const err = expectInvalid(() => purgeParams(loose<PurgeInput>({ status })), "status");
    expect(err.message).toContain("succeeded, failed, canceled");
  });

  it("rejects limit < 1 and empty text filters", () => {
    expectInvalid(() => purgeParams({ limit: 0 }), "limit");
    expectInvalid(() => purgeParams({ limit: 2.5 }), "limit");
    expectInvalid(() => purgeParams({ queue: "" }), "queue");
    expectInvalid(() => purgeParams({ name: "" }), "name");
  });
});

describe("queue_depth (§5.6)", () => {
  it("accepts a queue and an integer max_depth ≥ 0", () => {
    expect(queueDepthArgs("q", 0)).toEqual({ queue: "q", maxDepth: 0 });
    expect(queueDepthArgs("q", 64)).toEqual({ queue: "q", maxDepth: 64 });
  });

  it("rejects a bad queue or max_depth", () => {
    expectInvalid(() => queueDepthArgs("", 1), "queue");
    expectInvalid(() => queueDepthArgs("q", -1), "maxDepth");
    expectInvalid(() => queueDepthArgs("q", 1.5), "maxDepth");
    expectInvalid(() => queueDepthArgs("q", null), "maxDepth");
  });
});

describe("normalized parameters supply every parameter the rules read", () => {
  function read(...exprs: (Expr | null | undefined)[]): string[] {
    const into = new Map();
    for (const e of exprs) if (e) paramsOf(e, into);
    return [...into.keys()];
  }
  const ofBranches = (branches: readonly Branch[]) => branches.flatMap((b) => [b.when, ...Object.values(b.set)]);
  const ofRow = (t: RowTransition) => read(t.guard, ...ofBranches(t.branches));
  const supplies = (params: Params, names: string[]) => {
    for (const name of names) expect(params, name).toHaveProperty(name);
  };

  it("single-row transitions", () => {
    supplies(heartbeatParams(owned), ofRow(HEARTBEAT));
    supplies(progressParams(owned), ofRow(PROGRESS));
    supplies(succeedParams(owned), ofRow(SUCCEED));
    supplies(completeParams(owned), ofRow(COMPLETE));
    supplies(failParams(owned), ofRow(FAIL));
    supplies(retryParams(ID), ofRow(RETRY));
    supplies(retryParams(ID), ofRow(CANCEL));
  });

  it("submit, draws, probe, heartbeat_batch and purge", () => {
    supplies(normalizeSubmit({ name: "n" }, ID).params, read(...Object.values(SUBMIT.values)));
    const claim = normalizeClaim({ queues: ["a"], workerId: W1 });
    supplies(drawParams(claim, null, 1)!, read(DRAW.selection.where, DRAW.selection.limit, ...ofBranches(DRAW.branches)));
    supplies(probeParams(claim), read(PROBE.claimable, PROBE.expired));
    supplies(heartbeatBatchParams({ taskIds: [ID], workerId: W1 }), read(HEARTBEAT_BATCH.selection.where, ...ofBranches(HEARTBEAT_BATCH.branches)));
    supplies(purgeParams(), read(PURGE.selection.where, PURGE.selection.limit));
  });
});

describe("text that every backend stores exactly (one input, one meaning)", () => {
  const bad: [string, string, RegExp][] = [
    ["U+0000", "a\u0000b", /U\+0000/],
    ["a lone high surrogate", "a\ud800", /lone UTF-16 surrogate/],
    ["a lone low surrogate", "\udc00a", /lone UTF-16 surrogate/],
  ];

  it.each(bad)("rejects %s in every name, queue, key, id and filter with InvalidArgument naming the input", (_label, text, message) => {
    expectInvalid(() => requireName(text, "workerId"), "workerId", message);
    for (const field of ["name", "queue", "key", "correlationId", "parentId", "rootId"] as const) {
      expectInvalid(() => normalizeSubmit(loose<SubmitInput>({ name: "job", [field]: text }), ID), field, message);
    }
    expectInvalid(() => normalizeClaim({ queues: ["default", text], workerId: W1 }), "queues[1]", message);
    expectInvalid(() => normalizeClaim({ queues: ["default"], names: [text], workerId: W1 }), "names[0]", message);
    expectInvalid(() => normalizeClaim({ queues: ["default"], workerId: text }), "workerId", message);
    expectInvalid(() => normalizeList({ correlationId: text }), "correlationId", message);
    expectInvalid(() => purgeParams({ name: text }), "name", message);
    expectInvalid(() => queueDepthArgs(text, 1), "queue", message);
    expectInvalid(() => requireKey(text), "key", message);
    expectInvalid(() => heartbeatParams({ taskId: text, workerId: W1 }), "taskId", message);
    expectInvalid(() => progressParams({ ...owned, progress: null, message: text }), "message", message);
    expectInvalid(() => succeedParams({ ...owned, result: null, message: text }), "message", message);
  });

  it("accepts proper surrogate pairs and other control characters", () => {
    const text = "🙂 tab\t \u0001";
    expect(normalizeSubmit({ name: text, queue: text, key: text, correlationId: text }, ID)).toMatchObject({ key: text, queue: text });
    expect(progressParams({ ...owned, progress: null, message: text }).message).toBe(text);
  });
});

describe("TEXT_LIMITS (UTF-8 bytes, sized for Postgres index rows and NOTIFY)", () => {
  it("are the documented values", () => {
    expect(TEXT_LIMITS).toEqual({ name: 1024, queue: 256, key: 1024, correlationId: 1024, parentId: 1024, rootId: 1024 });
    expect(Object.isFrozen(TEXT_LIMITS)).toBe(true);
  });

  it("utf8Length counts bytes as Postgres stores them", () => {
    expect(utf8Length("")).toBe(0);
    expect(utf8Length("abc")).toBe(3);
    expect(utf8Length("é")).toBe(2);
    expect(utf8Length("漢")).toBe(3);
    expect(utf8Length("🙂")).toBe(4);
    expect(utf8Length("\ud800")).toBe(3);
    expect(utf8Length("\ud800a")).toBe(4);
    for (const text of ["abc", "é漢🙂", "x".repeat(300)]) expect(utf8Length(text)).toBe(Buffer.byteLength(text, "utf8"));
  });

  it.each(Object.entries(TEXT_LIMITS))("accepts %s at its limit (%i bytes) and rejects one byte more, on submit and on reads", (field, limit) => {
    const atLimit = "é".repeat(Math.floor(limit / 2)) + (limit % 2 === 0 ? "" : "x");
    expect(utf8Length(atLimit)).toBe(limit);
    expect(requireLimitedText(atLimit, field as keyof typeof TEXT_LIMITS)).toBe(atLimit);
    expect(normalizeSubmit(loose<SubmitInput>({ name: "job", [field]: atLimit }), ID)).toBeTruthy();
    const over = atLimit + "x";
    const err = expectInvalid(() => normalizeSubmit(loose<SubmitInput>({ name: "job", [field]: over }), ID), field, /over the limit/);
    expect(err.message).toContain(`${limit + 1} bytes`);
    expect(err.message).toContain(`TEXT_LIMITS.${field}`);
    // Short strings skip the count; a long ASCII string at the limit passes.
    expect(requireLimitedText("x".repeat(limit), field as keyof typeof TEXT_LIMITS)).toHaveLength(limit);
  });

  it("checks the limits on claims, lists, purges, queue depth and keys too", () => {
    const longQueue = "q".repeat(TEXT_LIMITS.queue + 1);
    const longName = "n".repeat(TEXT_LIMITS.name + 1);
    expectInvalid(() => normalizeClaim({ queues: [longQueue], workerId: W1 }), "queues[0]", /over the limit/);
    expectInvalid(() => normalizeClaim({ queues: ["default"], names: ["ok", longName], workerId: W1 }), "names[1]", /over the limit/);
    expectInvalid(() => normalizeList({ queue: longQueue }), "queue");
    expectInvalid(() => normalizeList({ name: longName }), "name");
    expectInvalid(() => normalizeList({ rootId: "r".repeat(TEXT_LIMITS.rootId + 1) }), "rootId");
    expectInvalid(() => purgeParams({ queue: longQueue }), "queue");
    expectInvalid(() => queueDepthArgs(longQueue, 1), "queue");
    expectInvalid(() => requireKey("k".repeat(TEXT_LIMITS.key + 1)), "key", /over the limit/);
    expectInvalid(() => requireKey("k".repeat(TEXT_LIMITS.key + 1), "keys[0]"), "keys[0]");
  });
});

describe("the §5.16 fallback stays storable", () => {
  it("sanitizes U+0000 and lone surrogates in an unencodable error's fields, keeping its code", () => {
    const error = { type: "Boom\u0000", code: "bad\ud800", message: "nul \u0000 here", details: { n: NaN } };
    expect(JSON.parse(encodeFailError(error, false))).toEqual({
      type: "Boom\ufffd",
      code: "bad\ufffd",
      message: "nul \ufffd here",
      retryable: false,
      details: {},
    });
    // An error whose only problem is the NUL in its message is still recorded.
    expect(JSON.parse(encodeFailError({ code: "c", message: "a\u0000" }, true))).toMatchObject({ code: "c", message: "a\ufffd" });
  });
});
