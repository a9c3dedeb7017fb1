import type { StoreSignal } from "@cairnq/protocol";

/**
 * Push wakeups (§9): an accelerator only, correctness never depends on them.
 * Backends without a push channel sleep for the whole timeout.
 */
export interface Wakeups {
  /** Resolves after `timeoutMs`, or earlier on a `queued` signal for one of `queues`, or when `signal` aborts. */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Resolves after `timeoutMs`, or earlier on a `done` signal for `taskId`, or when `signal` aborts. */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Subscribes to push signals; returns the unsubscribe function. */
  subscribe(listener: (signal: StoreSignal) => void): () => void;
}

/**
 * Sleeps `ms` without holding the process open (the timer is unref'd);
 * resolves early, never rejects, when `signal` aborts.
 *
 * @example
 * await sleep(500, controller.signal);
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true || !(ms > 0)) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    timer.unref();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * The no-push default: every wake is a plain sleep and `subscribe` never
 * calls its listener.
 */
export class SleepWakeups implements Wakeups {
  claimWake(_queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return sleep(timeoutMs, signal);
  }

  taskDoneWake(_taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return sleep(timeoutMs, signal);
  }

  subscribe(_listener: (signal: StoreSignal) => void): () => void {
    return () => {};
  }
}
