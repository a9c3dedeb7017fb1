/**
 * What ran: a test queue's record of every handler run of its workers, from
 * the workers' events — a run begins when a worker claims the task and ends
 * when that worker settles it or learns it lost it.
 */
import type { TaskStore } from "@cairnq/protocol";
import type { Worker } from "@cairnq/worker";

/**
 * How a run ended, as the queue sees the task afterwards:
 * - `"succeeded"`, `"failed"`, `"canceled"`: the run settled the task so;
 * - `"retrying"`: the run failed and the task is queued again, due after its backoff;
 * - `"lost"`: the worker no longer holds the task (its lease was lost, or
 *   another attempt took it over); the handler may still be running;
 * - `"requeued"`: the task went back to `queued` without the run writing a
 *   failure: parked (durable steps' `ctx.sleep`, where handlers can park), or
 *   recovered by a claim after its lease ran out and not yet taken again.
 */
export type RunOutcome = "succeeded" | "failed" | "retrying" | "canceled" | "lost" | "requeued";

/** One handler run that ended: a task, an attempt, a worker. */
export interface TaskRun {
  readonly taskId: string;
  readonly name: string;
  readonly queue: string;
  /** The attempt this run was (1 for the first). */
  readonly attempt: number;
  readonly workerId: string;
  readonly outcome: RunOutcome;
  /** The error envelope the run wrote (`"failed"` and `"retrying"`), else `null`. */
  readonly error: unknown;
  /** Virtual milliseconds from the run's start to its end. */
  readonly durationMs: number;
  /** When it ended, in virtual epoch milliseconds. */
  readonly endedAtMs: number;
}

/** A run that has not ended: its handler is still running (or waiting for a slot, with `prefetch`). */
export interface RunningTask {
  readonly taskId: string;
  readonly name: string;
  readonly queue: string;
  readonly attempt: number;
  readonly workerId: string;
  /** When the worker claimed it, in virtual epoch milliseconds. */
  readonly claimedAtMs: number;
}

/** Records the runs of the workers it watches. @internal */
export class RunLog {
  /** Every run that ended, in the order they ended. */
  readonly runs: TaskRun[] = [];
  readonly #running = new Map<string, RunningTask>();
  readonly #now: () => number;

  /** @param now - The virtual wall clock, for `claimedAtMs` and `endedAtMs`. */
  constructor(now: () => number) {
    this.#now = now;
  }

  /** Runs that began and have not ended, in claim order. */
  running(): RunningTask[] {
    return [...this.#running.values()];
  }

  /** Follows `worker`'s events from now on. */
  watch(worker: Worker): void {
    worker.on("task:claimed", (e) => {
      // Another attempt took the task over: whichever run held it before has lost it, whether or not its worker noticed.
      for (const run of this.#running.values()) {
        if (run.taskId === e.taskId && (run.attempt !== e.attempt || run.workerId !== e.workerId)) {
          this.#end(run.workerId, run.taskId, run.attempt, "lost", null, this.#now() - run.claimedAtMs);
        }
      }
      this.#running.set(runKey(e.workerId, e.taskId, e.attempt), {
        taskId: e.taskId,
        name: e.name,
        queue: e.queue,
        attempt: e.attempt,
        workerId: e.workerId,
        claimedAtMs: this.#now(),
      });
    });
    worker.on("task:succeeded", (e) => this.#end(e.workerId, e.taskId, e.attempt, "succeeded", null, e.durationMs));
    worker.on("task:canceled", (e) => this.#end(e.workerId, e.taskId, e.attempt, "canceled", null, e.durationMs));
    worker.on("task:parked", (e) => this.#end(e.workerId, e.taskId, e.attempt, "requeued", null, e.durationMs));
    worker.on("task:failed", (e) => this.#end(e.workerId, e.taskId, e.attempt, e.willRetry ? "retrying" : "failed", e.error, e.durationMs));
    worker.on("lease:lost", (e) => this.#end(e.workerId, e.taskId, e.attempt, "lost", null, e.durationMs));
  }

  /**
   * Ends the runs whose task moved on without an event saying so — parked,
   * or taken over after its lease ran out — by reading each running task's
   * row (through `store`, which must not be the watched view).
   */
  async reconcile(store: TaskStore): Promise<void> {
    for (const [key, run] of [...this.#running]) {
      const row = await store.get(run.taskId);
      if (row !== null && row.status === "running" && row.attempt === run.attempt && row.worker_id === run.workerId) continue;
      if (!this.#running.has(key)) continue;
      // Running under another attempt, purged, or settled by a later attempt (whose run has its own entry): lost to this run.
      const outcome: RunOutcome =
        row === null || row.status === "running" ? "lost" : row.status === "queued" ? "requeued" : row.attempt === run.attempt ? row.status : "lost";
      this.#end(run.workerId, run.taskId, run.attempt, outcome, null, this.#now() - run.claimedAtMs);
    }
  }

  #end(workerId: string, taskId: string, attempt: number, outcome: RunOutcome, error: unknown, durationMs: number): void {
    const key = runKey(workerId, taskId, attempt);
    const run = this.#running.get(key);
    if (run === undefined) return;
    this.#running.delete(key);
    const { claimedAtMs: _claimedAtMs, ...task } = run;
    this.runs.push({ ...task, outcome, error, durationMs, endedAtMs: this.#now() });
  }
}

function runKey(workerId: string, taskId: string, attempt: number): string {
  return `${workerId} ${taskId} ${attempt}`;
}
