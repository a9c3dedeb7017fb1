/**
 * `explain`: one paragraph on why a task is where it is. The paragraph is a
 * pure function of the row, the clock and what the store can tell about the
 * task's queue ({@link explainTask}); {@link explain} reads both and calls
 * it. `cairnq.explain(id)`, the `cairnq explain` command and the dashboard's
 * task page all say the same thing this way.
 */
import type { FlowReadStore, GroupReadStore, RateWindows, StepRecord, Task, TaskGroupInfo, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { hasFlowReads, hasGroupReads, holdingRateWindow, InvalidArgument } from "@cairnq/protocol";
import { applyBranches, RECOVER } from "@cairnq/protocol/adapter";
import { parkedOn } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import { checkOptions, describeError, formatDuration, formatInstant, formatWhen, systemClock } from "@cairnq/runtime";
import type { QueueActivity } from "./queue-activity.js";
import { readQueueActivity } from "./queue-activity.js";
import { parkedVerdict, readParkedEvidence } from "./explain-steps.js";

/** Where a task stands, as a word a script can switch on. */
export type ExplainState =
  | "delayed"
  | "backing-off"
  | "waiting"
  /** Due, but its group is at `groupConcurrency`, or its group's `groupRateLimit` window is full. */
  | "group-limit"
  /** Due, but its name's `rateLimit` window is full. */
  | "rate-limit"
  | "unclaimed"
  | "running"
  | "lease-expired"
  | "cancel-requested"
  | "succeeded"
  | "failed"
  | "canceled"
  /** Queued but parked on a durable sleep, wait or join (see `explain-steps.ts`). */
  | "parked";

/** What `cairnq.explain(id)` resolves with: where the task stands, one paragraph on why, and the evidence. */
export interface Explanation {
  /** The task's id. */
  readonly taskId: string;
  /** Where the task stands. */
  readonly state: ExplainState;
  /** One paragraph, for people. */
  readonly summary: string;
  /**
   * The instant the state is about, or `null`: due at (`delayed`, `backing-off`; and when it became due for
   * `unclaimed`, `waiting`, `group-limit` and `rate-limit`, not when a limit lets it run: the summary says
   * that), lease until, cancel requested at, completed at, a parked task's wake-up (`null` without one).
   */
  readonly atMs: number | null;
  /** What the store told about the task's queue: read for a queued task only, else `null`. */
  readonly activity: QueueActivity | null;
  /** The row explained, as read. */
  readonly task: Task;
  /** The task's durable-steps journal (`cairnq.steps`), or `null` when the store has no durable steps. */
  readonly steps: readonly StepRecord[] | null;
}

/** Options of `cairnq.explain(id, options)`. */
export interface ExplainOptions {
  /** The clock the explanation is about, epoch ms: what counts as due, expired and recent. @default the client's clock: `Date.now()` unless `CairnQOptions.clock` */
  readonly nowMs?: number;
}

const EXPLAIN_OPTION_KEYS = ["nowMs"] as const satisfies readonly (keyof ExplainOptions)[];

/** Inputs of {@link explainTask} besides the row. */
export interface ExplainContext {
  /** The clock: epoch ms. */
  readonly nowMs: number;
  /** What the store can tell about the queue; without it a due queued task is explained without that evidence. @default null */
  readonly activity?: QueueActivity | null;
  /** How long ago a finished task still counts as "recent" claiming activity. @default 300000 (5 minutes) */
  readonly recentMs?: number;
  /** The task's group and its counts, from a store with group reads; `null` when it has no group. @default null */
  readonly group?: TaskGroupInfo | null;
  /**
   * The rate windows of the task's name and of its group, from a store with flow-control reads (`FlowReadStore.rateWindows`);
   * a window is `null` when no claim recorded its limit. @default null (neither)
   */
  readonly rateWindows?: RateWindows | null;
  /**
   * The task's durable-steps journal, from a store with durable steps: a journal shows a worker ran the task
   * even when its `attempt` reads 0 (a park gives its attempt back). @default null (not read)
   */
  readonly steps?: readonly StepRecord[] | null;
}

/** What {@link explainTask} says: the {@link Explanation} without the row and the evidence it was given. */
export type Verdict = Pick<Explanation, "taskId" | "state" | "summary" | "atMs">;

/** The default of {@link ExplainContext.recentMs}: a queue with a task finished this recently is being claimed. */
const RECENT_ACTIVITY_MS = 300_000;

function attempts(task: Task): string {
  return `attempt ${task.attempt} of ${task.max_attempts}`;
}

function quoted(text: string): string {
  return `'${text}'`;
}

function lastError(task: Task): string {
  const text = describeError(task.error);
  return text === null ? "" : ` The last error was ${text}.`;
}

function explainDue(task: Task, ctx: ExplainContext): Verdict {
  const { nowMs } = ctx;
  const activity = ctx.activity ?? null;
  const recentMs = ctx.recentMs ?? RECENT_ACTIVITY_MS;
  const requeued = task.attempt > 0 ? ` after ${attempts(task)}` : "";
  const base = { taskId: task.id, atMs: task.run_at_ms };
  const group = ctx.group ?? null;
  if (group !== null && group.groupConcurrency !== null && group.running >= group.groupConcurrency) {
    return {
      ...base,
      state: "group-limit",
      summary:
        `Queued${requeued} in queue ${quoted(task.queue)} and due since ${formatWhen(task.run_at_ms, nowMs)}, waiting on its group's limit: ` +
        `group ${group.group}: ${group.running} of ${group.groupConcurrency} running (groupConcurrency of ${quoted(task.name)}), ${group.queued} queued. ` +
        `It is claimed when one of them ends or its lease is recovered; other groups keep running meanwhile.` +
        lastError(task),
    };
  }
  const windows = ctx.rateWindows ?? null;
  // A group's window is about the task's group: without one, there is none to name.
  const rate = holdingRateWindow(windows?.name ?? null, group === null ? null : (windows?.group ?? null));
  if (rate !== null) {
    // The window's length as configured ("1.5 s", never "1 s"); when it has room again rounded up ("2.7 s" for
    // 2 670 ms, in ms below a second), so the text is never early.
    // Measured on the store's clock, which counted the window (the caller's nowMs may differ from it).
    const window = `${rate.window.claims} of ${rate.window.limit.max} claims in the current ${formatDuration(rate.window.limit.perMs, "exact")} window`;
    const room = `the window has room again in ${formatDuration(rate.window.roomAtMs - rate.window.readAtMs, "up")} (at ${formatInstant(rate.window.roomAtMs)})`;
    const summary =
      rate.of === "group"
        ? `waiting on its group's limit: group ${(group as TaskGroupInfo).group}: ${window} (groupRateLimit of ${quoted(task.name)}), ${(group as TaskGroupInfo).queued} queued; ${room}. ` +
          `Its group's next task (by priority, then the oldest) is claimed then; other groups keep running meanwhile.`
        : `waiting on its name's rate limit: ${quoted(task.name)}: ${window} (rateLimit of ${quoted(task.name)}); ${room}. ` +
          `A claim of ${quoted(task.name)} then takes the next of its tasks (by priority, then due time); other names keep running meanwhile.`;
    return {
      ...base,
      state: rate.of === "group" ? "group-limit" : "rate-limit",
      summary: `Queued${requeued} in queue ${quoted(task.queue)} and due since ${formatWhen(task.run_at_ms, nowMs)}, ${summary}` + lastError(task),
    };
  }
  const inGroup = group === null ? "" : ` It is in group ${group.group} (${group.running} running${group.groupConcurrency === null ? "" : ` of ${group.groupConcurrency}`}).`;
  const head = `Queued${requeued} in queue ${quoted(task.queue)} and due since ${formatWhen(task.run_at_ms, nowMs)}, waiting for a worker with a handler for ${quoted(task.name)} to claim it.${inGroup}`;
  if (activity === null) return { ...base, state: "waiting", summary: head + lastError(task) };
  const recent = activity.lastFinishedAtMs !== null && nowMs - activity.lastFinishedAtMs <= recentMs;
  if (activity.runningOnQueue === 0 && !recent) {
    const last =
      activity.lastFinishedAtMs === null ? "no finished task of that queue was found" : `the last one finished ${formatWhen(activity.lastFinishedAtMs, nowMs)}`;
    return {
      ...base,
      state: "unclaimed",
      summary:
        `${head} Nothing has claimed queue ${quoted(task.queue)} recently: no task of it is running under a live lease and ${last}. ` +
        `Is a worker running with a handler for ${quoted(task.name)} on queue ${quoted(task.queue)} against this database?` +
        lastError(task),
    };
  }
  const busy =
    activity.runningOnQueue > 0
      ? `${activity.runningOnQueue} task${activity.runningOnQueue === 1 ? "" : "s"} of the queue ${activity.runningOnQueue === 1 ? "is" : "are"} running now` +
        ` (${activity.runningWithName} named ${quoted(task.name)})`
      : `a task of the queue finished ${formatWhen(activity.lastFinishedAtMs ?? nowMs, nowMs)}`;
  const competition =
    activity.queuedOnQueue > 1 ? `; ${activity.queuedOnQueue} tasks are queued in it, claimed by priority (this one has ${task.priority}) then due time` : "";
  return {
    ...base,
    state: "waiting",
    summary: `${head} Workers are claiming the queue: ${busy}${competition}. ${heldBack(task, activity.runningWithName, group, windows)}` + lastError(task),
  };
}

/**
 * Why a due task of a queue that workers are claiming may still wait, as far as the database can tell: what
 * runs is recorded, and so are the rate limits claims enforced (within about a minute), with their windows (a full one is said
 * before this, `holdingRateWindow`; one read with room is no cause, so it is not named). A worker's
 * `globalConcurrency` is its own option and is not recorded, nor is a rate limit no claim has recorded yet (a
 * store without the reads, or a limit a worker set since its last claim): those are named as possibilities,
 * never as the cause.
 */
function heldBack(task: Task, runningWithName: number, group: TaskGroupInfo | null, windows: RateWindows | null): string {
  const name = quoted(task.name);
  const unrecorded = "the database records what runs and the rate windows claims counted, not every limit a worker sets, so it cannot tell";
  // The rate limits that may still hold it back: those without a recorded window (a recorded one has room here).
  const nameRate = (windows?.name ?? null) === null;
  const groupRate = group !== null && (windows?.group ?? null) === null;
  if (runningWithName > 0) {
    const limits = ["globalConcurrency", ...(nameRate ? ["rateLimit"] : [])].join(", ") + (groupRate ? `, or group ${group.group}'s groupRateLimit` : "");
    return (
      `${runningWithName} named ${name} ${runningWithName === 1 ? "is" : "are"} running, so a worker has a handler for it: ` +
      `the workers may be busy, or at a limit they set on ${name} (${limits}), and it is claimed when that lets it; ${unrecorded} which.`
    );
  }
  const handler = `If no worker has a handler for ${name}, it stays queued; check the workers' task names.`;
  if (!nameRate && !groupRate) return `None named ${name} is running, and the rate windows its claims recorded have room. ${handler}`;
  const by = nameRate ? `rateLimit${groupRate ? ` (or group ${group.group}'s groupRateLimit)` : ""}` : `group ${(group as TaskGroupInfo).group}'s groupRateLimit`;
  return (
    `None named ${name} is running: a worker that limits ${name} by ${by} may be at that limit until its window frees ` +
    `(claims count in it even after they end); ${unrecorded} whether it is. ${handler}`
  );
}

/**
 * Says in one paragraph why `task` is where it is: not due until T; backing
 * off after attempt n; queued with nothing claiming its queue recently;
 * running under worker W until T; lease expired and awaiting recovery;
 * cancel requested; finished (with the error envelope).
 *
 * Pure: the same row, clock and activity always give the same text, which
 * is what lets the tests pin every state without a database.
 *
 * @example
 * ```ts
 * explainTask(task, { nowMs: Date.now(), activity: await readQueueActivity(store, task, Date.now()) }).summary;
 * ```
 */
export function explainTask(task: Task, ctx: ExplainContext): Verdict {
  const { nowMs } = ctx;
  const worker = task.worker_id === null ? "no worker" : `worker ${task.worker_id}`;
  switch (task.status) {
    case "queued": {
      if (task.run_at_ms > nowMs) {
        if (task.attempt > 0 && task.error !== null) {
          return {
            taskId: task.id,
            state: "backing-off",
            atMs: task.run_at_ms,
            summary:
              `Backing off after ${attempts(task)} failed: it is queued again and becomes due ${formatWhen(task.run_at_ms, nowMs)}, ` +
              `when a worker on queue ${quoted(task.queue)} may claim it for attempt ${task.attempt + 1}.${lastError(task)}`,
          };
        }
        return {
          taskId: task.id,
          state: "delayed",
          atMs: task.run_at_ms,
          summary:
            `Not due until ${formatWhen(task.run_at_ms, nowMs)}: it was submitted with a delay (or debounced: each debounced submit under its key pushes it out; or retried into one), and no worker claims it before then. ` +
            `Then a worker on queue ${quoted(task.queue)} with a handler for ${quoted(task.name)} can claim it.`,
        };
      }
      return explainDue(task, ctx);
    }
    case "running": {
      const lease = task.lease_until_ms ?? nowMs;
      const progress =
        task.progress === null && task.message === null
          ? ""
          : ` Last progress: ${task.progress === null ? "" : `${Math.round(task.progress * 100)}%`}${task.progress !== null && task.message !== null ? " " : ""}${task.message === null ? "" : JSON.stringify(task.message)}.`;
      if (lease <= nowMs) {
        // Which way recovery takes this row is the protocol's RECOVER rule (§5.10), not re-derived here.
        const { branch } = applyBranches(RECOVER.branches, task, {}, nowMs);
        const next =
          branch === "cancel"
            ? "ends canceled (a cancel was requested)"
            : branch === "requeue"
              ? `goes back to the queue for attempt ${task.attempt + 1}`
              : "ends failed with lease_expired (no attempts left)";
        return {
          taskId: task.id,
          state: "lease-expired",
          atMs: lease,
          summary:
            `The lease of ${worker} expired ${formatWhen(lease, nowMs)} (${attempts(task)}): the worker stopped renewing it — it crashed, was killed, or its event loop is blocked. ` +
            `The task awaits recovery, which the next claim by any worker of this database performs; it then ${next}.${progress}`,
        };
      }
      if (task.cancel_requested_at_ms !== null) {
        return {
          taskId: task.id,
          state: "cancel-requested",
          atMs: task.cancel_requested_at_ms,
          summary:
            `Cancel requested ${formatWhen(task.cancel_requested_at_ms, nowMs)} while running under ${worker} (${attempts(task)}). ` +
            `The handler learns it at its next heartbeat (its signal aborts) and the task ends canceled when the handler returns or its lease ` +
            `(held until ${formatWhen(lease, nowMs)}) expires.${progress}`,
        };
      }
      return {
        taskId: task.id,
        state: "running",
        atMs: lease,
        summary:
          `Running under ${worker} (${attempts(task)}); its lease is held until ${formatWhen(lease, nowMs)} and renewed by heartbeats while the handler runs ` +
          `(last heard from ${formatDuration(Math.max(0, nowMs - task.updated_at_ms))} ago).${progress}`,
      };
    }
    case "succeeded": {
      const done = task.completed_at_ms ?? task.updated_at_ms;
      return {
        taskId: task.id,
        state: "succeeded",
        atMs: done,
        summary: `Finished: succeeded ${formatWhen(done, nowMs)} on ${attempts(task)} under ${worker}, ${formatDuration(done - task.created_at_ms)} after it was submitted.`,
      };
    }
    case "failed": {
      const done = task.completed_at_ms ?? task.updated_at_ms;
      const why = describeError(task.error) ?? "no error envelope";
      const cause = task.attempt >= task.max_attempts ? "with no attempts left" : "by a non-retryable failure";
      return {
        taskId: task.id,
        state: "failed",
        atMs: done,
        summary: `Finished: failed ${formatWhen(done, nowMs)} on ${attempts(task)} under ${worker}, ${cause}: ${why}. Retrying it requeues it for one more attempt.`,
      };
    }
    case "canceled": {
      const done = task.completed_at_ms ?? task.updated_at_ms;
      const how = task.cancel_requested_at_ms !== null ? `while running under ${worker} (cancel requested ${formatWhen(task.cancel_requested_at_ms, nowMs)})` : canceledQueued(task, ctx.steps ?? null);
      return {
        taskId: task.id,
        state: "canceled",
        atMs: done,
        summary: `Finished: canceled ${formatWhen(done, nowMs)} ${how}, on ${attempts(task)}.${lastError(task)} Retrying it requeues it.`,
      };
    }
  }
}

/**
 * Where a task canceled while queued stood. Its `attempt` alone cannot say whether a worker ever ran it: a
 * park gives its attempt back, so a task canceled while parked on its first run reads attempt 0 too. Its
 * journal can: any entry was written by a worker that ran it.
 */
function canceledQueued(task: Task, steps: readonly StepRecord[] | null): string {
  const parked = steps === null ? null : parkedOn(steps);
  if (parked !== null) return `while parked on ${parked.kind} '${parked.name}' (a worker ran it and it parked there; a park gives its attempt back)`;
  const ran = steps !== null && steps.length > 0;
  if (task.attempt === 0) return ran ? "while queued to be resumed (a worker ran it and recorded steps; a park gives its attempt back)" : "while queued, before any worker claimed it";
  // An attempt after the first that recorded steps may have failed (a retry was due) or parked and been woken (a resume was due).
  return ran ? "while queued between attempts or to be resumed after a park (a worker ran it and recorded steps)" : "while queued between attempts";
}

/**
 * Reads task `id` and, when it is queued, its queue's activity, and explains
 * it at `options.nowMs`; `null` when there is no such task. What
 * `cairnq.explain(id)` runs.
 *
 * @example
 * ```ts
 * const explanation = await explain(store, id, { nowMs: Date.now() });
 * ```
 */
export async function explain(
  store: Pick<TaskStore, "get" | "getStatus" | "list" | "stats"> & { readonly capabilities?: TaskStore["capabilities"] },
  id: string,
  options?: ExplainOptions,
  clock: Pick<RuntimeClock, "now"> = systemClock,
): Promise<Explanation | null> {
  const { nowMs = clock.now() } = checkOptions(options, "explain", EXPLAIN_OPTION_KEYS) as ExplainOptions;
  if (!Number.isSafeInteger(nowMs)) throw new InvalidArgument("nowMs", `explain's nowMs must be an integer epoch ms, got ${String(nowMs)}`);
  const task = await store.get(id);
  if (task === null) return null;
  const steps = store.capabilities?.durableSteps === true ? await (store as TaskStepStore).steps(id) : null;
  const parkedStep = steps === null || task.status !== "queued" ? null : parkedOn(steps);
  const evidence = parkedStep === null ? {} : await readParkedEvidence(store, id, parkedStep);
  const parked = steps === null ? null : parkedVerdict(task, steps, nowMs, evidence);
  if (parked !== null) return { ...parked, activity: null, task, steps };
  const activity = task.status === "queued" ? await readQueueActivity(store, task, nowMs) : null;
  const due = task.status === "queued" && task.run_at_ms <= nowMs;
  const group = due && hasGroupReads(store as TaskStore) ? await (store as TaskStore & GroupReadStore).taskGroup(task.id) : null;
  const rateWindows = due && hasFlowReads(store as TaskStore) ? await (store as TaskStore & FlowReadStore).rateWindows(task.name, group?.group ?? null) : null;
  return { ...explainTask(task, { nowMs, activity, group, rateWindows, steps }), activity, task, steps };
}
