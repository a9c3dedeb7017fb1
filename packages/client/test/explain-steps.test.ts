/**
 * `explain` of tasks with a durable-steps journal, as pure functions of the
 * row, the journal and the clock: what a journal tells that the row alone
 * cannot (a park gives its attempt back, so attempt 0 does not mean "never
 * claimed").
 */
import type { StepRecord, Task, TaskRef } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { stepRecord, TASK_ROW_NOW, taskRow } from "@cairnq/test-support/task-rows";
import { describe, expect, it } from "vitest";
import { explain, explainTask } from "../src/explain.js";
import { describeStepWait, parkedVerdict, readJoinChildren } from "../src/explain-steps.js";

const NOW = TASK_ROW_NOW;

function row(fields: Partial<Task>): Task {
  return taskRow({ root_id: "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", ...fields });
}

/** A journal entry of `fields` over a `done` step recorded on attempt 1. */
function stepRow(fields: Partial<StepRecord>): StepRecord {
  return stepRecord({ name: "charge", kind: "step", status: "done", atMs: NOW - 60_000, wakeAtMs: null, ...fields });
}

const NAP = stepRow({ name: "nap", kind: "sleep", status: "waiting", wakeAtMs: NOW + 3_540_000, seq: 2 });

describe("explainTask of a canceled task with a journal", () => {
  it("canceled while parked: names the step it was parked on, never 'before any worker claimed it'", () => {
    const canceled = row({ status: "canceled", attempt: 0, completed_at_ms: NOW, run_at_ms: NOW + 3_540_000 });
    const { summary } = explainTask(canceled, { nowMs: NOW, steps: [stepRow({}), NAP] });
    expect(summary).toBe(
      "Finished: canceled 2026-12-01T10:00:00.000Z (just now) while parked on sleep 'nap' (a worker ran it and it parked there; a park gives its attempt back), on attempt 0 of 3. Retrying it requeues it.",
    );
  });

  it("canceled after its sleep ended, before a worker resumed it: a worker ran it", () => {
    const canceled = row({ status: "canceled", attempt: 0, completed_at_ms: NOW });
    const { summary } = explainTask(canceled, { nowMs: NOW, steps: [stepRow({}), { ...NAP, status: "done" }] });
    expect(summary).toContain("while queued to be resumed (a worker ran it and recorded steps; a park gives its attempt back)");
    expect(summary).not.toContain("before any worker claimed it");
  });

  it("canceled after a retryable failure (attempt 1) that recorded steps: not 'to be resumed' alone, never 'before any worker claimed it'", () => {
    const canceled = row({ status: "canceled", attempt: 1, completed_at_ms: NOW });
    const { summary } = explainTask(canceled, { nowMs: NOW, steps: [stepRow({})] });
    expect(summary).toContain("while queued between attempts or to be resumed after a park (a worker ran it and recorded steps)");
  });

  it("canceled with an empty journal on attempt 0: never claimed", () => {
    expect(explainTask(row({ status: "canceled", completed_at_ms: NOW }), { nowMs: NOW, steps: [] }).summary).toContain("while queued, before any worker claimed it");
  });
});

describe("a task parked on a join", () => {
  const KID = "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XA";
  const KID2 = "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XB";
  const join = stepRow({ name: "kids", kind: "join", status: "waiting", wakeAtMs: NOW + 29_000, waitingFor: [KID], seq: 2 });
  const spawn = stepRow({ name: "kid", kind: "spawn", result: KID });

  it("its child finished and a settlement woke it: satisfied and due now, not 'waiting for 1 child task to finish … checked again in 29 s'", () => {
    const parent = row({ run_at_ms: NOW - 1000 });
    const verdict = parkedVerdict(parent, [spawn, join], NOW, { unfinishedChild: null });
    expect(verdict).toEqual({
      taskId: parent.id,
      state: "parked",
      atMs: NOW - 1000,
      summary:
        "Parked on join 'kids' (no worker holds it, no attempt is used), after 1 recorded step: the child task it joins has finished, so the join is satisfied. " +
        "It is due now: a worker with a handler for 'email' resumes it from the top, recorded steps replaying, and the join returns the children's rows.",
    });
  });

  it("its children finished without a wake (lease recovery ended one): resumed when the join looks again", () => {
    const parent = row({ run_at_ms: NOW + 29_000 });
    const { summary, atMs } = parkedVerdict(parent, [spawn, { ...join, waitingFor: [KID, KID2] }], NOW, { unfinishedChild: null }) ?? { summary: "", atMs: null };
    expect(summary).toContain("all 2 child tasks it joins have finished, so the join is satisfied. A worker with a handler for 'email' resumes it when the join looks again, 2026-12-01T10:00:29.000Z (in 29 s)");
    expect(atMs).toBe(NOW + 29_000);
  });

  it("a child still running: names it; once due, no 'checked again' that contradicts 'due now'", () => {
    const running: TaskRef = { id: KID2, status: "running" };
    const waiting = parkedVerdict(row({ run_at_ms: NOW + 29_000 }), [spawn, { ...join, waitingFor: [KID, KID2] }], NOW, { unfinishedChild: running });
    expect(waiting?.summary).toContain(`waiting for 2 child tasks to finish (join 'kids'; ${KID2} is still running; checked again 2026-12-01T10:00:29.000Z (in 29 s) at the latest)`);
    const due = parkedVerdict(row({ run_at_ms: NOW - 1000 }), [spawn, { ...join, waitingFor: [KID, KID2] }], NOW, { unfinishedChild: running });
    expect(due?.summary).toContain(`waiting for 2 child tasks to finish (join 'kids'; ${KID2} is still running), after 1 recorded step. It is due now`);
    expect(due?.summary).not.toContain("checked again");
  });

  it("explain reads the children's statuses: a purged child counts as finished; the first unfinished one is named", async () => {
    const statuses = new Map<string, TaskRef | null>([
      [KID, { id: KID, status: "succeeded" }],
      [KID2, null],
    ]);
    const parent = row({ run_at_ms: NOW - 1000 });
    const store = {
      capabilities: { durableSteps: true },
      get: () => Promise.resolve(parent),
      getStatus: (id: string) => Promise.resolve(statuses.get(id) ?? null),
      steps: () => Promise.resolve([spawn, { ...join, waitingFor: [KID, KID2] }]),
      list: () => Promise.reject(new Error("a parked task reads no queue activity")),
      stats: () => Promise.reject(new Error("a parked task reads no queue activity")),
    };
    expect((await explain(store as never, parent.id, { nowMs: NOW }))?.summary).toContain("all 2 child tasks it joins have finished, so the join is satisfied");
    statuses.set(KID2, { id: KID2, status: "queued" });
    expect((await explain(store as never, parent.id, { nowMs: NOW }))?.summary).toContain(`(join 'kids'; ${KID2} is still queued)`);
    expect(await readJoinChildren(store, [])).toBeNull();
    // Past the first few reads at once, the rest are read too.
    const many = Array.from({ length: 40 }, (_, i) => `task_${i}`);
    expect(await readJoinChildren({ getStatus: (id) => Promise.resolve({ id, status: id === "task_39" ? "queued" : "failed" }) }, many)).toEqual({ id: "task_39", status: "queued" });
  });
});

describe("a task parked on a wait whose message has arrived", () => {
  const go = stepRow({ name: "go", kind: "wait", status: "waiting", wakeAtMs: PARK_FOREVER_AT_MS, waitingFor: "go", seq: 1 });

  it("cairnq.send woke it, no worker resumed it yet: satisfied and due now, never 'waiting for a message … with no timeout'", () => {
    const parked = row({ run_at_ms: NOW - 1000 });
    const verdict = parkedVerdict(parked, [go], NOW, { messageArrived: true });
    expect(verdict).toEqual({
      taskId: parked.id,
      state: "parked",
      atMs: NOW - 1000,
      summary:
        "Parked on wait 'go' (no worker holds it, no attempt is used), after 0 recorded steps: the message 'go' has arrived, so the wait is satisfied and the task waits only for a worker " +
        "to resume it (sending 'go' again would store a second message, kept for a later wait of that name). It is due now: a worker with a handler for 'email' resumes it from the top, " +
        "recorded steps replaying, and the wait returns the message's payload.",
    });
    expect(describeStepWait(go, NOW, { messageArrived: true })).toBe("a worker to resume it: the message 'go' has arrived (wait 'go'), so the task is due");
  });

  it("not due yet by this clock (the send's store clock ahead of it): resumed once due; no message: still waiting for it", () => {
    const { summary, atMs } = parkedVerdict(row({ run_at_ms: NOW + 2000 }), [go], NOW, { messageArrived: true }) ?? { summary: "", atMs: null };
    expect(summary).toContain("A worker with a handler for 'email' resumes it once it is due, 2026-12-01T10:00:02.000Z (in 2 s), and the wait returns the message's payload.");
    expect(atMs).toBe(NOW + 2000);
    const waiting = parkedVerdict(row({ run_at_ms: PARK_FOREVER_AT_MS }), [go], NOW, { messageArrived: false });
    expect(waiting?.summary).toContain("waiting for a message 'go' (cairnq.send(taskId, 'go', payload)), with no timeout, after 0 recorded steps.");
  });

  it("explain asks the store's hasMessage for the wait's message, bounded by its deadline; a store without it keeps the journal's words", async () => {
    const deadline = NOW + 60_000;
    const parked = row({ run_at_ms: NOW - 10 });
    const calls: unknown[][] = [];
    let stored = true;
    const store = {
      capabilities: { durableSteps: true },
      get: () => Promise.resolve(parked),
      getStatus: () => Promise.reject(new Error("a wait reads no children")),
      steps: () => Promise.resolve([{ ...go, wakeAtMs: deadline }]),
      hasMessage: (...args: unknown[]) => (calls.push(args), Promise.resolve(stored)),
      list: () => Promise.reject(new Error("a parked task reads no queue activity")),
      stats: () => Promise.reject(new Error("a parked task reads no queue activity")),
    };
    expect((await explain(store as never, parked.id, { nowMs: NOW }))?.summary).toContain("the message 'go' has arrived, so the wait is satisfied");
    expect(calls).toEqual([[parked.id, "go", deadline]]);
    stored = false;
    expect((await explain(store as never, parked.id, { nowMs: NOW }))?.summary).toContain("waiting for a message 'go' (cairnq.send(taskId, 'go', payload)), or its timeout");
    const { hasMessage: _, ...without } = store;
    expect((await explain(without as never, parked.id, { nowMs: NOW }))?.summary).toContain("waiting for a message 'go' (cairnq.send(taskId, 'go', payload)), or its timeout");
  });
});
