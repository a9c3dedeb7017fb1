/**
 * The task a call names — a name or a `TaskDef` — and the check that a row
 * read for a typed call is a task of that definition.
 */
import type { Task, TaskDef } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";

/** What a call takes from the task it names: the name, and a `TaskDef`'s defaults. */
export interface ResolvedTask {
  readonly name: string;
  readonly queue?: string | undefined;
  readonly maxAttempts?: number | undefined;
  readonly priority?: number | undefined;
}

/** The task a call names: a non-empty name, or a `TaskDef`; else `InvalidArgument`. */
export function resolveTask(task: unknown): ResolvedTask {
  if (typeof task === "string" && task !== "") return { name: task };
  if (typeof task === "object" && task !== null && typeof (task as { name?: unknown }).name === "string" && (task as TaskDef).name !== "") {
    return task as TaskDef;
  }
  throw new InvalidArgument(
    "name",
    "the first argument must be a task name (a non-empty string) or a TaskDef from defineTask(...): workers find handlers by that name",
  );
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
