/**
 * The client's side of the §7 wait loop, which lives in `@cairnq/protocol`:
 * what only a process can supply — its sleep, its clock, and a handle that
 * keeps the process alive while someone awaits the wait.
 */
import type { Task, TaskStore, WaitOptions } from "@cairnq/protocol";
import type { WaitTarget } from "@cairnq/protocol/sdk";
import { waitForTask as protocolWaitForTask } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import { keepAlive } from "@cairnq/runtime";

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
