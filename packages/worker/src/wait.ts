/**
 * `ctx.wait`: the read-only polling wait of protocol v1 §7, kept small
 * because the worker must not depend on the client.
 */
import type { Task, TaskStore } from "@cairnq/protocol";
import { isTerminal, requireInt, TaskTimeout } from "@cairnq/protocol";
import { nextPollMs, WAIT_DEFAULTS } from "./defaults.js";

/** Options of `ctx.wait`. */
export interface WaitOptions {
  /** Give up with `TaskTimeout` after this long. @default 30000 */
  timeoutMs?: number;
  /** First poll interval; grows by half up to `maxPollMs`. @default 100 */
  pollMs?: number;
  /** @default 500 */
  maxPollMs?: number;
  /** Stops waiting (rejecting with the signal's reason). @default the context's signal */
  signal?: AbortSignal;
}

/**
 * Polls until task `id` is terminal and returns its row, whatever its status (§7).
 *
 * Each beat reads the status probe; a terminal status (or the deadline) is
 * confirmed with a full read. Sleeps race `taskDoneWake`, so a push backend
 * answers as soon as the task finishes.
 *
 * @throws `TaskTimeout` at the deadline (the task keeps running).
 */
export async function waitForTask(store: TaskStore, id: string, options: WaitOptions = {}): Promise<Task> {
  const timeoutMs = requireInt(options.timeoutMs ?? WAIT_DEFAULTS.timeoutMs, "timeoutMs", 0);
  const maxPollMs = requireInt(options.maxPollMs ?? WAIT_DEFAULTS.maxPollMs, "maxPollMs", 1);
  let interval = requireInt(options.pollMs ?? WAIT_DEFAULTS.pollMs, "pollMs", 1);
  const signal = options.signal;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
    const ref = await store.getStatus(id);
    const remaining = deadline - Date.now();
    let row: Task | null = null;
    if (ref !== null && (isTerminal(ref) || remaining <= 0)) {
      row = await store.get(ref.id);
      if (row !== null && isTerminal(row)) return row;
    }
    if (remaining <= 0) throw new TaskTimeout(ref?.id ?? id, null, row);
    await store.taskDoneWake(ref?.id ?? id, Math.min(interval, remaining), signal);
    interval = nextPollMs(interval, maxPollMs);
  }
}
