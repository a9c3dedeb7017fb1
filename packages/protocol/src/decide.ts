import type { EvalScope } from "./expr.js";
import { evaluate, holds } from "./expr.js";
import type { Branch, InsertRule, RowTransition, Selection } from "./rules.js";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_QUEUE } from "./inputs.js";
import { compareByOrder, flattenAssignments } from "./rules.js";
import type { Task, TaskColumn } from "./task.js";
import { TASK_COLUMNS } from "./task.js";

/**
 * What a single-row transition decided (conventions: the pure protocol
 * returns decisions; stores and the client turn them into errors or `null`).
 */
export type Decision =
  | { readonly kind: "applied"; readonly branch: string; readonly row: Task }
  | { readonly kind: "lost-lease" }
  | { readonly kind: "not-matched" };

/** Parameters of an operation, by the names rules read (see `PARAMS`). */
export type Params = Readonly<Record<string, unknown>>;

/** Column defaults of the task table (§3.1), for columns an insert does not set: the submit defaults, plus a new row's attempt count. */
export const COLUMN_DEFAULTS: Readonly<Partial<Record<TaskColumn, unknown>>> = {
  queue: DEFAULT_QUEUE,
  metadata: {},
  attempt: 0,
  max_attempts: DEFAULT_MAX_ATTEMPTS,
  priority: DEFAULT_PRIORITY,
};

function scopeOf(row: Task | Record<string, unknown>, params: Params, nowMs: number, rowById?: (id: string) => Task | undefined): EvalScope {
  const fields = row as Record<string, unknown>;
  return rowById === undefined ? { row: fields, params, nowMs } : { row: fields, params, nowMs, rowById: rowById as EvalScope["rowById"] };
}

/** The name of the first branch whose condition holds (the last branch is "otherwise"). */
export function chooseBranch(branches: readonly Branch[], scope: EvalScope): Branch {
  for (const branch of branches) {
    if (branch.when === null || holds(branch.when, scope)) return branch;
  }
  throw new Error("a transition must end with an 'otherwise' branch");
}

/**
 * Applies branches to a row in memory. Every assignment reads the row as it
 * was before the write, exactly as the compiled `UPDATE … SET` does: the
 * evaluator goes through the same flattened per-column expressions a SQL
 * store compiles.
 */
export function applyBranches(branches: readonly Branch[], row: Task, params: Params, nowMs: number): { branch: string; row: Task } {
  const scope = scopeOf(row, params, nowMs);
  const branch = chooseBranch(branches, scope);
  const next: Record<string, unknown> = { ...row };
  for (const [column, expr] of flattenAssignments(branches)) next[column] = evaluate(expr, scope);
  return { branch: branch.name, row: next as unknown as Task };
}

/**
 * Decides a single-row transition against the row's current values.
 * A missing row or a failed guard is `lost-lease` for owned writes and
 * `not-matched` for client operations (which then return `null`).
 */
export function decideRow(transition: RowTransition, row: Task | null, params: Params, nowMs: number): Decision {
  if (row === null || !holds(transition.guard, scopeOf(row, params, nowMs))) {
    return transition.onMiss === "lost-lease" ? { kind: "lost-lease" } : { kind: "not-matched" };
  }
  const applied = applyBranches(transition.branches, row, params, nowMs);
  return { kind: "applied", branch: applied.branch, row: applied.row };
}

/**
 * The rows a selection picks, in its order, bounded by its limit parameter.
 * `rows` is the whole table: a rule that reads a task's parent looks it up there.
 */
export function selectRows(selection: Selection, rows: Iterable<Task>, params: Params, nowMs: number): Task[] {
  const all = [...rows];
  let byId: Map<string, Task> | undefined;
  // A rule reading a parent row (PURGE's PARENT_WAITING) finds it among `rows`, which are the whole table.
  const rowById = (id: string): Task | undefined => (byId ??= new Map(all.map((row) => [row.id, row]))).get(id);
  const picked: Task[] = [];
  for (const row of all) if (holds(selection.where, scopeOf(row, params, nowMs, rowById))) picked.push(row);
  if (selection.orderBy.length > 0) picked.sort(compareByOrder(selection.orderBy));
  if (selection.limit === null) return picked;
  const limit = params[selection.limit.name];
  return typeof limit === "number" ? picked.slice(0, Math.max(0, limit)) : picked;
}

/**
 * Builds the row an insert creates: the rule's value for each column it
 * sets, the column default (§3.1) for the others, else `null`. An explicit
 * `null` stays `null`, as in SQL (where a NOT NULL column then rejects it).
 */
export function buildInsert(rule: InsertRule, params: Params, nowMs: number): Task {
  const scope = scopeOf({}, params, nowMs);
  const row: Record<string, unknown> = {};
  for (const column of TASK_COLUMNS) {
    const expr = rule.values[column];
    if (expr !== undefined) row[column] = evaluate(expr, scope);
    else row[column] = column in COLUMN_DEFAULTS ? structuredClone(COLUMN_DEFAULTS[column]) : null;
  }
  return row as unknown as Task;
}
