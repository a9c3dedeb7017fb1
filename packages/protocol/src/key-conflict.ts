/**
 * A keyed submit given a `TaskDef` whose key holds another name's task (§5.1 reuses by key alone): the
 * client's `submit`/`submitOutcome`/`call` and the worker's `ctx.submit` refuse to hand that row back typed by
 * the definition.
 */
import { AlreadyExists, brandErrorClass } from "./errors.js";
import type { SubmitInput } from "./store.js";
import type { Task } from "./task.js";
import type { TaskDef } from "./task-def.js";

/**
 * A keyed submit given a `TaskDef` found its key held by a task of
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
 * The row a submit given `task` returns: with a `TaskDef`, a keyed submit whose conflict rule chose a task
 * of another name (`reuse`, `reuse-succeeded`: §5.1 reuses by key alone) is refused rather than returned
 * typed by the definition. By name (a string), the row is returned as it is.
 *
 * @param method - The method, for the message: `"call"`, `"ctx.submit"`.
 * @throws KeyHeldByOtherTask (an `AlreadyExists`) with the task holding the key.
 */
export function typedSubmitRow<T extends Task>(row: T, task: string | TaskDef, input: SubmitInput, method: string): T {
  if (typeof task === "string" || row.name === input.name) return row;
  throw new KeyHeldByOtherTask(input.key ?? "", input.name, row, method);
}
