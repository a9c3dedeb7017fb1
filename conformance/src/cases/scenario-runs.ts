/**
 * How the §14 scenarios drive one task to an end: claimed by the case's first
 * worker and settled, with the claim checked to be that task.
 */
import type { Task } from "@cairnq/protocol";
import type { CaseContext } from "../case.js";

/** Claims `id` (the only claimable task of `name`) and completes it with `result`. */
export async function runToSuccess(t: CaseContext, task: Task, result: unknown = { ok: true }): Promise<Task> {
  const claimed = await t.claimOne(t.w1, { queues: [task.queue], names: [task.name] });
  t.expect(claimed.id).toBe(task.id);
  return t.store.complete({ taskId: task.id, workerId: t.w1, result });
}

/** Claims `task` and fails it permanently. */
export async function runToFailure(t: CaseContext, task: Task, error: unknown = { code: "boom" }): Promise<Task> {
  const claimed = await t.claimOne(t.w1, { queues: [task.queue], names: [task.name] });
  t.expect(claimed.id).toBe(task.id);
  return t.store.fail({ taskId: task.id, workerId: t.w1, error, retryable: false });
}
