/**
 * The client's own error: an interruption only the client can see, a
 * subclass of `CairnQError` (so code that catches it keeps catching it) with
 * the fields that say which task is concerned.
 */
import { CairnQError } from "@cairnq/protocol";
import { brandErrorClass } from "@cairnq/protocol/adapter";

/**
 * `close()` on the client ended a `call`, `wait` or `waitByKey` that was
 * waiting for a task. The task is not touched: it was submitted (for a
 * `call`) and stays in the database, queued or running, and a worker may
 * still run it; wait for it again with `taskId` (or the key) on a client
 * that is open.
 *
 * @example
 * ```ts
 * try {
 *   return await client.call(report, payload);
 * } catch (err) {
 *   if (err instanceof WaitInterrupted) log.info("shutting down; task left to the workers", { taskId: err.taskId });
 *   throw err;
 * }
 * ```
 */
export class WaitInterrupted extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.WaitInterrupted", "WaitInterrupted");
  }

  /** The task waited for; `null` for a `waitByKey` whose key had no task when the wait ended. */
  readonly taskId: string | null;
  /** The key a `waitByKey` (or a keyed `call`) followed, else `null`. */
  readonly key: string | null;

  constructor(method: string, taskId: string | null, key: string | null, cause: unknown) {
    const subject = taskId !== null ? `task ${taskId}` : `the task with key '${key ?? ""}'`;
    const again = taskId !== null ? `client.wait('${taskId}')` : `client.waitByKey('${key ?? ""}')`;
    super(
      `${method}: close() on this client cut short the wait for ${subject}; ` +
        `${method === "call" ? "the task was submitted and " : "the task "}is still in the database (a worker may still run it), ` +
        `so wait for it with ${again} on a client that is open`,
      { cause },
    );
    this.taskId = taskId;
    this.key = key;
  }
}
