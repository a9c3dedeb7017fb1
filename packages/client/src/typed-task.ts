/**
 * The task a call names — a name or a `TaskDef` — and the check that a row
 * read for a typed call is a task of that definition.
 */
import type { Task, TaskDef, TaskStore } from "@cairnq/protocol";
import { InvalidArgument, isTerminal } from "@cairnq/protocol";
import type { ResolvedWaitOptions, WaitTarget } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import { describeKind } from "@cairnq/runtime";
import { waitForTask } from "./wait.js";

/** What a call takes from the task it names: the name, and a `TaskDef`'s defaults. */
export interface ResolvedTask {
  readonly name: string;
  readonly queue?: string | undefined;
  readonly maxAttempts?: number | undefined;
  readonly priority?: number | undefined;
}

/** Whether a value is a `TaskDef`: an object with a non-empty string `name` (what `defineTask` returns). */
export function isTaskDef(value: unknown): value is TaskDef {
  return typeof value === "object" && value !== null && typeof (value as { name?: unknown }).name === "string" && (value as TaskDef).name !== "";
}

/** The task a call names: a non-empty name, or a `TaskDef`; else `InvalidArgument`. */
export function resolveTask(task: unknown): ResolvedTask {
  if (typeof task === "string" && task !== "") return { name: task };
  if (isTaskDef(task)) return task;
  throw new InvalidArgument(
    "name",
    "the first argument must be a task name (a non-empty string) or a TaskDef from defineTask(...): workers find handlers by that name",
  );
}

/**
 * The `TaskDef` a read is typed by, checked before the read: absent, or a
 * definition from `defineTask`. A name string types nothing (`getByKey(key,
 * "charge")` is not a filter), so it is refused rather than passed over.
 *
 * @param what - How the caller wrote the call, for the message: `"getByKey(key, task)"`.
 * @throws InvalidArgument (`argument: "task"`) for anything else.
 */
export function optionalTaskDef(task: unknown, what: string): TaskDef | undefined {
  if (task === undefined) return undefined;
  if (isTaskDef(task)) return task;
  const given = typeof task === "string" ? `the string ${JSON.stringify(task)}` : describeKind(task);
  throw new InvalidArgument("task", `${what}: task must be a TaskDef from defineTask(...), which types the row read, got ${given}; leave it out to read an untyped row`);
}

/**
 * A row read for a typed call: with a {@link TaskDef}, the row must be a
 * task of that name, or the types the caller asked for would be a lie.
 */
export function typedRow<T extends Task | null>(row: T, task: TaskDef | undefined, what: string): T {
  if (task === undefined || row === null) return row;
  const { name } = resolveTask(task);
  if (row.name !== name) {
    throw new InvalidArgument(
      "task",
      `${what}: task ${row.id} is a '${row.name}' task, not a '${name}' one, so it cannot be typed by that TaskDef; pass the definition of '${row.name}', or none`,
    );
  }
  return row;
}

/**
 * A wait typed by `task` (`wait(id, { task })`, `waitByKey`). With a
 * {@link TaskDef}, the name is checked on the first read, so a task of
 * another name fails at once with `InvalidArgument`: the loop's status polls
 * carry no name, so until the task finished a wrong definition was found out
 * only by a `TaskTimeout` after the whole timeout. That read is a full one in
 * place of the loop's first status probe, and a terminal row it finds is
 * returned as the loop would. The row the loop returns is checked again: a
 * by-key wait follows a `replace`, which may point the key at another name.
 *
 * @param what - The method, for the message: `"wait"`.
 * @throws InvalidArgument (`argument: "task"`), or whatever the wait loop throws.
 */
export async function waitTyped(
  store: TaskStore,
  target: WaitTarget,
  options: ResolvedWaitOptions,
  clock: RuntimeClock,
  task: TaskDef | undefined,
  what: string,
): Promise<Task> {
  const awaited: unknown = target.key ?? target.id;
  // A bad id or key, or an aborted signal, is the loop's to report, as it is without a TaskDef.
  if (task !== undefined && typeof awaited === "string" && awaited !== "" && options.signal?.aborted !== true) {
    const first = typedRow(target.key !== undefined ? await store.getByKey(target.key) : await store.get(awaited), task, what);
    if (first !== null && isTerminal(first)) return first;
  }
  return typedRow(await waitForTask(store, target, options, clock), task, what);
}
