/**
 * What `explain` says about a task with durable steps: the journal, and
 * for a task parked on a sleep, a wait or a join, what it waits for — a
 * parked task is an ordinary queued row that is not due, which without its
 * journal would read as "delayed".
 */
import type { StepRecord, Task } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { parkedOn } from "@cairnq/protocol/sdk";
import { formatWhen } from "@cairnq/runtime";
import type { Verdict } from "./explain.js";

/**
 * What a journal entry that is `waiting` waits for, in words, at `nowMs`:
 * a sleep's end, a message (and its timeout), or a join's children — what
 * `explain`, `cairnq get` and the dashboard say about a parked task.
 *
 * @example
 * ```ts
 * for (const s of await client.steps(id)) if (s.status === "waiting") console.log(describeStepWait(s, Date.now()));
 * ```
 */
export function describeStepWait(step: StepRecord, nowMs: number): string {
  const until = step.wakeAtMs === null || step.wakeAtMs >= PARK_FOREVER_AT_MS ? null : step.wakeAtMs;
  switch (step.kind) {
    case "sleep":
      return `the end of sleep '${step.name}' ${until === null ? "" : formatWhen(until, nowMs)}`.trimEnd();
    case "wait":
      return (
        `a message '${String(step.waitingFor)}' (cairnq.send(taskId, '${String(step.waitingFor)}', payload))` +
        (until === null ? ", with no timeout" : `, or its timeout ${formatWhen(until, nowMs)}`)
      );
    case "join": {
      const ids = Array.isArray(step.waitingFor) ? step.waitingFor : [];
      return `${ids.length} child task${ids.length === 1 ? "" : "s"} to finish (join '${step.name}'; checked again ${until === null ? "when one finishes" : formatWhen(until, nowMs)} at the latest)`;
    }
    case "step":
    case "spawn":
      return `step '${step.name}'`;
  }
}

/** The verdict for a queued task parked on a durable step, or `null` when it is not parked. */
export function parkedVerdict(task: Task, steps: readonly StepRecord[], nowMs: number): Verdict | null {
  if (task.status !== "queued") return null;
  const step = parkedOn(steps);
  if (step === null) return null;
  const recorded = steps.filter((s) => s.status === "done").length;
  const due = task.run_at_ms <= nowMs ? ` It is due now: a worker with a handler for '${task.name}' resumes it from the top, recorded steps replaying.` : "";
  return {
    taskId: task.id,
    state: "parked",
    atMs: step.wakeAtMs !== null && step.wakeAtMs < PARK_FOREVER_AT_MS ? step.wakeAtMs : null,
    summary:
      `Parked (no worker holds it, no attempt is used): ${step.kind === "sleep" ? "sleeping" : "waiting"} for ${describeStepWait(step, nowMs)}, ` +
      `after ${recorded} recorded step${recorded === 1 ? "" : "s"}.${due}`,
  };
}
