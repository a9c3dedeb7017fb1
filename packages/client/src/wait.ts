/**
 * The wait loop of protocol v1 §7: poll a task's status until it is terminal,
 * reading the full row only when it is (or on the timeout beat), and sleeping
 * between polls on the store's `taskDoneWake` so a backend with push signals
 * ends the sleep early.
 */
import type { Task, TaskRef, TaskStore } from "@cairnq/protocol";
import { InvalidArgument, isTerminal, TaskTimeout } from "@cairnq/protocol";
import { monotonicMs, sleep } from "./sleep.js";

/** Options of `wait` / `waitByKey`. */
export interface WaitOptions {
  /** Give up with `TaskTimeout` after this long. Integer ≥ 0. @default 30000 */
  timeoutMs?: number;
  /** The first interval between status polls. Integer ≥ 1. @default 100 */
  pollMs?: number;
  /**
   * The interval grows by half each poll (100, 150, 225, 337, 500, …) up to
   * this. Integer ≥ `pollMs`. @default 500, or `pollMs` when that is larger
   */
  maxPollMs?: number;
  /** Aborts the wait: it rejects with `signal.reason` (the task is unaffected). @default undefined */
  signal?: AbortSignal | undefined;
}

/** Default of {@link WaitOptions.timeoutMs} (§7). */
export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;
/** Default of {@link WaitOptions.pollMs} (§7). */
export const DEFAULT_POLL_MS = 100;
/** Default of {@link WaitOptions.maxPollMs} (§7). */
export const DEFAULT_MAX_POLL_MS = 500;

/** What to wait for: a task id, or a business key re-resolved on every poll. */
export type WaitTarget = { readonly id: string; readonly key?: undefined } | { readonly key: string; readonly id?: undefined };

/** {@link WaitOptions} with defaults applied. */
export interface ResolvedWaitOptions {
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly maxPollMs: number;
  readonly signal: AbortSignal | undefined;
}

/**
 * The interval after `current` (§7): `min(max, max(current + 1, floor(current × 1.5)))`,
 * so 100 → 150 → 225 → 337 → 500 with the defaults.
 */
export function nextPollInterval(current: number, max: number): number {
  return Math.min(max, Math.max(current + 1, Math.floor(current * 1.5)));
}

function intOption(value: unknown, argument: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    const shown = typeof value === "string" ? JSON.stringify(value) : typeof value === "number" ? String(value) : typeof value;
    throw new InvalidArgument(argument, `${argument} must be an integer ≥ ${min} (milliseconds), got ${shown}`);
  }
  return value;
}

/**
 * Validates wait options and applies the §7 defaults.
 *
 * @param timeoutArgument - The option name the caller used for the timeout
 *   (`call` spells it `waitTimeoutMs`), so an error names what was passed.
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
 * 2. if the probe is terminal, or on the timeout beat, read the full row;
 *    a terminal row is returned;
 * 3. past the deadline, throw `TaskTimeout` carrying the last row;
 * 4. sleep `min(interval, remaining)` on `taskDoneWake(ref.id)` (a plain sleep
 *    while a key resolves to nothing), then grow the interval.
 *
 * @throws TaskTimeout at the deadline; the task itself is unaffected.
 * @throws the signal's reason when `signal` aborts.
 */
export async function waitForTask(store: TaskStore, target: WaitTarget, options: ResolvedWaitOptions): Promise<Task> {
  options.signal?.throwIfAborted();
  // Someone awaits this wait, so it must keep Node alive the way any pending I/O would. Stores may
  // sleep on unref'd timers (first-party stores do, so that idle workers never pin a process);
  // without this handle `await client.wait(id)` at the top of a script exits the process mid-wait
  // (exit code 13, unsettled top-level await).
  const keepAlive = setInterval(() => {}, KEEP_ALIVE_MS);
  try {
    return await pollUntilTerminal(store, target, options);
  } finally {
    clearInterval(keepAlive);
  }
}

/** Period of the keep-alive handle: it never needs to fire. */
const KEEP_ALIVE_MS = 2 ** 30;

async function pollUntilTerminal(store: TaskStore, target: WaitTarget, options: ResolvedWaitOptions): Promise<Task> {
  const { timeoutMs, maxPollMs, signal } = options;
  const deadline = monotonicMs() + timeoutMs;
  let interval = options.pollMs;
  for (;;) {
    const ref: TaskRef | null = target.key !== undefined ? await store.getStatusByKey(target.key) : await store.getStatus(target.id);
    const remaining = deadline - monotonicMs();
    let row: Task | null = null;
    if (ref !== null && (isTerminal(ref) || remaining <= 0)) {
      row = target.key !== undefined ? await store.getByKey(target.key) : await store.get(target.id);
      // A missing or live row (purged, or the key repointed since the probe) is not finished.
      if (row !== null && isTerminal(row)) return row;
    }
    if (remaining <= 0) {
      const key = target.key ?? null;
      const message = describeTimeout({ id: target.id ?? null, key, task: row, timeoutMs, nowMs: Date.now() });
      throw new TaskTimeout(ref?.id ?? target.id ?? (target.key as string), key, row, { message });
    }
    const sleepMs = Math.ceil(Math.min(interval, remaining));
    if (ref !== null) await store.taskDoneWake(ref.id, sleepMs, signal);
    else await sleep(sleepMs, signal);
    signal?.throwIfAborted();
    interval = nextPollInterval(interval, maxPollMs);
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
}

function lastError(task: Task): string {
  const error = task.error as { message?: unknown } | null;
  return typeof error === "object" && error !== null && typeof error.message === "string" ? ` (last error: ${error.message})` : "";
}

/**
 * Says where a task was stuck when a wait timed out (§7; the wording is not
 * contract): not found; queued and never claimed; delayed or retrying, with
 * the time to its next run; running with a cancel requested; running.
 */
export function describeTimeout(context: TimeoutContext): string {
  const { key, task, timeoutMs, nowMs } = context;
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
      if (dueInMs > 0) {
        state =
          task.attempt === 0
            ? `delayed, ${attempts}, next run in ${dueInMs}ms`
            : `retrying after ${attempts}${lastError(task)}, next run in ${dueInMs}ms`;
      } else if (task.attempt === 0) {
        state = `queued and never claimed — is a worker running with a handler for '${task.name}' on queue '${task.queue}' against this database?`;
      } else {
        state =
          `queued again after ${attempts}${lastError(task)} and not yet re-claimed — ` +
          `are workers with a handler for '${task.name}' on queue '${task.queue}' running and free?`;
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
