/**
 * `explain` of tasks with a durable-steps journal, as pure functions of the
 * row, the journal and the clock: what a journal tells that the row alone
 * cannot (a park gives its attempt back, so attempt 0 does not mean "never
 * claimed").
 */
import type { StepRecord, Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { explainTask } from "../src/explain.js";
import { EXPLAIN_NOW, taskRow } from "./task-row.js";

const NOW = EXPLAIN_NOW;

function row(fields: Partial<Task>): Task {
  return taskRow({ root_id: "task_01JB8ZK3M2Q4W5E6R7T8Y9V0XP", ...fields });
}

/** A journal entry of `fields` over a `done` step recorded on attempt 1. */
function stepRow(fields: Partial<StepRecord>): StepRecord {
  return { name: "charge", kind: "step", status: "done", result: null, error: null, attempt: 1, atMs: NOW - 60_000, wakeAtMs: null, waitingFor: null, seq: 1, ...fields };
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

  it("canceled with an empty journal on attempt 0: never claimed", () => {
    expect(explainTask(row({ status: "canceled", completed_at_ms: NOW }), { nowMs: NOW, steps: [] }).summary).toContain("while queued, before any worker claimed it");
  });
});
