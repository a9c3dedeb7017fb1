/**
 * `watch` (protocol v1 §9): a stream of "re-read now" signals for dashboards
 * and UIs — the store's push signals where it has them, plus a timer so a
 * backend without push (SQLite) still refreshes.
 */
import type { Logger, StoreSignal, TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { logSafely } from "@cairnq/protocol/sdk";
import { checkOptions } from "@cairnq/runtime";

/**
 * A "re-read" signal: a task was queued on `queue`, task `taskId` reached a
 * terminal status, or the poll timer fired (anything may have changed).
 * Signals are hints, never data: delivery is not guaranteed, so re-read state
 * on each one rather than counting them.
 */
export type WatchSignal = StoreSignal | { readonly reason: "poll" };

/** Options of `watch`. */
export interface WatchOptions {
  /**
   * Report `queued` signals only for these queues; `done` signals are never
   * filtered (a task id says nothing about its queue). @default every queue
   */
  queues?: readonly string[] | undefined;
  /** Interval of the `poll` signal. Integer ≥ 1. @default 2000 */
  pollMs?: number;
}

const WATCH_KEYS = ["queues", "pollMs"] as const satisfies readonly (keyof WatchOptions)[];

/** Default of {@link WatchOptions.pollMs} (§9). */
export const DEFAULT_WATCH_POLL_MS = 2_000;

/** A function that ends a watch. Idempotent. */
export type StopWatching = () => void;

/**
 * Calls `onSignal` on every store signal (filtered by `queues`) and every
 * `pollMs`; returns the function that stops it.
 *
 * The timer is unref'd (a watch alone never holds the process open).
 * Exceptions and rejections from `onSignal` go to `logger.error` and do not
 * stop the watch.
 *
 * @throws InvalidArgument for a bad or unknown option.
 */
export function watchStore(
  store: TaskStore,
  options: WatchOptions,
  onSignal: (signal: WatchSignal) => void | Promise<void>,
  logger?: Logger,
): StopWatching {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgument("options", "watch needs an options object, e.g. watch({ queues: ['default'] }, onSignal)");
  }
  if (typeof onSignal !== "function") {
    throw new InvalidArgument("onSignal", "watch needs a callback: watch(options, (signal) => { ... })");
  }
  // An unknown key (`queue: ["emails"]`) would watch every queue.
  checkOptions(options, "watch", WATCH_KEYS);
  const pollMs = options.pollMs ?? DEFAULT_WATCH_POLL_MS;
  if (typeof pollMs !== "number" || !Number.isInteger(pollMs) || pollMs < 1) {
    throw new InvalidArgument("pollMs", `pollMs must be an integer ≥ 1 (milliseconds between poll signals), got ${String(pollMs)}`);
  }
  let queues: ReadonlySet<string> | null = null;
  if (options.queues !== undefined) {
    if (!Array.isArray(options.queues) || options.queues.some((q) => typeof q !== "string" || q === "")) {
      throw new InvalidArgument("queues", "queues must be an array of non-empty queue names, or omitted to watch every queue");
    }
    queues = new Set(options.queues);
  }

  let stopped = false;
  const deliver = (signal: WatchSignal): void => {
    if (stopped) return;
    try {
      const out = onSignal(signal);
      if (out instanceof Promise) out.catch((error: unknown) => report(error, signal));
    } catch (error) {
      report(error, signal);
    }
  };
  const report = (error: unknown, signal: WatchSignal): void => {
    logSafely(logger, "error", "watch callback failed", { error, reason: signal.reason });
  };

  const unsubscribe = store.subscribe((signal) => {
    if (signal.reason === "queued" && queues !== null && !queues.has(signal.queue)) return;
    deliver(signal);
  });
  const timer = setInterval(() => deliver({ reason: "poll" }), pollMs);
  timer.unref();

  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    unsubscribe();
  };
}
