import type { ParamExpr, Params, ParamType, TaskColumn } from "@cairnq/protocol/adapter";
import type { Bind } from "./compiler.js";

/**
 * The dialect bits the statement compiler needs: placeholders and casts,
 * literals, list expansion and how values are bound (§2.3).
 *
 * Everything here is pure string and value mapping; no driver is involved,
 * so a MySQL or libSQL adapter can implement it without touching the core.
 * Extend {@link BaseSqlSyntax} to inherit the defaults of future members.
 */
export interface SqlSyntax {
  /**
   * The placeholder of the `index`-th (1-based) distinct parameter, with any
   * cast its type needs. A parameter used twice in one statement keeps one
   * index, so dialects must use numbered placeholders (`?1`, `$1`).
   */
  placeholder(index: number, type: ParamType): string;
  /** Converts a non-null parameter value to what the driver binds (e.g. `true` → `1` on SQLite). */
  bindValue(value: unknown, type: ParamType): unknown;
  /** A constant: a string (quoted and escaped), a number, a boolean or `NULL`. */
  literal(value: string | number | boolean | null): string;
  /** A constant JSON document, already encoded as JSON text. */
  jsonLiteral(json: string): string;
  /** Quotes an identifier that may be a keyword (`key`). */
  quoteId(name: string): string;
  /** `expr ∈ list` for a list parameter bound with {@link SqlSyntax.bindValue} (`textList`). */
  inList(expr: string, listPlaceholder: string): string;
  /** Appended to the row-picking subquery of set transitions and purge when the dialect has `skipLocked`. */
  readonly skipLockedClause: string;
  /**
   * The task columns a statement returns or selects, optionally qualified by a
   * table alias: every column, or only `columns` (in that order). Defaults to
   * `*` / `alias.*` and the plain names; a dialect whose driver decodes JSON
   * itself may list the columns with casts instead. Returning more columns
   * than asked is allowed (callers take only what they asked for).
   */
  taskColumns(alias?: string, columns?: readonly TaskColumn[]): string;
  /**
   * The key-row upsert of a keyed submit (§5.1 step 5): insert `(key, task_id,
   * now, now)`, or on a key conflict repoint `task_id` and set `updated_at_ms`,
   * keeping `created_at_ms`.
   */
  upsertKey(key: string, taskId: string, now: string): string;
  /**
   * Multi-row statements (the write combiner): the FROM item that turns the bound rows into a derived
   * table `b` with one column per parameter, each column named by {@link SqlSyntax.batchRef}. `slot`
   * allocates the (1-based) placeholder index of a `rows` bind (the whole row set as one value) or a `column` bind (one
   * array per parameter). The default throws: a dialect without it runs every write on its own.
   */
  batchSource(params: readonly ParamExpr[], slot: (key: string, bind: Bind) => number): string;
  /** The per-row value of `param` inside a multi-row statement (typed as the single-row placeholder is). */
  batchRef(param: ParamExpr): string;
  /** The bound value of a `rows` bind: every row's values of `params`. */
  batchRows(rows: readonly Params[], params: readonly ParamExpr[]): unknown;
  /** The bound value of a `column` bind: one parameter of every row, as an array. */
  batchColumn(rows: readonly Params[], name: string, type: ParamType): unknown;
  /**
   * The claim probe's statement (§5.10 step 2) from its compiled parts: one row whose `found` column is
   * true when a claimable row or an expired lease exists. Optional (a syntax without it gets
   * {@link existsClaimProbe}); a dialect overrides it when its planner needs the query phrased so
   * that it walks the claim index (see `PostgresSyntax`).
   */
  claimProbe?(parts: ClaimProbeParts): string;
  /**
   * The row-picking subquery of a set transition whose rows are taken from a list of values of one
   * column (`queue ∈ queues`) in an order the index on that column continues (the claim draw, §5.10
   * step 5: `queue, status, priority DESC, run_at_ms, id`), when the list holds more than one value.
   * It must select the column `id` of the first `limit` rows in that order that match `where`,
   * skipping (and only locking) rows as {@link sortedPicks} does: a row locked by another transaction
   * is passed over, a row this one locks is one it takes, and it comes back short only when fewer
   * free rows match. Optional (a syntax without it gets {@link sortedPicks}, which sorts every
   * matching row: no index yields the order over several values of its first column). Postgres
   * overrides it to read each value's rows in index order (see `PostgresSyntax.listPicks`).
   */
  listPicks?(parts: ListPickParts): string;
  /**
   * The task table as named in a statement that finds its rows by id (`UPDATE … WHERE id IN (…)`,
   * `DELETE … WHERE id IN (…)`: claim draws, purge, bulk transitions, the group draw's takes), so
   * the ids are looked up in the primary key whatever the planner's statistics say. Optional (a
   * syntax without it names the table); `@cairnq/store-sqlite` pins the key's index with
   * `INDEXED BY`, because SQLite's planner, working from statistics gathered while the table was
   * nearly empty (§3.9 analyses it on connect), scans every row for the ids instead.
   */
  tableById?(table: string): string;
  /**
   * A statement that sends the `queued` push signal (§9) for the queue bound
   * at `queue`, for writes that make a queued task due without changing its
   * status (the notify trigger only fires on a status change): durable steps'
   * `send` and join wake-ups. `null` where the backend has no push channel
   * (SQLite's commit detector notices any commit).
   */
  queuedSignal?(queue: string): string | null;
  /**
   * A `LEFT JOIN` that gives each row of the query so far the rows of `table` (as `alias`) whose
   * `key` a correlated `subquery` selects (the subquery may `ORDER BY … LIMIT`, one column: `key`);
   * a row the subquery selects nothing for keeps one row of nulls. Optional (a syntax without it
   * gets {@link inSubqueryJoin}); Postgres overrides it with `LATERAL`, which its planner runs
   * once per outer row, where the `IN` form would be a filter over every row of `table`.
   */
  topRowsJoin?(table: string, alias: string, key: string, subquery: string): string;
  /**
   * A scalar expression giving each row of the query so far the rows a correlated `subquery` selects
   * (it may `ORDER BY … LIMIT`; its result columns named `columns`) as ONE JSON array text of arrays,
   * each row's `columns` in order (`[]` when it selects none) — one row per outer row instead of
   * {@link topRowsJoin}'s one per selected row, and no second read by key. Its rows' order in the
   * array is not promised (the reader sorts). Optional (a syntax without it, or whose answer is `null`,
   * gets {@link topRowsJoin}); SQLite has it: a group draw's page over 10 groups of 8 tasks each read in
   * 91 µs where the join took 205 µs (80 primary-key reads of the group rows and a sort of the joined rows).
   */
  topRowsList?(subquery: string, columns: readonly string[]): string | null;
  /**
   * Whether a statement may change rows in a `WITH` clause whose `RETURNING` rows the rest of the
   * statement reads (`WITH d AS (UPDATE … RETURNING …) UPDATE … WHERE k IN (SELECT … FROM d)`):
   * a group draw then marks its taken tasks' group rows in the draw's own statement. Optional
   * (absent: no; Postgres: yes).
   */
  readonly writableCtes?: boolean;
  /**
   * A single-row transition that can end a task (succeed, complete, fail, cancel) as the statement to run:
   * `update` is its `UPDATE … SET … WHERE …` without `RETURNING`; the statement must return, per
   * changed row, `returning` (every task column as {@link SqlSyntax.taskColumns} lists them, or
   * these columns) and may return more. Optional (a syntax without it appends `RETURNING`);
   * Postgres overrides it to send each row that ended terminal as a push signal in the same
   * statement (`@cairnq/store-postgres`: the done-row extension), so a waiting client needs no read.
   */
  terminalRowSignal?(update: string, returning: "task" | readonly TaskColumn[]): string;
}

/**
 * The default {@link SqlSyntax.topRowsJoin}: `LEFT JOIN table alias ON alias.key IN (subquery)`,
 * which SQLite runs as a lookup of `table`'s key per row the correlated subquery selects.
 */
export function inSubqueryJoin(table: string, alias: string, key: string, subquery: string): string {
  return `LEFT JOIN ${table} ${alias} ON ${alias}.${key} IN (${subquery})`;
}

/** What {@link SqlSyntax.claimProbe} builds the probe from. */
export interface ClaimProbeParts {
  /** The task table. */
  readonly table: string;
  /** ` WHERE <claimable>` (the protocol's `PROBE.claimable`, compiled), or `""`. */
  readonly claimableWhere: string;
  /** ` WHERE <expired lease>` (the protocol's `PROBE.expired`, compiled), or `""`. */
  readonly expiredWhere: string;
  /** The claim index's order after its status column, e.g. `queue ASC, priority DESC, run_at_ms ASC, id ASC`. */
  readonly claimIndexOrder: string;
}

/** What {@link SqlSyntax.listPicks} builds the picks from (compiled parts of the selection). */
export interface ListPickParts {
  /** The task table. */
  readonly table: string;
  /** The listed column (`queue`), which the index serving {@link ListPickParts.orderBy} starts with. */
  readonly column: string;
  /** The placeholder of the bound list, holding any number of values but one (e.g. `$3::text[]`). */
  readonly list: string;
  /** The selection's whole condition, `column ∈ list` included (an `AND` of terms). */
  readonly condition: string;
  /** The condition without `column ∈ list`, or `null` when nothing else is left. */
  readonly rest: string | null;
  /** The order (never empty); `id` is one of its columns, last. */
  readonly orderBy: readonly { readonly column: string; readonly direction: "asc" | "desc" }[];
  /** The placeholder of the limit. */
  readonly limit: string;
  /** The dialect's {@link SqlSyntax.skipLockedClause}, or `""` where the store does not lock rows. */
  readonly skipLocked: string;
}

/**
 * How many candidates a claim of `limit` rows over several queues reads before it locks (its window): four
 * times its limit and 16 more, so that concurrent claims taking their rows from the top of the same queues
 * (about four claims of the same size, or sixteen of one row) still find free rows in it. `limit` may be a
 * number or SQL text (a placeholder): the window is then SQL text too.
 */
export function claimWindow(limit: number): number;
export function claimWindow(limit: string): string;
export function claimWindow(limit: number | string): number | string {
  return typeof limit === "number" ? 4 * limit + 16 : `(4 * ${limit} + 16)`;
}

/** A selection's order as SQL (`priority DESC, run_at_ms ASC, id ASC`), each column prefixed with `prefix`. */
export function orderText(orderBy: ListPickParts["orderBy"], prefix = ""): string {
  return orderBy.map((o) => `${prefix}${o.column} ${o.direction === "asc" ? "ASC" : "DESC"}`).join(", ");
}

/**
 * The default {@link SqlSyntax.listPicks}: `SELECT id FROM <table> WHERE <condition> ORDER BY … LIMIT ?
 * [FOR UPDATE SKIP LOCKED]`, the text every other selection's picks have.
 */
export function sortedPicks(parts: ListPickParts): string {
  return `SELECT id FROM ${parts.table} WHERE ${parts.condition} ORDER BY ${orderText(parts.orderBy)} LIMIT ${parts.limit}${parts.skipLocked}`;
}

/** The default claim probe: `SELECT EXISTS (<claimable>) OR EXISTS (<expired>) AS found`. */
export function existsClaimProbe(parts: ClaimProbeParts): string {
  return (
    `SELECT EXISTS (SELECT 1 FROM ${parts.table}${parts.claimableWhere}) ` +
    `OR EXISTS (SELECT 1 FROM ${parts.table}${parts.expiredWhere}) AS found`
  );
}

/**
 * Defaults shared by SQL dialects that follow the standard closely:
 * double-quoted identifiers, single-quoted strings with `''` escaping,
 * `ON CONFLICT … DO UPDATE` upserts, `*` for task columns and no
 * `SKIP LOCKED`. Subclasses supply placeholders and list handling.
 */
export abstract class BaseSqlSyntax implements SqlSyntax {
  abstract placeholder(index: number, type: ParamType): string;
  abstract bindValue(value: unknown, type: ParamType): unknown;
  abstract inList(expr: string, listPlaceholder: string): string;

  readonly skipLockedClause: string = "";

  literal(value: string | number | boolean | null): string {
    if (value === null) return "NULL";
    if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
    if (typeof value === "number") {
      if (!Number.isFinite(value)) throw new RangeError(`cannot write ${value} as an SQL literal`);
      return String(value);
    }
    return `'${value.replaceAll("'", "''")}'`;
  }

  jsonLiteral(json: string): string {
    return this.literal(json);
  }

  quoteId(name: string): string {
    return `"${name.replaceAll('"', '""')}"`;
  }

  taskColumns(alias?: string, columns?: readonly TaskColumn[]): string {
    const prefix = alias === undefined ? "" : `${alias}.`;
    return columns === undefined ? `${prefix}*` : columns.map((column) => `${prefix}${column}`).join(", ");
  }

  batchSource(_params: readonly ParamExpr[], _slot: (key: string, bind: Bind) => number): string {
    throw new Error(`${this.constructor.name} has no multi-row statements; leave the dialect's combineWrites capability off`);
  }

  claimProbe(parts: ClaimProbeParts): string {
    return existsClaimProbe(parts);
  }

  topRowsJoin(table: string, alias: string, key: string, subquery: string): string {
    return inSubqueryJoin(table, alias, key, subquery);
  }

  listPicks(parts: ListPickParts): string {
    return sortedPicks(parts);
  }

  tableById(table: string): string {
    return table;
  }

  batchRef(param: ParamExpr): string {
    return `b.${this.quoteId(`p_${param.name}`)}`;
  }

  batchRows(rows: readonly Params[], params: readonly ParamExpr[]): unknown {
    return rows.map((row) => params.map((p) => nullable(row[p.name], (v) => this.bindValue(v, p.type))));
  }

  batchColumn(rows: readonly Params[], name: string, type: ParamType): unknown {
    return rows.map((row) => nullable(row[name], (v) => this.bindValue(v, type)));
  }

  upsertKey(key: string, taskId: string, now: string): string {
    const k = this.quoteId("key");
    return (
      `INSERT INTO cairnq_task_keys (${k}, task_id, created_at_ms, updated_at_ms) VALUES (${key}, ${taskId}, ${now}, ${now}) ` +
      `ON CONFLICT (${k}) DO UPDATE SET task_id = excluded.task_id, updated_at_ms = excluded.updated_at_ms`
    );
  }
}

function nullable(value: unknown, bind: (value: unknown) => unknown): unknown {
  return value === null || value === undefined ? null : bind(value);
}
