/**
 * A database with tasks in every status (and every reason `explain` gives),
 * written through the store contract as a worker and a client would.
 */
import type { Task, TaskStore } from "@cairnq/protocol";

/** The seeded tasks, by what each shows. */
export interface Seeded {
  queued: Task;
  delayed: Task;
  backingOff: Task;
  running: Task;
  cancelRequested: Task;
  succeeded: Task;
  failed: Task;
  failed2: Task;
  canceled: Task;
  expired: Task;
}

const W = "worker_01JB8ZK3M2Q4W5E6R7T8Y9V0XP";

async function claimOne(store: TaskStore, queue: string, name: string, leaseMs = 60_000): Promise<Task> {
  const [task] = await store.claim({ queues: [queue], names: [name], workerId: W, leaseMs });
  if (task === undefined) throw new Error(`seed: nothing to claim for ${queue}/${name}`);
  return task;
}

/** Seeds `store`; returns the rows as they are after seeding. */
export async function seed(store: TaskStore): Promise<Seeded> {
  const queued = await store.submit({ name: "email", queue: "mail", payload: { to: "a@example.com" } });
  const delayed = await store.submit({ name: "email", queue: "mail", payload: { to: "later@example.com" }, runAtDelayMs: 3_600_000 });

  const backingOff = await store.submit({ name: "flaky", queue: "jobs", payload: { n: 1 } });
  await claimOne(store, "jobs", "flaky");
  await store.fail({ taskId: backingOff.id, workerId: W, error: { type: "TaskError", code: "upstream", message: "503 from upstream", retryable: true, details: {} }, delayMs: 3_600_000 });

  const running = await store.submit({ name: "resize", queue: "jobs", payload: { w: 64 } });
  await claimOne(store, "jobs", "resize");
  await store.progress({ taskId: running.id, workerId: W, progress: 0.4, message: "resizing" });

  const cancelRequested = await store.submit({ name: "report", queue: "jobs" });
  await claimOne(store, "jobs", "report");
  await store.cancel(cancelRequested.id);

  const succeeded = await store.submit({ name: "thumb", queue: "jobs", payload: { url: "https://example.com/a.png" } });
  await claimOne(store, "jobs", "thumb");
  await store.complete({ taskId: succeeded.id, workerId: W, result: { ok: true } });

  const failed = await store.submit({ name: "charge", queue: "billing", maxAttempts: 1, correlationId: "order-7" });
  await claimOne(store, "billing", "charge");
  await store.fail({ taskId: failed.id, workerId: W, error: { type: "TaskError", code: "card_declined", message: "card declined", retryable: false, details: {} }, retryable: false });

  const failed2 = await store.submit({ name: "refund", queue: "billing", maxAttempts: 1 });
  await claimOne(store, "billing", "refund");
  await store.fail({ taskId: failed2.id, workerId: W, error: { type: "TaskError", code: "timeout", message: "gateway timeout", retryable: false, details: {} }, retryable: false });

  const canceled = await store.submit({ name: "email", queue: "mail", payload: { to: "nobody@example.com" } });
  await store.cancel(canceled.id);

  // Last: any later claim would recover its expired lease.
  const expired = await store.submit({ name: "crashy", queue: "crash" });
  await claimOne(store, "crash", "crashy", 1);
  await new Promise((resolve) => setTimeout(resolve, 20));

  const fresh = async (t: Task): Promise<Task> => {
    const row = await store.get(t.id);
    if (row === null) throw new Error(`seed: ${t.id} vanished`);
    return row;
  };
  return {
    queued: await fresh(queued),
    delayed: await fresh(delayed),
    backingOff: await fresh(backingOff),
    running: await fresh(running),
    cancelRequested: await fresh(cancelRequested),
    succeeded: await fresh(succeeded),
    failed: await fresh(failed),
    failed2: await fresh(failed2),
    canceled: await fresh(canceled),
    expired: await fresh(expired),
  };
}
