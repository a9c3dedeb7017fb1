/**
 * What `explain` says about a task with durable steps: the journal, and
 * for a task parked on a sleep, a wait or a join, what it waits for — a
 * parked task is an ordinary queued row that is not due, which without its
 * journal would read as "delayed".
 */
import type { StepRecord, Task, TaskRef, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { holdsJoin } from "@cairnq/protocol/adapter";
import { messageArrived, parkedOn } from "@cairnq/protocol/sdk";
import { formatWhen } from "@cairnq/runtime";
import type { Verdict } from "./explain.js";

/** What `explain` read about a parked task beyond its journal. */
export interface ParkedEvidence {
  /**
   * A join's children: the first of them (in the join's order) that has not finished, or `null` when every one
   * has (a purged child counts as finished: the join returns `null` for it). `undefined`: not read.
   */
  readonly unfinishedChild?: TaskRef | null;
  /**
   * A wait's message: `true` when it has arrived (stored, not yet taken, sent before the wait's deadline:
   * `TaskStepStore.hasMessage`), so the task is due and waits only for a worker to resume it — its entry stays
   * `waiting` until then. `undefined`: not read (a store without `hasMessage`).
   */
  readonly messageArrived?: boolean;
}

/** How many children's statuses {@link readJoinChildren} reads at once. */
const CHILD_READS_AT_ONCE = 16;

/**
 * The first child of `ids` that has not finished, or `null` when all have, from their statuses
 * (`getStatus`, a few at a time, stopping at the first unfinished one): whether a join is satisfied.
 *
 * @example
 * ```ts
 * const unfinished = await readJoinChildren(store, ["task_01…", "task_01…"]);
 * ```
 */
export async function readJoinChildren(store: Pick<TaskStore, "getStatus">, ids: readonly string[]): Promise<TaskRef | null> {
  for (let i = 0; i < ids.length; i += CHILD_READS_AT_ONCE) {
    const refs = await Promise.all(ids.slice(i, i + CHILD_READS_AT_ONCE).map((id) => store.getStatus(id)));
    const unfinished = refs.find(holdsJoin);
    if (unfinished !== undefined && unfinished !== null) return unfinished;
  }
  return null;
}

/**
 * What decides whether the entry a task is parked on is satisfied, though it stays `waiting` until a worker
 * resumes the task: a join's children (their statuses, {@link readJoinChildren}), a wait's message (whether it
 * has arrived: `TaskStepStore.hasMessage`, where the store has it). Nothing for a sleep, whose journal tells.
 *
 * @example
 * ```ts
 * const parked = parkedOn(steps);
 * const evidence = parked === null ? {} : await readParkedEvidence(store, id, parked);
 * ```
 */
export async function readParkedEvidence(store: Pick<TaskStore, "getStatus"> & Partial<Pick<TaskStepStore, "hasMessage">>, taskId: string, step: StepRecord): Promise<ParkedEvidence> {
  if (step.kind === "join" && Array.isArray(step.waitingFor)) return { unfinishedChild: await readJoinChildren(store, step.waitingFor) };
  const arrived = await messageArrived(store, taskId, step);
  return arrived === undefined ? {} : { messageArrived: arrived };
}

/**
 * What a journal entry that is `waiting` waits for, in words, at `nowMs`:
 * a sleep's end, a message (and its timeout) — or, once it has arrived
 * (`evidence.messageArrived`), a worker to resume the task — or a join's
 * children: what `explain`, `cairnq get` and the dashboard say about a parked task.
 *
 * @example
 * ```ts
 * for (const s of await client.steps(id)) if (s.status === "waiting") console.log(describeStepWait(s, Date.now()));
 * ```
 */
export function describeStepWait(step: StepRecord, nowMs: number, evidence: ParkedEvidence & { readonly due?: boolean } = {}): string {
  const until = step.wakeAtMs === null || step.wakeAtMs >= PARK_FOREVER_AT_MS ? null : step.wakeAtMs;
  switch (step.kind) {
    case "sleep":
      return `the end of sleep '${step.name}' ${until === null ? "" : formatWhen(until, nowMs)}`.trimEnd();
    case "wait":
      if (evidence.messageArrived === true) return `a worker to resume it: the message '${String(step.waitingFor)}' has arrived (wait '${step.name}'), so the task is due`;
      return (
        `a message '${String(step.waitingFor)}' (cairnq.send(taskId, '${String(step.waitingFor)}', payload))` +
        (until === null ? ", with no timeout" : `, or its timeout ${formatWhen(until, nowMs)}`)
      );
    case "join": {
      const ids = Array.isArray(step.waitingFor) ? step.waitingFor : [];
      const child = evidence.unfinishedChild === undefined || evidence.unfinishedChild === null ? "" : `; ${evidence.unfinishedChild.id} is still ${evidence.unfinishedChild.status}`;
      // A task already due is looked at when a worker claims it, not at the re-check.
      const check = evidence.due === true ? "" : `; checked again ${until === null ? "when one finishes" : formatWhen(until, nowMs)} at the latest`;
      return `${ids.length} child task${ids.length === 1 ? "" : "s"} to finish (join '${step.name}'${child}${check})`;
    }
    case "step":
    case "spawn":
      return `step '${step.name}'`;
  }
}

/**
 * The verdict for a queued task parked on a durable step, or `null` when it is not parked. A join whose
 * children have all finished (`evidence.unfinishedChild === null`), or a wait whose message has arrived
 * (`evidence.messageArrived`), is satisfied: the task waits only for a worker to resume it, at once when it
 * is due, else when it comes due (its `run_at_ms`: when the join looks again).
 */
export function parkedVerdict(task: Task, steps: readonly StepRecord[], nowMs: number, evidence: ParkedEvidence = {}): Verdict | null {
  if (task.status !== "queued") return null;
  const step = parkedOn(steps);
  if (step === null) return null;
  const recorded = steps.filter((s) => s.status === "done").length;
  const after = `after ${recorded} recorded step${recorded === 1 ? "" : "s"}`;
  const isDue = task.run_at_ms <= nowMs;
  const due = isDue ? ` It is due now: a worker with a handler for '${task.name}' resumes it from the top, recorded steps replaying.` : "";
  const base = { taskId: task.id, state: "parked" as const };
  if (step.kind === "join" && evidence.unfinishedChild === null) {
    const count = Array.isArray(step.waitingFor) ? step.waitingFor.length : 0;
    const resume = isDue
      ? ` It is due now: a worker with a handler for '${task.name}' resumes it from the top, recorded steps replaying, and the join returns the children's rows.`
      : ` A worker with a handler for '${task.name}' resumes it when the join looks again, ${formatWhen(task.run_at_ms, nowMs)}, and the join returns the children's rows.`;
    return {
      ...base,
      atMs: task.run_at_ms,
      summary:
        `Parked on join '${step.name}' (no worker holds it, no attempt is used), ${after}: ` +
        `${count === 1 ? "the child task it joins has" : `all ${count} child tasks it joins have`} finished, so the join is satisfied.${resume}`,
    };
  }
  if (step.kind === "wait" && evidence.messageArrived === true) {
    const message = String(step.waitingFor);
    const resume = isDue
      ? ` It is due now: a worker with a handler for '${task.name}' resumes it from the top, recorded steps replaying, and the wait returns the message's payload.`
      : ` A worker with a handler for '${task.name}' resumes it once it is due, ${formatWhen(task.run_at_ms, nowMs)}, and the wait returns the message's payload.`;
    return {
      ...base,
      atMs: task.run_at_ms,
      summary:
        `Parked on wait '${step.name}' (no worker holds it, no attempt is used), ${after}: the message '${message}' has arrived, so the wait is satisfied ` +
        `and the task waits only for a worker to resume it (sending '${message}' again would store a second message, kept for a later wait of that name).${resume}`,
    };
  }
  return {
    ...base,
    atMs: step.wakeAtMs !== null && step.wakeAtMs < PARK_FOREVER_AT_MS ? step.wakeAtMs : null,
    summary: `Parked (no worker holds it, no attempt is used): ${step.kind === "sleep" ? "sleeping" : "waiting"} for ${describeStepWait(step, nowMs, { ...evidence, due: isDue })}, ${after}.${due}`,
  };
}
