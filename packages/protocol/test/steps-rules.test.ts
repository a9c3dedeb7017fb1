import { describe, expect, it } from "vitest";
import { decideRow } from "../src/decide.js";
import { MAX_DELAY_MS } from "../src/delay.js";
import { InvalidArgument } from "../src/errors.js";
import {
  decodeStepRow,
  hasMessageParams,
  holdsJoin,
  joinParentsToWake,
  messageArrived,
  MAX_STEP_NAME_LENGTH,
  PARK_FOREVER_AT_MS,
  PARK,
  parkStepParams,
  recordStepParams,
  refusedSpawnOption,
  requireMessageName,
  requireReplayKind,
  requireSendTarget,
  requireSpawnChild,
  requireStepName,
  requireWakeAtMs,
  sendParams,
  stepKey,
} from "../src/steps.js";
import type { StepRecord } from "../src/steps.js";
import { ID, NOW, W1, W2, expectPostState, ownedParams, runningRow } from "./fixtures.js";

const owned = { taskId: ID, workerId: W1, attempt: 1 };

describe("step names and journal keys", () => {
  it("the first occurrence is the name, later ones carry #n", () => {
    expect(stepKey("page", 1)).toBe("page");
    expect(stepKey("page", 2)).toBe("page#2");
    expect(stepKey("page", 10)).toBe("page#10");
  });

  it("a handler's step name is a non-empty string without '#', at most the limit", () => {
    expect(requireStepName("charge")).toBe("charge");
    expect(() => requireStepName("page#2")).toThrow(/contains '#'/);
    expect(() => requireStepName("x".repeat(MAX_STEP_NAME_LENGTH + 1))).toThrow(InvalidArgument);
    expect(() => requireStepName("")).toThrow(InvalidArgument);
    expect(() => requireStepName(7, "step")).toThrow(/step/);
  });

  it("the limit counts UTF-16 code units (JavaScript string length), and the refusal says so: an emoji counts 2", () => {
    expect(requireStepName("🎉".repeat(MAX_STEP_NAME_LENGTH / 2))).toHaveLength(MAX_STEP_NAME_LENGTH);
    expect(() => requireStepName("🎉".repeat(MAX_STEP_NAME_LENGTH))).toThrow(
      `step name is ${2 * MAX_STEP_NAME_LENGTH} UTF-16 code units long; at most ${MAX_STEP_NAME_LENGTH} are allowed (JavaScript string length: an emoji counts 2)`,
    );
  });

  it("a message name follows the step name rule, since ctx.waitFor waits under a step name", () => {
    expect(requireMessageName("shipped")).toBe("shipped");
    expect(() => requireMessageName("a#2")).toThrow(/message name 'a#2' contains '#'.*none could ever take this one/);
    const long = "n".repeat(MAX_STEP_NAME_LENGTH + 1);
    expect(() => requireMessageName(long)).toThrow(new RegExp(`message name is ${MAX_STEP_NAME_LENGTH + 1} UTF-16 code units long; at most ${MAX_STEP_NAME_LENGTH} are allowed \\(JavaScript string length: an emoji counts 2\\)`));
    expect(requireMessageName("n".repeat(MAX_STEP_NAME_LENGTH))).toHaveLength(MAX_STEP_NAME_LENGTH);
    expect(() => requireMessageName("")).toThrow(InvalidArgument);
  });
});

describe("requireReplayKind", () => {
  it("a journal entry answers only a call of the kind that recorded it", () => {
    expect(() => requireReplayKind(ID, "x", "sleep", "sleep")).not.toThrow();
    const err = (() => {
      try {
        requireReplayKind(ID, "x", "step", "sleep");
      } catch (e) {
        return e as InvalidArgument;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err?.argument).toBe("name");
    expect(err?.message).toMatch(new RegExp(`journal of task ${ID} holds a 'step' entry \\(ctx.step\\) at 'x', but the handler called ctx.sleep/ctx.sleepUntil there`));
    expect(() => requireReplayKind(ID, "m#2", "wait", "spawn")).toThrow(/'wait' entry \(ctx.waitFor\) at 'm#2', but the handler called ctx.spawn/);
    expect(() => requireReplayKind(ID, "j", "spawn", "join")).toThrow(/'spawn' entry \(ctx.spawn\) at 'j', but the handler called ctx.join/);
  });
});

describe("requireWakeAtMs", () => {
  it("accepts a safe integer before the largest date, which is reserved for no timeout", () => {
    expect(requireWakeAtMs(NOW, "ms", "ctx.sleep('z', 0)")).toBe(NOW);
    expect(requireWakeAtMs(PARK_FOREVER_AT_MS - 1, "ms", "w")).toBe(PARK_FOREVER_AT_MS - 1);
    expect(() => requireWakeAtMs(PARK_FOREVER_AT_MS, "until", "ctx.sleepUntil('z', 8640000000000000)")).toThrow(/ctx.sleepUntil\('z', 8640000000000000\) would wake at 8640000000000000 ms since the epoch, which is not before 8640000000000000/);
    expect(() => requireWakeAtMs(NOW + Number.MAX_SAFE_INTEGER, "ms", "s")).toThrow(InvalidArgument);
    expect(() => requireWakeAtMs(NOW + 0.5, "ms", "s")).toThrow(InvalidArgument);
  });
});

describe("requireSendTarget", () => {
  it("refuses a missing task and a succeeded one, whose waits can never run; keeps one a retry may run again", () => {
    expect(() => requireSendTarget(ID, "m", undefined)).toThrow(new RegExp(`no task has id ${ID}`));
    expect(() => requireSendTarget(ID, "m", { status: "succeeded" })).toThrow(new RegExp(`task ${ID} has succeeded, so no ctx.waitFor\\('m'\\) of it can ever run: the message was not stored`));
    for (const status of ["queued", "running", "failed", "canceled"]) expect(() => requireSendTarget(ID, "m", { status })).not.toThrow();
  });
});

describe("requireSpawnChild and refusedSpawnOption (a spawned child has no key and no debounce)", () => {
  it("refuses a child holding a key or a debounce, naming it; null and undefined are absent", () => {
    expect(refusedSpawnOption({})).toBeNull();
    expect(refusedSpawnOption({ key: null, debounce: undefined })).toBeNull();
    expect(refusedSpawnOption({ key: "k" })).toBe("key");
    expect(refusedSpawnOption({ key: "k", debounce: { delayMs: 1 } })).toBe("debounce");
    const child = { name: "child", key: null };
    expect(requireSpawnChild(child)).toBe(child);
    expect(() => requireSpawnChild({ name: "child", key: "k" })).toThrow(new InvalidArgument("key", "a spawned child cannot have a key: the step name already makes the spawn happen once; submit keyed tasks with ctx.submit inside a ctx.step"));
    expect(() => requireSpawnChild({ name: "child", debounce: { delayMs: 1 } })).toThrow(/cannot be debounced/);
    for (const bad of [null, undefined, "child"]) expect(() => requireSpawnChild(bad)).toThrow(/spawn needs the child's submit input/);
  });
});

describe("PARK", () => {
  it("gives back the lease: queued, no worker, due after delayMs, attempt one lower so parking uses no attempt, progress and message cleared", () => {
    const row = runningRow({ attempt: 2, progress: 0.4, message: "half" });
    const d = decideRow(PARK, row, ownedParams({ untilMs: null, delayMs: 1_000 }), NOW);
    expect(d.kind).toBe("applied");
    if (d.kind !== "applied") return;
    expect(d.branch).toBe("park");
    expectPostState(d.row, row, { status: "queued", worker_id: null, lease_until_ms: null, run_at_ms: NOW + 1_000, attempt: 1, progress: null, message: null });
  });

  it("an absolute wake time wins over the delay", () => {
    const d = decideRow(PARK, runningRow(), ownedParams({ untilMs: NOW + 86_400_000, delayMs: 5 }), NOW);
    expect(d.kind === "applied" && d.row.run_at_ms).toBe(NOW + 86_400_000);
  });

  it("a cancel requested while the task ran wins: canceled, completed now", () => {
    const row = runningRow({ cancel_requested_at_ms: NOW - 10 });
    const d = decideRow(PARK, row, ownedParams({ untilMs: null, delayMs: 0 }), NOW);
    expect(d.kind === "applied" && d.branch).toBe("cancel");
    if (d.kind !== "applied") return;
    expectPostState(d.row, row, { status: "canceled", completed_at_ms: NOW, lease_until_ms: null });
  });

  it("only the lease holder parks: another worker's park is a lost lease", () => {
    expect(decideRow(PARK, runningRow(), ownedParams({ untilMs: null, delayMs: 0 }, W2), NOW)).toEqual({ kind: "lost-lease" });
    expect(decideRow(PARK, null, ownedParams({ untilMs: null, delayMs: 0 }), NOW)).toEqual({ kind: "lost-lease" });
  });
});

describe("recordStepParams", () => {
  it("encodes a done step's result and a failed step's error, never both", () => {
    expect(recordStepParams({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: { id: "ch_1" } })).toMatchObject({
      taskId: ID,
      workerId: W1,
      attempt: 1,
      stepName: "charge",
      seq: 1,
      kind: "step",
      stepStatus: "done",
      result: '{"id":"ch_1"}',
      error: null,
    });
    const failed = recordStepParams({ ...owned, name: "charge#2", kind: "step", status: "failed", seq: 2, error: { message: "declined" } });
    expect(failed).toMatchObject({ stepStatus: "failed", result: null, error: '{"message":"declined"}', stepName: "charge#2" });
  });

  it("defaults: an undefined result records null, a missing error {}, a missing attempt no fence", () => {
    expect(recordStepParams({ taskId: ID, workerId: W1, name: "a", kind: "spawn", status: "done", seq: 1 })).toMatchObject({ result: "null", attempt: null });
    expect(recordStepParams({ ...owned, name: "a", kind: "step", status: "failed", seq: 1 })).toMatchObject({ error: "{}" });
  });

  it("refuses bad input with a message naming the field", () => {
    const ok = { ...owned, name: "a", kind: "step", status: "done", seq: 1 } as const;
    expect(() => recordStepParams(null as never)).toThrow(/input object/);
    expect(() => recordStepParams({ ...ok, kind: "nap" as never })).toThrow(/kind must be one of/);
    expect(() => recordStepParams({ ...ok, status: "waiting" as never })).toThrow(/'done' or 'failed'/);
    expect(() => recordStepParams({ ...ok, seq: 0 })).toThrow(/seq/);
    expect(() => recordStepParams({ ...ok, name: "x".repeat(MAX_STEP_NAME_LENGTH + 13) })).toThrow(/step name is 213 UTF-16 code units long; at most 200 are allowed \(JavaScript string length: an emoji counts 2\)/);
    expect(() => recordStepParams({ ...ok, result: () => 1 })).toThrow(/cannot encode step result as JSON/);
  });
});

describe("parkStepParams", () => {
  it("a sleep parks for delayMs (0 when absent) unless it has an absolute time", () => {
    expect(parkStepParams({ ...owned, name: "nap", kind: "sleep", seq: 1, delayMs: 500 })).toMatchObject({ untilMs: null, delayMs: 500, message: null, childIds: [], waitingFor: null });
    expect(parkStepParams({ ...owned, name: "nap", kind: "sleep", seq: 1 })).toMatchObject({ untilMs: null, delayMs: 0 });
    expect(parkStepParams({ ...owned, name: "nap", kind: "sleep", seq: 1, untilMs: NOW, delayMs: 9 })).toMatchObject({ untilMs: NOW, delayMs: 0 });
  });

  it("a wait names its message; a join lists its children, in order", () => {
    expect(parkStepParams({ ...owned, name: "w", kind: "wait", seq: 2, message: "approved" })).toMatchObject({ message: "approved", waitingFor: '"approved"' });
    const join = parkStepParams({ ...owned, name: "j", kind: "join", seq: 3, childIds: ["task_b", "task_a"] });
    expect(join).toMatchObject({ childIds: ["task_b", "task_a"], waitingFor: '["task_b","task_a"]', message: null });
    expect(parkStepParams({ ...owned, name: "j", kind: "join", seq: 3 })).toMatchObject({ childIds: [], waitingFor: "[]" });
  });

  it("refuses a join on its own task, which would stay parked for ever", () => {
    expect(() => parkStepParams({ ...owned, name: "j", kind: "join", seq: 3, childIds: ["task_b", owned.taskId] })).toThrow(
      expect.objectContaining({ name: "InvalidArgument", argument: "childIds[1]", message: expect.stringMatching(/a join cannot wait for its own task/) }),
    );
  });

  it("a wait with a deadline takes only messages sent before it, and may be expired; a wait without one takes any", () => {
    expect(parkStepParams({ ...owned, name: "w", kind: "wait", seq: 2, message: "m", untilMs: NOW, expired: true })).toMatchObject({ expired: true, messagesBeforeMs: NOW });
    expect(parkStepParams({ ...owned, name: "w", kind: "wait", seq: 2, message: "m", untilMs: NOW, expired: null })).toMatchObject({ expired: false, messagesBeforeMs: NOW });
    expect(parkStepParams({ ...owned, name: "w", kind: "wait", seq: 2, message: "m", delayMs: 10 })).toMatchObject({ expired: false, messagesBeforeMs: PARK_FOREVER_AT_MS });
    expect(() => parkStepParams({ ...owned, name: "w", kind: "wait", seq: 2, message: "m", delayMs: 10, expired: true })).toThrow(/only a wait with a deadline/);
    expect(() => parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 2, untilMs: NOW, expired: true })).toThrow(/only a wait with a deadline/);
    expect(() => parkStepParams({ ...owned, name: "w", kind: "wait", seq: 2, message: "m", untilMs: NOW, expired: "yes" as never })).toThrow(/expired must be a boolean/);
  });

  it("refuses what does not park and malformed times, messages and child ids", () => {
    expect(() => parkStepParams({ ...owned, name: "s", kind: "step" as never, seq: 1 })).toThrow(/only a sleep, wait or join parks/);
    expect(() => parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 1, delayMs: -1 })).toThrow(/delayMs/);
    expect(() => parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 1, untilMs: 1.5 })).toThrow(/untilMs/);
    expect(() => parkStepParams({ ...owned, name: "w", kind: "wait", seq: 1 })).toThrow(/message/);
    expect(() => parkStepParams({ ...owned, name: "j", kind: "join", seq: 1, childIds: ["task_a", ""] })).toThrow(/childIds\[1\]/);
    // Past the largest date a wake time is no Date any more: neither an instant nor a delay may reach it.
    expect(parkStepParams({ ...owned, name: "w", kind: "wait", seq: 1, message: "m", untilMs: PARK_FOREVER_AT_MS })).toMatchObject({ untilMs: PARK_FOREVER_AT_MS });
    expect(() => parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 1, untilMs: PARK_FOREVER_AT_MS + 1 })).toThrow(/untilMs must be an integer from 0 to 8640000000000000/);
    // A delay is added to the store's clock: bounded by MAX_DELAY_MS, as every delay.
    expect(() => parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 1, delayMs: Number.MAX_SAFE_INTEGER })).toThrow(/^delayMs asks for a delay of 9007199254740991 ms, over MAX_DELAY_MS/);
    expect(() => parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 1, delayMs: MAX_DELAY_MS + 1 })).toThrow(/over MAX_DELAY_MS/);
    expect(parkStepParams({ ...owned, name: "s", kind: "sleep", seq: 1, delayMs: MAX_DELAY_MS })).toMatchObject({ delayMs: MAX_DELAY_MS, untilMs: null });
  });
});

describe("sendParams", () => {
  it("encodes the payload (null when absent)", () => {
    expect(sendParams({ taskId: ID, name: "approved", payload: { by: "ann" } })).toEqual({ taskId: ID, name: "approved", payload: '{"by":"ann"}' });
    expect(sendParams({ taskId: ID, name: "approved" })).toEqual({ taskId: ID, name: "approved", payload: "null" });
  });

  it("refuses a missing input, task id or name", () => {
    expect(() => sendParams(undefined as never)).toThrow(/taskId, name, payload/);
    expect(() => sendParams({ taskId: "", name: "a" })).toThrow(/taskId/);
    expect(() => sendParams({ taskId: ID, name: 3 as never })).toThrow(/name/);
  });

  it("refuses a message name no wait can have: with '#', or longer than a step name", () => {
    expect(() => sendParams({ taskId: ID, name: "a#2" })).toThrow(/message name 'a#2' contains '#'/);
    expect(() => sendParams({ taskId: ID, name: "n".repeat(1000) })).toThrow(/message name is 1000 UTF-16 code units long/);
  });
});

describe("decodeStepRow", () => {
  it("reads JSON held as text (SQLite) or already decoded (Postgres), numbers held as strings, and nulls", () => {
    const fromText = decodeStepRow({
      name: "j",
      kind: "join",
      status: "waiting",
      result: null,
      error: undefined,
      attempt: "2",
      at_ms: "1700000000000",
      wake_at_ms: "1700000001000",
      waiting_for: '["task_a"]',
      seq: 3,
    });
    expect(fromText).toEqual({ name: "j", kind: "join", status: "waiting", result: null, error: null, attempt: 2, atMs: NOW, wakeAtMs: NOW + 1_000, waitingFor: ["task_a"], seq: 3 });
    const decoded = decodeStepRow({ name: "s", kind: "step", status: "done", result: { ok: true }, error: null, attempt: 1, at_ms: NOW, wake_at_ms: null, waiting_for: null, seq: 1 });
    expect(decoded).toMatchObject({ result: { ok: true }, wakeAtMs: null, waitingFor: null });
  });
});

describe("joinParentsToWake", () => {
  it("names the parent of every row a transition left terminal, and no other", () => {
    expect(
      joinParentsToWake([
        { parent_id: "task_parent_a", status: "canceled" },
        { parent_id: "task_parent_b", status: "running" },
        { parent_id: null, status: "canceled" },
        { status: "failed" },
        { parent_id: "task_parent_c", status: "succeeded" },
      ]),
    ).toEqual(["task_parent_a", "task_parent_c"]);
  });
});

describe("hasMessageParams", () => {
  it("bounds the read by sentBeforeMs, or reads any message (PARK_FOREVER_AT_MS) without it", () => {
    expect(hasMessageParams(ID, "go")).toEqual({ taskId: ID, name: "go", messagesBeforeMs: PARK_FOREVER_AT_MS });
    expect(hasMessageParams(ID, "go", null)).toEqual({ taskId: ID, name: "go", messagesBeforeMs: PARK_FOREVER_AT_MS });
    expect(hasMessageParams(ID, "go", NOW)).toEqual({ taskId: ID, name: "go", messagesBeforeMs: NOW });
  });

  it("refuses an empty task id or name and a bound that is not an integer instant", () => {
    expect(() => hasMessageParams("", "go")).toThrow(/taskId/);
    expect(() => hasMessageParams(ID, "")).toThrow(/name/);
    expect(() => hasMessageParams(ID, "go", -1)).toThrow(/sentBeforeMs/);
    expect(() => hasMessageParams(ID, "go", 1.5)).toThrow(InvalidArgument);
    expect(() => hasMessageParams(ID, "go", PARK_FOREVER_AT_MS + 1)).toThrow(/sentBeforeMs/);
  });
});

describe("messageArrived", () => {
  const wait: StepRecord = { name: "go#2", kind: "wait", status: "waiting", result: null, error: null, attempt: 1, atMs: NOW, wakeAtMs: PARK_FOREVER_AT_MS, waitingFor: "go", seq: 1 };
  function recording(answer: boolean) {
    const calls: unknown[][] = [];
    return { calls, store: { hasMessage: (...args: unknown[]) => (calls.push(args), Promise.resolve(answer)) } };
  }

  it("asks for the wait's message name, bounded by its deadline when it has one (what the wait takes when it resumes)", async () => {
    const { calls, store } = recording(true);
    expect(await messageArrived(store, ID, wait)).toBe(true);
    expect(await messageArrived(store, ID, { ...wait, wakeAtMs: NOW + 900 })).toBe(true);
    expect(await messageArrived(store, ID, { ...wait, wakeAtMs: null })).toBe(true);
    expect(calls).toEqual([
      [ID, "go", undefined],
      [ID, "go", NOW + 900],
      [ID, "go", undefined],
    ]);
    expect(await messageArrived(recording(false).store, ID, wait)).toBe(false);
  });

  it("undefined for an entry that is not a waiting wait, or a store without the read; a failed read rejects", async () => {
    const { calls, store } = recording(true);
    expect(await messageArrived(store, ID, { ...wait, kind: "sleep", waitingFor: null })).toBeUndefined();
    expect(await messageArrived(store, ID, { ...wait, status: "done" })).toBeUndefined();
    expect(await messageArrived(store, ID, { ...wait, waitingFor: ["task_a"] })).toBeUndefined();
    expect(calls).toEqual([]);
    expect(await messageArrived({}, ID, wait)).toBeUndefined();
    await expect(messageArrived({ hasMessage: () => Promise.reject(new Error("connection reset")) }, ID, wait)).rejects.toThrow("connection reset");
  });
});

describe("holdsJoin (a join is satisfied when no child holds it)", () => {
  it("a child that exists and has not finished holds it; a finished or purged (null) one does not", () => {
    expect(["queued", "running"].map((status) => holdsJoin({ status }))).toEqual([true, true]);
    expect(["succeeded", "failed", "canceled"].map((status) => holdsJoin({ status }))).toEqual([false, false, false]);
    expect(holdsJoin(null)).toBe(false);
  });
});
