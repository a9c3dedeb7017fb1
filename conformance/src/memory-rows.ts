/**
 * The task rows of the in-memory store, indexed by status, so that a claim
 * does not read every row the store ever held.
 *
 * Terminology:
 * - the **statuses a condition requires** are those a row must have for the
 *   condition to hold, read off the condition itself (a protocol rule's
 *   `where`, with the operation's parameters): `status = 'queued'`,
 *   `status IN (…)`, a `status` filter given, and the intersection of those
 *   under an `AND`. Any other condition requires nothing.
 * - the **candidates** of a condition are the rows with a status it
 *   requires (every row when it requires none). The rule is still evaluated
 *   in full on each candidate, so the rows it picks are the rows it would
 *   pick from the whole table: the index only leaves out rows the rule
 *   itself rules out.
 *
 * Why: terminal rows pile up (a schedule leaves one per run) while claims
 * read only `queued` and `running` rows. Handing every row to the claim's
 * probe, lease recovery and draws made each claim cost grow with the rows
 * ever stored: an hourly schedule advanced through a test queue took
 * 0.65–0.98 ms per run over 7 virtual days and 2.3–3.7 ms over 180 (4,321
 * runs), where SQLite's indexes keep it flat (0.7 ms); with candidates,
 * 0.6–1.5 ms over 7 days and 0.28–0.41 ms over 180 (three runs each, on a
 * shared, loaded 2-core machine; the 7-day figure is mostly warm-up). To
 * re-measure, advance `createTestQueue({ store: "memory" })` with a worker
 * and `schedule("t", { everyMs: 3_600_000 })` through 7 and 180 days.
 */
import type { Task } from "@cairnq/protocol";
import type { Expr, Params } from "@cairnq/protocol/adapter";

/**
 * The statuses a row must have for `where` to hold with `params`, or `null`
 * when the condition requires none it can read (see the file's opening
 * block). A condition that reads a task's parent requires none: the parent
 * is looked up among the rows handed over, which must then be all of them.
 */
export function requiredStatuses(where: Expr, params: Params): ReadonlySet<string> | null {
  return readsParent(where) ? null : statusesOf(where, params);
}

function statusesOf(expr: Expr, params: Params): ReadonlySet<string> | null {
  switch (expr.kind) {
    case "compare": {
      if (expr.op !== "=") return null;
      const [column, other] = isStatus(expr.left) ? [expr.left, expr.right] : [expr.right, expr.left];
      if (!isStatus(column)) return null;
      const value = other.kind === "literal" ? other.value : other.kind === "param" ? params[other.name] : undefined;
      return typeof value === "string" ? new Set([value]) : null;
    }
    case "in":
      return isStatus(expr.arg) ? new Set(expr.values.map(String)) : null;
    case "inList": {
      const list = params[expr.param.name];
      return isStatus(expr.arg) && Array.isArray(list) ? new Set(list.map(String)) : null;
    }
    case "optionalEq": {
      const wanted = params[expr.param.name];
      return expr.column === "status" && typeof wanted === "string" ? new Set([wanted]) : null;
    }
    case "and": {
      let required: ReadonlySet<string> | null = null;
      for (const arg of expr.args) {
        const statuses = statusesOf(arg, params);
        if (statuses !== null) required = required === null ? statuses : intersection(required, statuses);
      }
      return required;
    }
    case "column":
    case "param":
    case "literal":
    case "now":
    case "arith":
    case "or":
    case "not":
    case "isNull":
    case "coalesce":
    case "case":
    case "parent":
      return null;
  }
}

function intersection(a: ReadonlySet<string>, b: ReadonlySet<string>): ReadonlySet<string> {
  return new Set([...a].filter((status) => b.has(status)));
}

function isStatus(expr: Expr): boolean {
  return expr.kind === "column" && expr.column === "status";
}

function readsParent(expr: Expr): boolean {
  switch (expr.kind) {
    case "parent":
      return true;
    case "arith":
    case "compare":
      return readsParent(expr.left) || readsParent(expr.right);
    case "and":
    case "or":
    case "coalesce":
      return expr.args.some(readsParent);
    case "not":
    case "isNull":
    case "in":
    case "inList":
      return readsParent(expr.arg);
    case "case":
      return expr.whens.some((branch) => readsParent(branch.when) || readsParent(branch.then)) || readsParent(expr.otherwise);
    case "column":
    case "param":
    case "literal":
    case "now":
    case "optionalEq":
      return false;
  }
}

/**
 * The rows of a `MemoryStore` by id, with an index by status (see the file's
 * opening block). Rows are replaced, never changed in place: every write
 * goes through {@link MemoryRows.set}, which moves the row between statuses.
 */
export class MemoryRows {
  readonly #rows = new Map<string, Task>();
  readonly #byStatus = new Map<string, Map<string, Task>>();

  get(id: string): Task | undefined {
    return this.#rows.get(id);
  }

  /** Every row, in the order first stored. */
  values(): IterableIterator<Task> {
    return this.#rows.values();
  }

  set(row: Task): void {
    const before = this.#rows.get(row.id);
    if (before !== undefined && before.status !== row.status) this.#byStatus.get(before.status)?.delete(row.id);
    this.#rows.set(row.id, row);
    let rows = this.#byStatus.get(row.status);
    if (rows === undefined) this.#byStatus.set(row.status, (rows = new Map()));
    rows.set(row.id, row);
  }

  delete(id: string): void {
    const row = this.#rows.get(id);
    if (row === undefined) return;
    this.#rows.delete(id);
    this.#byStatus.get(row.status)?.delete(id);
  }

  /** The rows `where` may hold on with `params`: those with a status it requires, or every row. */
  candidates(where: Expr, params: Params): Task[] {
    const statuses = requiredStatuses(where, params);
    if (statuses === null) return [...this.#rows.values()];
    const out: Task[] = [];
    for (const status of statuses) for (const row of this.#byStatus.get(status)?.values() ?? []) out.push(row);
    return out;
  }
}
