/** Test helpers: the Postgres DSN (never skipped) and tasks put into a status as a worker would. */
import type { Task, TaskStore } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";

export { pgDsn } from "@cairnq/test-support";

/** Submits a task, claims it under a made-up worker and fails it for good with `error`. */
export async function failTask(store: TaskStore, name: string, queue: string, error: Record<string, unknown>): Promise<Task> {
  const workerId = newWorkerId();
  const task = await store.submit({ name, queue, maxAttempts: 1 });
  const [claimed] = await store.claim({ queues: [queue], names: [name], workerId, leaseMs: 60_000 });
  if (claimed?.id !== task.id) throw new Error(`failTask: claimed ${claimed?.id ?? "nothing"} instead of ${task.id}`);
  return store.fail({ taskId: task.id, workerId, error, retryable: false });
}

/** Submits a task and claims it under a made-up worker (a long lease): it stays running. */
export async function runTask(store: TaskStore, name: string, queue: string): Promise<Task> {
  const workerId = newWorkerId();
  const task = await store.submit({ name, queue });
  const [claimed] = await store.claim({ queues: [queue], names: [name], workerId, leaseMs: 600_000 });
  if (claimed?.id !== task.id) throw new Error(`runTask: claimed ${claimed?.id ?? "nothing"} instead of ${task.id}`);
  return claimed;
}
