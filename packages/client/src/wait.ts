/**
 * The client's side of the §7 wait loop, which lives in `@cairnq/protocol`:
 * what only a process can supply — its sleep, its clock, and a handle that
 * keeps the process alive while someone awaits the wait.
 */
import type { Task, TaskStore, WaitOptions } from "@cairnq/protocol";
import { InvalidArgument, TaskTimeout } from "@cairnq/protocol";
import type { WaitTarget } from "@cairnq/protocol/sdk";
import { waitForTask as protocolWaitForTask } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import { keepAlive } from "@cairnq/runtime";
import { WaitInterrupted } from "./client-errors.js";

/**
 * Runs the protocol's wait loop ({@link protocolWaitForTask}) on the client's
 * clock — a ref'd sleep, the monotonic reading for the deadline — holding the
 * process open until it settles.
 *
 * @throws whatever the loop throws: InvalidArgument, TaskTimeout, the signal's reason.
 */
export async function waitForTask(store: TaskStore, target: WaitTarget, options: WaitOptions, clock: RuntimeClock): Promise<Task> {
  // Someone awaits this wait, so it must keep Node alive the way any pending I/O would. Stores may
  // sleep on unref'd timers (first-party stores do, so that idle workers never pin a process);
  // without this handle `await client.wait(id)` at the top of a script exits the process mid-wait
  // (exit code 13, unsettled top-level await).
  const hold = keepAlive();
  try {
    return await protocolWaitForTask(store, target, options, {
      sleep: (ms, signal) => clock.sleep(ms, { signal }),
      now: () => clock.monotonicMs(),
      wallNow: () => clock.now(),
    });
  } finally {
    hold.release();
  }
}

/** Which wait {@link cutShortByClose} reports: the method, and the task (or key) it waited for. */
export interface WaitSubject {
  readonly method: "call" | "wait" | "waitByKey";
  readonly taskId: string | null;
  readonly key: string | null;
  readonly signal?: AbortSignal | undefined;
}

/**
 * `waiting`, except that once `close()` on the client has begun (`closing()`), its failure is reported
 * as a {@link WaitInterrupted} naming the task: the store's own error would be its "store is closed, so
 * the call was not run", untrue of a task already submitted. A timeout, a refused argument and the
 * signal's reason are the caller's outcomes, not the close's, and pass through.
 */
export async function cutShortByClose<T>(waiting: Promise<T>, closing: () => boolean, subject: WaitSubject): Promise<T> {
  try {
    return await waiting;
  } catch (err) {
    const aborted = subject.signal?.aborted === true && err === subject.signal.reason;
    if (!closing() || aborted || err instanceof TaskTimeout || err instanceof InvalidArgument) throw err;
    throw new WaitInterrupted(subject.method, subject.taskId, subject.key, err);
  }
}
