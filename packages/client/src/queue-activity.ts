/**
 * The evidence `explain` weighs for a queued task that is due — is anything
 * claiming its queue? — gathered through the `TaskStore` contract alone: a
 * few bounded, indexed reads of the task's queue.
 */
import type { Task, TaskStore } from "@cairnq/protocol";

/** Running rows read per queue to count live leases. */
const RUNNING_SAMPLE = 500;
/** Newest finished rows read per terminal status to find the last finish. */
const FINISHED_SAMPLE = 20;

/** What the store tells about a task's queue: the evidence for "is anything claiming this queue?". */
export interface QueueActivity {
  /** Tasks of the task's queue running now under a live lease (a worker claimed and is renewing them). */
  readonly runningOnQueue: number;
  /** Of those, the tasks with the task's name. */
  readonly runningWithName: number;
  /** The newest `completed_at_ms` among tasks of the queue that a worker ran (so it claimed them), or `null` if none was seen. */
  readonly lastFinishedAtMs: number | null;
  /** Queued tasks of the queue (due or not), counting the task itself. */
  readonly queuedOnQueue: number;
}

/**
 * What the store can tell about `task`'s queue: tasks running under a live
 * lease (in total and with the task's name), when a worker last finished one
 * of its tasks, and how many are queued. Each read is bounded (a few hundred
 * rows at most) and served by the claim index (`queue, status, …`).
 */
export async function readQueueActivity(store: Pick<TaskStore, "list" | "stats">, task: Task, nowMs: number): Promise<QueueActivity> {
  const queue = task.queue;
  const [running, succeeded, failed, stats] = await Promise.all([
    store.list({ queue, status: "running", order: "id", limit: RUNNING_SAMPLE }),
    store.list({ queue, status: "succeeded", order: "id", limit: FINISHED_SAMPLE }),
    store.list({ queue, status: "failed", order: "id", limit: FINISHED_SAMPLE }),
    store.stats(queue),
  ]);
  const live = running.filter((t) => t.id !== task.id && t.lease_until_ms !== null && t.lease_until_ms > nowMs);
  let lastFinishedAtMs: number | null = null;
  for (const t of [...succeeded, ...failed]) {
    if (t.worker_id === null || t.completed_at_ms === null) continue;
    if (lastFinishedAtMs === null || t.completed_at_ms > lastFinishedAtMs) lastFinishedAtMs = t.completed_at_ms;
  }
  return {
    runningOnQueue: live.length,
    runningWithName: live.filter((t: Task) => t.name === task.name).length,
    lastFinishedAtMs,
    queuedOnQueue: stats[queue]?.queued ?? 0,
  };
}
