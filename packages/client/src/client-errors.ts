/**
 * The client's own errors: refusals and interruptions that only the client
 * can see, each a subclass of a `@cairnq/protocol` error (so code that
 * catches `AlreadyExists` or `CairnQError` keeps catching them) with the
 * fields that say which task is concerned.
 */
import type { Task } from "@cairnq/protocol";
import { AlreadyExists, CairnQError } from "@cairnq/protocol";
import { brandErrorClass } from "@cairnq/protocol/adapter";

/**
 * A keyed submit given a {@link TaskDef} found its key held by a task of
 * another name, which `reuse` / `reuse-succeeded` would return (protocol
 * §5.1 compares keys, not names). The client refuses to hand that row back
 * typed by the definition — its payload and result are another task's — as
 * a debounce refuses to coalesce into another name's task. Nothing was
 * written; `task` is the task holding the key, unchanged. A submit by name
 * (a string) returns that row as before.
 *
 * @example
 * ```ts
 * try {
 *   await client.call(sum, { x: 1, y: 2 }, { key: "order-42", conflict: "reuse-succeeded" });
 * } catch (err) {
 *   if (err instanceof KeyHeldByOtherTask) console.warn(err.key, "is", err.task.name, err.task.id);
 * }
 * ```
 */
export class KeyHeldByOtherTask extends AlreadyExists {
  static {
    brandErrorClass(this, "cairnq.error.KeyHeldByOtherTask", "KeyHeldByOtherTask");
  }

  /** The task name of the definition the submit was given (`name` is the error's class name, as on every error). */
  readonly taskName: string;
  /** The task holding the key: another name's, returned by the store's conflict rule. */
  readonly task: Task;
  /** `task.id`. */
  readonly taskId: string;

  constructor(key: string, name: string, task: Task, method: string) {
    super(key, {
      message:
        `${method}: the key '${key}' holds task ${task.id} of task name '${task.name}' (${task.status}), not a '${name}' task; ` +
        `its conflict rule would return that task, which the TaskDef of '${name}' cannot type, so nothing was submitted and that task is unchanged; ` +
        `give each task name keys of its own (e.g. '${name}:…'), or submit by name to get the row as it is`,
    });
    this.taskName = name;
    this.task = task;
    this.taskId = task.id;
  }
}
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
