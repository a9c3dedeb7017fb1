/**
 * The wait loop of protocol v1 §7, written once for `client.wait`,
 * `client.waitByKey`, `client.call` and a worker's `ctx.wait`: poll a task's
 * status until it is terminal, read the full row only when it is (or on the
 * timeout beat), and sleep between polls on the store's `taskDoneWake` so a
 * backend with push signals ends the sleep early.
 *
 * Pure in the protocol's sense: the loop starts no timer of its own. It
 * sleeps through the store (`taskDoneWake`) or an injected `sleep`, and reads
 * an injected clock.
 */
import { describe } from "./describe.js";
import { CairnQError, InvalidArgument, TaskTimeout } from "./errors.js";
import type { TaskGroupInfo } from "./groups.js";
import { hasGroupReads } from "./groups.js";
import { requireName } from "./inputs.js";
import { isTerminal } from "./statuses.js";
import type { TaskStepStore } from "./step-store.js";
import type { StepRecord } from "./steps.js";
import { messageArrived, PARK_FOREVER_AT_MS, parkedOn } from "./steps.js";
import type { TaskStore } from "./store.js";
import type { Task, TaskRef } from "./task.js";

/** Options of a wait (`wait`, `waitByKey`, `ctx.wait`). */
export interface WaitOptions {
  /** Give up with `TaskTimeout` after this long. Integer ≥ 0. @default 30000 */
  timeoutMs?: number | undefined;
  /** The first interval between status polls. Integer ≥ 1. @default 100 */
  pollMs?: number | undefined;
  /**
   * The interval grows by half each poll (100, 150, 225, 337, 500, …) up to
   * this. Integer ≥ `pollMs`. @default 500, or `pollMs` when that is larger
   */
  maxPollMs?: number | undefined;
  /**
   * Aborts the wait: it rejects with `signal.reason` (the task is unaffected).
   * @default undefined (in a handler's `ctx.wait`: the context's signal)
   */
  signal?: AbortSignal | undefined;
}

/**
 * Every key of {@link WaitOptions}, for the unknown-key checks of `client.wait` and `ctx.wait` (a misspelt
 * option would otherwise be dropped and the wait last its default 30 s). A record's keys, so an option added
 * to the interface cannot be left out.
 */
export const WAIT_OPTION_KEYS: readonly (keyof WaitOptions)[] = Object.freeze(
  Object.keys({ timeoutMs: true, pollMs: true, maxPollMs: true, signal: true } satisfies Record<keyof WaitOptions, true>) as (keyof WaitOptions)[],
);

/** Default of {@link WaitOptions.timeoutMs} (§7). */
export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;
/** Default of {@link WaitOptions.pollMs} (§7). */
export const DEFAULT_POLL_MS = 100;
/** Default of {@link WaitOptions.maxPollMs} (§7). */
export const DEFAULT_MAX_POLL_MS = 500;

/** The §7 wait defaults in one object. */
export const WAIT_DEFAULTS: Readonly<{ timeoutMs: number; pollMs: number; maxPollMs: number }> = Object.freeze({
  timeoutMs: DEFAULT_WAIT_TIMEOUT_MS,
  pollMs: DEFAULT_POLL_MS,
  maxPollMs: DEFAULT_MAX_POLL_MS,
});

/**
 * What to wait for: a task id, or a business key re-resolved on every poll.
 *
 * `known` (by id only) is the task's status as the caller saw it a moment
 * ago — `call` passes the row its submit returned — and stands in for the
 * first poll's status probe, which would only read it again. Pass it only
 * when no push `done` signal for the task can have gone unheard since (the
 * wait hears signals from the moment it starts): otherwise the wait sleeps
 * until its first interval ends instead of reading the terminal row at once.
 */
export type WaitTarget =
  | { readonly id: string; readonly key?: undefined; readonly known?: TaskRef | undefined }
  | { readonly key: string; readonly id?: undefined; readonly known?: undefined };

/** {@link WaitOptions} with defaults applied. */
export interface ResolvedWaitOptions {
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly maxPollMs: number;
  readonly signal: AbortSignal | undefined;
}

/** What a wait runs on besides the store; inject them to pin time in tests. */
export interface WaitDeps {
  /**
   * Sleeps `ms`, resolving early (never rejecting) when `signal` aborts. Used
   * only while a by-key wait finds no task (every other sleep is the store's
   * `taskDoneWake`), so it is required for by-key waits.
   */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  /** A monotonic clock in ms for the deadline, which must not move with the wall clock. @default performance.now() */
  now?: (() => number) | undefined;
  /** The wall clock in epoch ms, to say when a delayed task runs next in a timeout's message. @default Date.now() */
  wallNow?: (() => number) | undefined;
}

/**
 * The interval after `current` (§7): `min(max, max(current + 1, floor(current × 1.5)))`,
 * so 100 → 150 → 225 → 337 → 500 with the defaults.
 *
 * @example
 * ```ts
 * nextPollInterval(100, 500); // 150
 * ```
 */
export function nextPollInterval(current: number, max: number): number {
  return Math.min(max, Math.max(current + 1, Math.floor(current * 1.5)));
}

function intOption(value: unknown, argument: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new InvalidArgument(argument, `${argument} must be an integer ≥ ${min} (milliseconds), got ${describe(value)}`);
  }
  return value;
}

/**
 * Validates wait options and applies the §7 defaults.
 *
 * @param timeoutArgument - The option name the caller used for the timeout
 *   (`call` spells it `waitTimeoutMs`), so an error names what was passed.
 * @throws InvalidArgument naming the option.
 * @example
 * ```ts
 * resolveWaitOptions({ pollMs: 800 }); // { timeoutMs: 30000, pollMs: 800, maxPollMs: 800, signal: undefined }
 * ```
 */
export function resolveWaitOptions(
  options: { timeoutMs?: unknown; pollMs?: unknown; maxPollMs?: unknown; signal?: unknown },
  timeoutArgument = "timeoutMs",
): ResolvedWaitOptions {
  const timeoutMs = intOption(options.timeoutMs, timeoutArgument, DEFAULT_WAIT_TIMEOUT_MS, 0);
  const pollMs = intOption(options.pollMs, "pollMs", DEFAULT_POLL_MS, 1);
  const maxPollMs = intOption(options.maxPollMs, "maxPollMs", Math.max(DEFAULT_MAX_POLL_MS, pollMs), 1);
  if (maxPollMs < pollMs) {
    throw new InvalidArgument("maxPollMs", `maxPollMs (${maxPollMs}) must be at least pollMs (${pollMs}): the poll interval only grows`);
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgument("signal", "signal must be an AbortSignal (e.g. AbortSignal.timeout(5000)) or undefined");
  }
  return { timeoutMs, pollMs, maxPollMs, signal };
}

/**
 * Polls until the task is terminal and returns its full row, whatever the
 * terminal status (§7):
 *
 * 1. probe `getStatus(id)` (by key: `getStatusByKey(key)`, re-resolved every
 *    poll, so a `replace` is followed and a key with no task yet is awaited);
 *    after a push `done` signal for the awaited id (`store.subscribe`), the
 *    poll reads the full row instead, which is step 2's read done at once;
 *    the first poll of a wait given `target.known` takes that status as its
 *    probe's answer;
 * 2. if the probe is terminal, or on the timeout beat, read the full row;
 *    a terminal row is returned (a missing or live one — purged, or the key
 *    repointed since the probe — is not finished);
 * 3. past the deadline, throw `TaskTimeout` carrying the last row and a
 *    message naming where the task was stuck ({@link describeTimeout});
 * 4. sleep `min(interval, remaining)` on `taskDoneWake` (the probed id, else
 *    the awaited id; a by-key wait that resolves to nothing sleeps on
 *    `deps.sleep`), then grow the interval ({@link nextPollInterval}); a wait
 *    by id whose wake resolved with the awaited task's terminal row (a store
 *    whose wake read it, `TaskStore.taskDoneWake`) returns that row.
 *
 * A read that fails with an error that is not a `CairnQError` (a connection
 * lost or refused, a server restarting: the store contract's transient
 * failures, which a worker also retries) does not end the wait: its reads
 * are only polls, so the beat counts as "not finished yet", sleeps as in
 * step 4 (bounded by `maxPollMs` and the deadline, and ended by `signal`) and
 * reads again. At the deadline the wait throws its `TaskTimeout` as usual,
 * with the last such error as `cause`; when the read at the deadline itself
 * failed, `task` is `null` and the message says the read failed rather than
 * that no task was found. A `CairnQError` (a closed store, another protocol
 * major, …) still ends the wait at once, unchanged.
 *
 * The wait holds nothing that keeps a process alive: a caller that awaits it
 * at the top of a script, on a store whose sleeps are unref'd, holds its own
 * handle.
 *
 * @throws InvalidArgument for bad options, an empty id or key, or a by-key wait without `deps.sleep`.
 * @throws TaskTimeout at the deadline; the task itself is unaffected.
 * @throws the signal's reason when `signal` aborts.
 * @throws a `CairnQError` a read rejected with (a closed store, …), as the store raised it.
 * @example
 * ```ts
 * const row = await waitForTask(store, { id }, { timeoutMs: 10_000 });
 * const byKey = await waitForTask(store, { key: "order-7" }, {}, { sleep });
 * ```
 */
export async function waitForTask(store: TaskStore, target: WaitTarget, options: WaitOptions = {}, deps: WaitDeps = {}): Promise<Task> {
  const { timeoutMs, pollMs, maxPollMs, signal } = resolveWaitOptions(options);
  const byKey = target.key !== undefined;
  const awaited = byKey ? requireName(target.key, "key") : requireName(target.id, "id");
  const key = byKey ? awaited : null;
  const sleep = deps.sleep;
  if (byKey && sleep === undefined) {
    throw new InvalidArgument("sleep", "a wait by key needs deps.sleep: it sleeps on its own while the key points at no task");
  }
  const now = deps.now ?? (() => performance.now());
  signal?.throwIfAborted();
  const deadline = now() + timeoutMs;
  let interval = pollMs;
  // A push `done` signal for the awaited id (§9) says the task reached a terminal status: the next poll
  // then reads the full row at once, instead of a status probe followed by the full read. Only an
  // accelerator: the row read decides, exactly as after a probe (a non-terminal row keeps waiting).
  let doneSignaled = false;
  // The caller's fresh status of the task stands in for the first probe (see WaitTarget).
  let known = !byKey && target.known !== undefined && target.known.id === awaited ? target.known : null;
  const unsubscribe =
    byKey || typeof store.subscribe !== "function"
      ? () => {}
      : store.subscribe(
          (s) => {
            if (s.reason === "done" && s.taskId === awaited) doneSignaled = true;
          },
          ["done"],
        );
  // The last transient read failure of this wait (see above), the cause of its TaskTimeout; and the last id a
  // by-key wait resolved, which names its TaskTimeout when the read at the deadline failed.
  let failure: { readonly error: unknown } | null = null;
  let lastId: string | null = null;
  try {
    for (;;) {
      let row: Task | null = null;
      let ref: TaskRef | null = null;
      let remaining: number;
      let failed: { readonly error: unknown } | null = null;
      const fullRead = doneSignaled;
      try {
        if (fullRead) {
          doneSignaled = false;
          row = await store.get(awaited);
          ref = row === null ? null : { id: row.id, status: row.status };
        } else if (known !== null) {
          ref = known;
          known = null;
        } else {
          ref = byKey ? await store.getStatusByKey(awaited) : await store.getStatus(awaited);
        }
        if (ref !== null) lastId = ref.id;
        remaining = deadline - now();
        if (!fullRead && ref !== null && (isTerminal(ref) || remaining <= 0)) {
          row = byKey ? await store.getByKey(awaited) : await store.get(awaited);
        }
      } catch (error) {
        // A CairnQError is the store's verdict, which reading again cannot change (a closed store, another
        // protocol major, a refused argument): it ends the wait. Anything else is transient, as for a worker.
        if (error instanceof CairnQError) throw error;
        signal?.throwIfAborted();
        failed = failure = { error };
        remaining = deadline - now();
      }
      if (row !== null && isTerminal(row)) return row;
      if (remaining <= 0) {
        const nowMs = (deps.wallNow ?? Date.now)();
        const evidence = row !== null && row.status === "queued" ? await queuedEvidence(store, row, nowMs) : null;
        const context = { id: byKey ? null : awaited, key, task: row, timeoutMs, nowMs, ...evidence };
        const message = describeTimeout(failed === null ? context : { ...context, readFailure: { error: failed.error, status: ref } });
        const taskId = ref?.id ?? (failed === null ? null : lastId) ?? awaited;
        throw new TaskTimeout(taskId, key, row, failure === null ? { message } : { message, cause: failure.error });
      }
      // A done signal that arrived during the reads above: read again at once rather than sleep through it.
      if (!doneSignaled) {
        const sleepMs = Math.ceil(Math.min(interval, remaining));
        const wakeId = ref?.id ?? (byKey ? null : awaited);
        if (wakeId !== null) {
          // A wake that read the task (see TaskStore.taskDoneWake) hands back the terminal row it read during this
          // sleep: the read a probe and a full read would have made. A wait by key re-resolves its key instead.
          const woke = await store.taskDoneWake(wakeId, sleepMs, signal);
          if (!byKey && woke !== undefined && woke.id === awaited && isTerminal(woke)) return woke;
        }
        // Only a by-key wait gets here, and it was checked to have a sleep.
        else await (sleep as (ms: number, signal?: AbortSignal) => Promise<void>)(sleepMs, signal);
      }
      signal?.throwIfAborted();
      interval = nextPollInterval(interval, maxPollMs);
    }
  } finally {
    unsubscribe();
  }
}

/**
 * What the store can add, at the deadline, about a queued task: the durable step it is parked on (a store
 * with `durableSteps`) and, for a wait, whether its message has arrived (a store with `hasMessage`), else,
 * once due, its group's counts (a store with group reads). Read-only, and evidence only: a read that fails is
 * left out, so the wait still ends with its `TaskTimeout`.
 */
async function queuedEvidence(store: TaskStore, task: Task, nowMs: number): Promise<Pick<TimeoutContext, "parked" | "group" | "journalEntries" | "messageArrived">> {
  try {
    let journalEntries: number | null = null;
    if (store.capabilities.durableSteps === true) {
      const steps = await (store as TaskStepStore).steps(task.id);
      const parked = parkedOn(steps);
      if (parked !== null) {
        const arrived = await messageArrived(store as TaskStepStore, task.id, parked).catch(() => undefined);
        return { parked, group: null, journalEntries: steps.length, messageArrived: arrived ?? null };
      }
      journalEntries = steps.length;
    }
    const group = task.run_at_ms <= nowMs && hasGroupReads(store) ? await store.taskGroup(task.id) : null;
    return { parked: null, group, journalEntries };
  } catch {
    return { parked: null, group: null, journalEntries: null };
  }
}

/** What a parked task waits for, in the words of a `TaskTimeout` message. */
function parkedWords(step: StepRecord, nowMs: number): string {
  const inMs = step.wakeAtMs === null || step.wakeAtMs >= PARK_FOREVER_AT_MS ? null : Math.max(0, step.wakeAtMs - nowMs);
  switch (step.kind) {
    case "sleep":
      return `sleeping in step '${step.name}'${inMs === null ? "" : `, waking in ${inMs}ms`}`;
    case "wait":
      return `waiting for a message '${String(step.waitingFor)}'${inMs === null ? ", with no timeout" : `, or its timeout in ${inMs}ms`}`;
    case "join": {
      const count = Array.isArray(step.waitingFor) ? step.waitingFor.length : 0;
      return `joining ${count} child task${count === 1 ? "" : "s"} (step '${step.name}')`;
    }
    case "step":
    case "spawn":
      return `waiting in step '${step.name}'`;
  }
}

/** What {@link describeTimeout} needs to know. */
export interface TimeoutContext {
  /** The awaited id (by-id waits). */
  readonly id: string | null;
  /** The awaited key (by-key waits). */
  readonly key: string | null;
  /** The row read on the timeout beat, if any. */
  readonly task: Task | null;
  readonly timeoutMs: number;
  /** Wall-clock now, to say when a delayed task runs next. */
  readonly nowMs: number;
  /** The durable step a queued task is parked on (its latest `waiting` journal entry), if read. @default null */
  readonly parked?: StepRecord | null;
  /** A due queued task's group and its counts, if it has one and the store reads groups. @default null */
  readonly group?: TaskGroupInfo | null;
  /**
   * For a task {@link parked} on a wait: whether its message has arrived (`TaskStepStore.hasMessage`), so it is
   * due and waits only for a worker to resume it; `null` when not read. @default null
   */
  readonly messageArrived?: boolean | null;
  /**
   * How many entries the task's durable-steps journal holds, if read. Any shows a worker ran it: a park gives
   * its attempt back, so a task resumed after a sleep reads attempt 0 without being "never claimed". @default null
   */
  readonly journalEntries?: number | null;
  /**
   * The read at the deadline failed with a transient error (not a `CairnQError`), so `task` is `null` for
   * want of a row, not because none was found: `error` is what the read threw, `status` what the status read
   * before it returned, if it succeeded. @default null
   */
  readonly readFailure?: { readonly error: unknown; readonly status: TaskRef | null } | null;
}

function lastError(task: Task): string {
  const error = task.error as { message?: unknown } | null;
  return typeof error === "object" && error !== null && typeof error.message === "string" ? ` (last error: ${error.message})` : "";
}

/**
 * The message of a wait's `TaskTimeout` (§7; the wording is not contract):
 * it names where the task was stuck — not found (by id or by key); parked on
 * a durable sleep, wait or join, or on a wait whose message has arrived (due,
 * waiting for a worker to resume it); delayed or retrying, with the time to its
 * next run; queued at its group's `groupConcurrency`; queued and never claimed (no
 * worker for that name, queue or database — or a worker's limit on the name,
 * which this read does not check: `explain` reads a full rate window), or due
 * to be resumed after a park (its journal shows a worker ran it); running
 * with a cancel requested; running. When the read at the deadline failed
 * (`readFailure`), it says so, with the error, instead of guessing a state.
 *
 * @example
 * ```ts
 * describeTimeout({ id, key: null, task: row, timeoutMs: 5000, nowMs: Date.now() });
 * // "task task_01… ('summarize') did not finish within 5000ms: queued and never claimed — is a worker running …?"
 * ```
 */
export function describeTimeout(context: TimeoutContext): string {
  const { key, task, timeoutMs, nowMs } = context;
  const failure = context.readFailure ?? null;
  if (task === null && failure !== null) return describeReadFailure(context, failure);
  if (task === null) {
    if (key !== null) {
      return (
        `no task with key '${key}' was found within ${timeoutMs}ms: nothing was submitted with that key yet, or its task was purged; ` +
        `submit it, and check that the submitter and this client use the same database`
      );
    }
    return (
      `task ${context.id ?? "?"} was not found within ${timeoutMs}ms: no row has that id; ` +
      `check the id, that it was submitted to this database, and that it was not purged`
    );
  }
  const subject = key === null ? `task ${task.id} ('${task.name}')` : `task ${task.id} ('${task.name}', key '${key}')`;
  const attempts = `attempt ${task.attempt}/${task.max_attempts}`;
  let state: string;
  switch (task.status) {
    case "queued": {
      const dueInMs = task.run_at_ms - nowMs;
      const parked = context.parked ?? null;
      const group = context.group ?? null;
      // Per-name limits are worker options; this read checks none of them: a message can name them, never say one is reached.
      const limits = `globalConcurrency, rateLimit${group === null ? "" : `, group ${group.group}'s groupRateLimit`}`;
      if (parked !== null && parked.kind === "wait" && context.messageArrived === true) {
        state =
          `parked on wait '${parked.name}', and its message '${String(parked.waitingFor)}' has arrived: it is due and waits for a worker to resume it (no need to send it again) — ` +
          `is a worker running with a handler for '${task.name}' on queue '${task.queue}' against this database? ` +
          `If one is, it is busy or held back by a limit it sets on '${task.name}' (${limits}), which this message does not check (explain tells a full rate window)`;
      } else if (parked !== null) {
        state = `parked, ${parkedWords(parked, nowMs)} — no worker holds it meanwhile, and a worker resumes it when that ends`;
      } else if (dueInMs > 0) {
        state =
          task.attempt === 0
            ? `delayed${key === null ? "" : " (or debounced: a debounced submit under its key pushes it out)"}, ${attempts}, next run in ${dueInMs}ms`
            : `retrying after ${attempts}${lastError(task)}, next run in ${dueInMs}ms`;
      } else if (group !== null && group.groupConcurrency !== null && group.running >= group.groupConcurrency) {
        state =
          `queued${task.attempt === 0 ? "" : ` again after ${attempts}${lastError(task)}`}, waiting on its group's limit: group ${group.group}: ` +
          `${group.running} of ${group.groupConcurrency} running (groupConcurrency of '${task.name}'), ${group.queued} queued — it is claimed when one of them ends`;
      } else if (task.attempt === 0 && (context.journalEntries ?? 0) > 0) {
        const entries = context.journalEntries as number;
        state =
          `queued to be resumed after it parked (a worker ran it: its journal holds ${entries} entr${entries === 1 ? "y" : "ies"}; a park gives its attempt back), ` +
          `due and not yet resumed — is a worker running with a handler for '${task.name}' on queue '${task.queue}' against this database? ` +
          `If one is, it is busy or held back by a limit it sets on '${task.name}' (${limits}), which this message does not check (explain tells a full rate window)`;
      } else if (task.attempt === 0) {
        state =
          `queued and never claimed — is a worker running with a handler for '${task.name}' on queue '${task.queue}' against this database? ` +
          `If one is, it is busy or held back by a limit it sets on '${task.name}' (${limits}), which this message does not check (explain tells a full rate window)`;
      } else {
        state =
          `queued again after ${attempts}${lastError(task)} and not yet re-claimed — ` +
          `are workers with a handler for '${task.name}' on queue '${task.queue}' running and free (and not held back by a limit they set on it: ${limits})?`;
      }
      break;
    }
    case "running": {
      const progress = `${task.progress === null ? "" : `, progress ${task.progress}`}${task.message === null ? "" : ` ("${task.message}")`}`;
      state =
        task.cancel_requested_at_ms !== null
          ? `running ${attempts} with a cancel requested — waiting for the handler to see the cancel (the task ends canceled when it settles or its lease expires)`
          : `running ${attempts} on ${task.worker_id ?? "a worker"}${progress} — the handler is still working; wait again with a longer timeout`;
      break;
    }
    case "succeeded":
    case "failed":
    case "canceled":
      state = `${task.status}, but the row was read only after the deadline`;
      break;
  }
  return `${subject} did not finish within ${timeoutMs}ms: ${state}`;
}

/** {@link describeTimeout}'s message when the read at the deadline failed: the task's state is unknown, not "not found". */
function describeReadFailure(context: TimeoutContext, failure: NonNullable<TimeoutContext["readFailure"]>): string {
  const { key, timeoutMs } = context;
  const error = failure.error instanceof Error ? failure.error.message : describe(failure.error);
  const status = failure.status;
  const id = status?.id ?? context.id;
  const subject = key === null ? `task ${id ?? "?"}` : `the task with key '${key}'${status === null ? "" : ` (task ${status.id})`}`;
  const read = status === null ? `reading it failed (${error})` : `its status read '${status.status}', then reading its row failed (${error})`;
  return (
    `${subject} did not finish within ${timeoutMs}ms as far as this wait could tell: at the deadline ${read}. ` +
    `The wait reads again after such a failure until its deadline, and the task itself is unaffected: check that the database is reachable, then wait for it again`
  );
}
