import type { StoreSignal, StoreSignalReason, Task } from "@cairnq/protocol";
import { sleep } from "@cairnq/runtime";

/**
 * Push wakeups (§9): an accelerator only, correctness never depends on them.
 * Backends without a push channel sleep for the whole timeout.
 */
export interface Wakeups {
  /** Resolves after `timeoutMs`, or earlier on a `queued` signal for one of `queues`, or when `signal` aborts. */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * Resolves after `timeoutMs`, or earlier on a `done` signal for `taskId`, or when `signal` aborts; a
   * wake-up that read the task may resolve with the terminal row it read (see `TaskStore.taskDoneWake`).
   */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void>;
  /** Subscribes to push signals of `reasons` (default both); returns the unsubscribe function. */
  subscribe(listener: (signal: StoreSignal) => void, reasons?: readonly StoreSignalReason[]): () => void;
}

/**
 * The no-push default: every wake is a plain sleep (unref'd, so an idle
 * store never holds the process open; chained past 2^31 ms) and `subscribe`
 * never calls its listener.
 */
export class SleepWakeups implements Wakeups {
  claimWake(_queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return sleep(timeoutMs, { signal, unref: true });
  }

  taskDoneWake(_taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return sleep(timeoutMs, { signal, unref: true });
  }

  subscribe(_listener: (signal: StoreSignal) => void): () => void {
    return () => {};
  }
}
