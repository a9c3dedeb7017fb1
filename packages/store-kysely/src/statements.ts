/**
 * Every statement the store runs, as {@link StatementTemplate}s built from
 * the protocol's rules (`@cairnq/protocol` `rules.ts`) and a few reads.
 *
 * Each database operation has one readable place here. Templates do not
 * depend on the dialect; {@link StatementCompiler} compiles them per dialect
 * and shape.
 */
import type { DeleteRule, Expr, InsertRule, ParamExpr, RowTransition, SetTransition, TaskColumn } from "@cairnq/protocol/adapter";
import {
  DRAW,
  flattenAssignments,
  JSON_COLUMNS,
  LIST_FILTER,
  LIST_ROWS,
  PARAMS,
  PROBE,
  QUEUE_DEPTH_ROWS,
  READ_PARAMS as PROTOCOL_READ_PARAMS,
  STATS_ROWS,
  TASK_COLUMNS,
  x,
} from "@cairnq/protocol/adapter";
import { isTerminalStatus } from "@cairnq/protocol";
import type { CompileEnv, ExprCompiler, StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { ClaimProbeParts, ListPickParts } from "./sql-syntax.js";
import { existsClaimProbe, orderText, sortedPicks } from "./sql-syntax.js";

import { TASKS_TABLE } from "./tables.js";

export { TASKS_TABLE };
/** The business-key table (§3.2). */
export const KEYS_TABLE = "cairnq_task_keys";
/** The meta table (§3.3). */
export const META_TABLE = "cairnq_meta";
/** The migration ledger (§3.4). */
export const MIGRATIONS_TABLE = "cairnq_migrations";

/** Parameters of the reads and key statements that the rules do not define. */
export const READ_PARAMS = {
  key: x.param("key", "text"),
  taskId: PARAMS.taskId,
  queue: PARAMS.queue,
  status: PARAMS.status,
  name: PARAMS.name,
  rootId: PARAMS.rootId,
  correlationId: PARAMS.correlationId,
  limit: PARAMS.limit,
  offset: PROTOCOL_READ_PARAMS.offset,
  beforeId: PROTOCOL_READ_PARAMS.beforeId,
  maxDepth: PROTOCOL_READ_PARAMS.maxDepth,
} as const;

const P = READ_PARAMS;

/**
 * A multi-row template (`perRow`): every parameter is read per row from the
 * syntax's batch source, which `build` is handed to select `FROM`.
 */
function multiRowTemplate(
  params: readonly ParamExpr[],
  clock: StatementTemplate["clock"],
  build: (c: ExprCompiler, source: string, env: CompileEnv) => string,
): StatementTemplate {
  return { params, clock, perRow: true, build: (c, env) => build(c, c.batchSource(params), env) };
}

function setList(c: ExprCompiler, assignments: ReadonlyMap<TaskColumn, Expr>): string {
  const parts: string[] = [];
  for (const [column, expr] of assignments) {
    const value = c.value(expr);
    // `coalesce(NULL, col)` folds to `col`: assigning a column to itself is left out.
    if (value !== column) parts.push(`${column} = ${value}`);
  }
  return parts.join(", ");
}

function where(c: ExprCompiler, expr: Expr): string {
  const sql = c.condition(expr);
  return sql === null ? "" : ` WHERE ${sql}`;
}

/**
 * The term `column ∈ list` of a selection's top-level `AND` whose list parameter is bound to more than
 * one value in this shape (over one value it compiles as equality, which the index's order continues),
 * and the selection's other terms; `null` when there is none.
 */
function listTerm(c: ExprCompiler, where: Expr): { column: TaskColumn; param: ParamExpr; rest: Expr[] } | null {
  if (where.kind !== "and") return null;
  const at = where.args.findIndex((arg) => arg.kind === "inList" && !arg.nullMeansAll && arg.arg.kind === "column" && c.isList(arg.param));
  const term = where.args[at];
  if (term === undefined || term.kind !== "inList" || term.arg.kind !== "column") return null;
  return { column: term.arg.column, param: term.param, rest: where.args.filter((_, i) => i !== at) };
}

/**
 * `SELECT id … ORDER BY … LIMIT ? [FOR UPDATE SKIP LOCKED]`: the rows a set operation acts on. A
 * selection taking ordered, limited rows from a list of a column's values (the claim draw over several
 * queues) goes through the dialect's {@link SqlSyntax.listPicks} (default: the same text).
 */
function pickIds(c: ExprCompiler, env: CompileEnv, selection: SetTransition["selection"]): string {
  const listed = selection.orderBy.length > 0 && selection.limit !== null && c.has(selection.limit) ? listTerm(c, selection.where) : null;
  if (listed !== null && selection.limit !== null) {
    const parts: ListPickParts = {
      table: TASKS_TABLE,
      column: listed.column,
      list: c.slot(listed.param),
      condition: c.condition(selection.where) ?? env.syntax.literal(true),
      rest: listed.rest.length === 0 ? null : c.condition(x.and(...listed.rest)),
      orderBy: selection.orderBy,
      limit: c.slot(selection.limit),
      skipLocked: selection.skipLocked && env.skipLocked ? env.syntax.skipLockedClause : "",
    };
    return env.syntax.listPicks === undefined ? sortedPicks(parts) : env.syntax.listPicks(parts);
  }
  let sql = `SELECT id FROM ${TASKS_TABLE}${where(c, selection.where)}`;
  if (selection.orderBy.length > 0) {
    sql += ` ORDER BY ${orderText(selection.orderBy)}`;
  }
  if (selection.limit !== null && c.has(selection.limit)) sql += ` LIMIT ${c.slot(selection.limit)}`;
  if (selection.skipLocked && env.skipLocked) sql += env.syntax.skipLockedClause;
  return sql;
}

/** The task table as the target of a statement that finds its rows by id ({@link SqlSyntax.tableById}). */
function tasksById(env: CompileEnv): string {
  return env.syntax.tableById === undefined ? TASKS_TABLE : env.syntax.tableById(TASKS_TABLE);
}

function needsSubquery(selection: SetTransition["selection"], env: CompileEnv): boolean {
  return selection.limit !== null || selection.orderBy.length > 0 || (selection.skipLocked && env.skipLocked);
}

/**
 * `build` run once per rule (rules are module constants): a rule's SQL text
 * never changes, so it is composed once and the driver can prepare it once.
 */
function perRule<R extends object, T>(build: (rule: R) => T): (rule: R) => T {
  const cache = new WeakMap<R, T>();
  return (rule) => {
    let value = cache.get(rule);
    if (value === undefined) {
      value = build(rule);
      cache.set(rule, value);
    }
    return value;
  };
}

/** What the single-row and the multi-row form of a transition share: its flattened branches and their parameters with the guard's. */
function rowParts(rule: RowTransition): { assignments: ReadonlyMap<TaskColumn, Expr>; params: readonly ParamExpr[] } {
  const assignments = flattenAssignments(rule.branches);
  return { assignments, params: paramsOfAll([rule.guard, ...assignments.values()]) };
}

/** What a transition statement returns: every task column, only `id, status` (a TaskRef), or nothing. */
type Returning = "task" | "ref" | "none";

function returningClause(env: CompileEnv, returning: Returning): string {
  if (returning === "none") return "";
  return ` RETURNING ${returning === "task" ? env.syntax.taskColumns() : "id, status"}`;
}

/** Whether some branch of `rule` ends the task in a terminal status (succeed, complete, fail, cancel). */
function endsTerminal(rule: RowTransition): boolean {
  return rule.branches.some((branch) => isTerminalStatus(branch.to));
}

/**
 * `update` (an `UPDATE` without `RETURNING`) with its returning clause: through the dialect's
 * `SqlSyntax.terminalRowSignal` when the rule can end a task and the statement returns rows
 * (Postgres sends each terminal row as a push signal in the same statement), else plainly.
 * Single-row statements only: a multi-row one is what a busy worker sends, where nobody waits on
 * one task's latency, and there the rows' JSON and notifications cost the settling backend
 * ~20 µs per task (35 → 55 µs, 64 rows per statement, bench/settle-cpu-pg.mjs) for reads saved
 * only by callers that wait.
 */
function transitionStatement(env: CompileEnv, rule: RowTransition, update: string, returning: Returning): string {
  if (returning !== "none" && env.syntax.terminalRowSignal !== undefined && endsTerminal(rule)) {
    return env.syntax.terminalRowSignal(update, returning === "task" ? "task" : ["id", "status"]);
  }
  return update + returningClause(env, returning);
}

function rowOf(rule: RowTransition, returning: Returning): StatementTemplate {
  const { assignments, params } = rowParts(rule);
  return {
    params,
    clock: rule.clock,
    build: (c, env) => transitionStatement(env, rule, `UPDATE ${TASKS_TABLE} SET ${setList(c, assignments)}${where(c, rule.guard)}`, returning),
  };
}

const rowTemplates = perRule((rule: RowTransition) => rowOf(rule, "task"));
const plainRowTemplates = perRule((rule: RowTransition) => rowOf(rule, "none"));
const refRowTemplates = perRule((rule: RowTransition) => rowOf(rule, "ref"));

/**
 * A single-row transition (cancel, retry, heartbeat, progress, succeed,
 * complete, fail) as ONE statement:
 * `UPDATE cairnq_tasks SET <flattenAssignments> WHERE <guard> RETURNING *`.
 * The guard and every branch read the row's current values in the database,
 * so the transition is atomic against any concurrent writer (§5.0).
 *
 * @param returning - `false` leaves `RETURNING` out: for a caller that reads the row back itself
 *   in the same transaction, holding the write lock (SQLite's merged owned writes), and learns
 *   whether the guard passed from the count of changed rows.
 */
export function rowTransitionTemplate(rule: RowTransition, returning = true): StatementTemplate {
  return (returning ? rowTemplates : plainRowTemplates)(rule);
}

/**
 * {@link rowTransitionTemplate} answering only `id, status` (a TaskRef): the same statement, guard and
 * branches, for a caller that needs no more of the row after the write (`completeRef`).
 */
export function rowTransitionRefTemplate(rule: RowTransition): StatementTemplate {
  return refRowTemplates(rule);
}

function batchRowOf(rule: RowTransition, returning: Returning): StatementTemplate {
  const { assignments, params } = rowParts(rule);
  return multiRowTemplate(
    params,
    rule.clock,
    (c, source, env) => `UPDATE ${TASKS_TABLE} SET ${setList(c, assignments)} FROM ${source}${where(c, rule.guard)}` + returningClause(env, returning),
  );
}

const batchRowTemplates = perRule((rule: RowTransition) => batchRowOf(rule, "task"));
const refBatchRowTemplates = perRule((rule: RowTransition) => batchRowOf(rule, "ref"));

/**
 * The multi-row form of a single-row transition, for the write combiner: the
 * same guard and the same flattened branches, with every parameter read per
 * row from a derived table `b` of the bound rows —
 * `UPDATE cairnq_tasks SET <flattenAssignments> FROM <rows> AS b WHERE <guard> RETURNING *`.
 * Each row still passes or fails its own guard (ownership, the attempt fence)
 * on its own current values, so a row whose guard fails is simply not
 * returned; callers match the returned rows by id. One shape per rule: the
 * SQL text does not depend on the row count or on which values are null, so
 * it prepares once. The rows must have distinct task ids.
 */
export function batchRowTransitionTemplate(rule: RowTransition): StatementTemplate {
  return batchRowTemplates(rule);
}

/** {@link batchRowTransitionTemplate} answering only `id, status` per row (see {@link rowTransitionRefTemplate}). */
export function batchRowTransitionRefTemplate(rule: RowTransition): StatementTemplate {
  return refBatchRowTemplates(rule);
}

const setTemplates = perRule((_rule: SetTransition) => new Map<string, StatementTemplate>());

/**
 * A transition over a selection of rows (lease recovery, claim draw,
 * heartbeat_batch) as ONE statement:
 * `UPDATE … SET … WHERE id IN (SELECT id … WHERE <where> ORDER BY … LIMIT ?
 * [FOR UPDATE SKIP LOCKED]) RETURNING <returning>`. A selection without
 * order, limit or row locking updates directly (`UPDATE … WHERE <where>`),
 * which is the same rows with one scan less.
 *
 * @param returning - `"task"` for every task column, or the columns to return.
 */
export function setTransitionTemplate(rule: SetTransition, returning: "task" | readonly TaskColumn[]): StatementTemplate {
  const byReturning = setTemplates(rule);
  const cacheKey = returning === "task" ? "*" : returning.join(",");
  let template = byReturning.get(cacheKey);
  if (template === undefined) {
    const assignments = flattenAssignments(rule.branches);
    const selection = rule.selection;
    template = {
      params: paramsOfAll([selection.where, ...assignments.values()], [selection.limit]),
      clock: rule.clock,
      build: (c, env) => {
        const set = setList(c, assignments);
        const byId = needsSubquery(selection, env);
        const target = byId ? ` WHERE id IN (${pickIds(c, env, selection)})` : where(c, selection.where);
        const columns = returning === "task" ? env.syntax.taskColumns() : returning.join(", ");
        return `UPDATE ${byId ? tasksById(env) : TASKS_TABLE} SET ${set}${target} RETURNING ${columns}`;
      },
    };
    byReturning.set(cacheKey, template);
  }
  return template;
}

/**
 * A transition of the rows whose ids are the list `ids`, each still matching `guard` (the rule's
 * selection must be exactly `id IN ids AND guard`, without order or limit): `UPDATE … WHERE id IN
 * ids AND CASE WHEN <guard> THEN 1 ELSE 0 END = 1`, the same rows. The guard is wrapped so that no
 * index can serve it and the rows are found by primary key: unwrapped, the claim guard constrains
 * every column of the claim index, and Postgres, on a table not analysed yet, walked that index
 * over every queued row of the name to find one id (6.7 ms at 50,000 queued, against 0.2 ms by
 * primary key; `EXPLAIN ANALYZE` of the group draw).
 */
export function setTransitionByIdsTemplate(rule: SetTransition, ids: ParamExpr, guard: Expr): StatementTemplate {
  const assignments = flattenAssignments(rule.branches);
  return {
    params: paramsOfAll([rule.selection.where, ...assignments.values()]),
    clock: rule.clock,
    build: (c, env) =>
      `UPDATE ${tasksById(env)} SET ${setList(c, assignments)} WHERE ${c.condition(x.inList(x.col("id"), ids)) ?? env.syntax.literal(false)} ` +
      `AND CASE WHEN ${c.condition(guard) ?? "TRUE"} THEN 1 ELSE 0 END = 1 RETURNING ${env.syntax.taskColumns()}`,
  };
}

/** The columns an insert sets (in `TASK_COLUMNS` order) and their values, shared by the single-row and the multi-row insert. */
function insertParts(rule: InsertRule): { columns: TaskColumn[]; values: Expr[] } {
  const columns = TASK_COLUMNS.filter((column) => rule.values[column] !== undefined);
  return { columns, values: columns.map((column) => rule.values[column] as Expr) };
}

/** What an insert returns: every task column, none, or only {@link insertComputedColumns}. */
export type InsertReturning = "task" | "none" | "computed";

const JSON_COLUMN_SET: ReadonlySet<TaskColumn> = new Set(JSON_COLUMNS);

/**
 * The columns of a new row that only the database knows: every value the rule computes in SQL
 * (the clock — `run_at_ms = now + delay`, `created_at_ms`, `updated_at_ms`, each read separately on
 * Postgres, §2.1 — and `root_id = coalesce(…)`) and the JSON columns it sets (`jsonb` keeps neither
 * key order nor number spelling, §2.2). Every other column is a bound parameter or a literal, stored
 * as bound (text inputs are checked storable, integers are in range), or a column default, so the
 * protocol's `buildInsert` over the same parameters gives it exactly.
 */
export function insertComputedColumns(rule: InsertRule): TaskColumn[] {
  return insertParts(rule).columns.filter((column) => {
    const kind = (rule.values[column] as Expr).kind;
    return JSON_COLUMN_SET.has(column) || (kind !== "param" && kind !== "literal");
  });
}

function insertOf(rule: InsertRule, returning: InsertReturning): StatementTemplate {
  const { columns, values } = insertParts(rule);
  const computed = returning === "computed" ? insertComputedColumns(rule) : undefined;
  return {
    params: paramsOfAll(values),
    clock: rule.clock,
    build: (c, env) =>
      `INSERT INTO ${TASKS_TABLE} (${columns.join(", ")}) VALUES (${values.map((v) => c.value(v)).join(", ")})` +
      (returning === "none" ? "" : ` RETURNING ${env.syntax.taskColumns(undefined, computed)}`),
  };
}

const insertTemplates = perRule((rule: InsertRule) => insertOf(rule, "task"));
const plainInsertTemplates = perRule((rule: InsertRule) => insertOf(rule, "none"));
const computedInsertTemplates = perRule((rule: InsertRule) => insertOf(rule, "computed"));

/**
 * The insert of a new task (T1): `INSERT INTO cairnq_tasks (…) VALUES (…) RETURNING *`.
 *
 * @param returning - `"task"` (or `true`): every column. `"none"` (or `false`) leaves `RETURNING`
 *   out: for a process clock, where the caller builds the row with the protocol's `buildInsert`
 *   from the same parameters and `now` the statement bound. `"computed"`: only
 *   {@link insertComputedColumns}, for a database clock, where the caller lays the returned
 *   columns over `buildInsert` (receiving and decoding a submit's 23-column row costs the pg
 *   client about 30 µs more CPU than these six, measured on a loaded 2-core machine).
 */
export function insertTemplate(rule: InsertRule, returning: InsertReturning | boolean = "task"): StatementTemplate {
  const mode = returning === true ? "task" : returning === false ? "none" : returning;
  return (mode === "task" ? insertTemplates : mode === "none" ? plainInsertTemplates : computedInsertTemplates)(rule);
}

function batchInsertOf(rule: InsertRule, returning: boolean): StatementTemplate {
  const { columns, values } = insertParts(rule);
  return multiRowTemplate(
    paramsOfAll(values),
    rule.clock,
    (c, source, env) =>
      `INSERT INTO ${TASKS_TABLE} (${columns.join(", ")}) SELECT ${values.map((v) => c.value(v)).join(", ")} FROM ${source}` +
      (returning ? ` RETURNING ${env.syntax.taskColumns()}` : ""),
  );
}

const batchInsertTemplates = perRule((rule: InsertRule) => batchInsertOf(rule, true));
const plainBatchInsertTemplates = perRule((rule: InsertRule) => batchInsertOf(rule, false));

/**
 * The multi-row form of the insert (T1), for the write combiner:
 * `INSERT INTO cairnq_tasks (…) SELECT <values> FROM <rows> AS b RETURNING *`,
 * every value read per row. One shape; rows must have distinct ids.
 *
 * @param returning - `false` leaves `RETURNING` out, as for {@link insertTemplate}: for a process
 *   clock, where each caller's row is `buildInsert` over its own parameters and the bound `now`.
 */
export function batchInsertTemplate(rule: InsertRule, returning = true): StatementTemplate {
  return (returning ? batchInsertTemplates : plainBatchInsertTemplates)(rule);
}

const deleteTemplates = perRule((rule: DeleteRule): StatementTemplate => {
  const selection = rule.selection;
  return {
    params: paramsOfAll([selection.where], [selection.limit]),
    clock: rule.clock,
    build: (c, env) => `DELETE FROM ${tasksById(env)} WHERE id IN (${pickIds(c, env, selection)}) RETURNING id`,
  };
});

/**
 * Purge (T15): `DELETE FROM cairnq_tasks WHERE id IN (SELECT id … ORDER BY
 * completed_at_ms LIMIT ? [FOR UPDATE SKIP LOCKED]) RETURNING id`. Key rows
 * go with their task through the foreign key's cascade.
 */
export function deleteTemplate(rule: DeleteRule): StatementTemplate {
  return deleteTemplates(rule);
}

/**
 * The order of the §3.5 claim index (`queue, status, priority DESC, run_at_ms, id`) with the status
 * equality left out: the draw's own order (from the protocol's `DRAW`) after the queue. A `LIMIT 1`
 * subquery in this order can only be answered by walking that index from its start.
 */
export const CLAIM_INDEX_ORDER: string = `queue ASC, ${orderText(DRAW.selection.orderBy)}`;

/**
 * The claim probe (§5.10 step 2), read-only: is there a claimable row or an
 * expired lease? By default `SELECT EXISTS(<claimable>) OR EXISTS(<expired>)`,
 * two subqueries each able to use its own index (the claim indexes, the
 * partial lease index); a dialect may phrase it for its planner
 * ({@link SqlSyntax.claimProbe}). The conditions are the protocol's `PROBE`.
 */
export const PROBE_TEMPLATE: StatementTemplate = {
  params: paramsOfAll([PROBE.claimable, PROBE.expired]),
  clock: "statement",
  build: (c, env) => {
    const parts: ClaimProbeParts = {
      table: TASKS_TABLE,
      claimableWhere: where(c, PROBE.claimable),
      expiredWhere: where(c, PROBE.expired),
      claimIndexOrder: CLAIM_INDEX_ORDER,
    };
    return env.syntax.claimProbe === undefined ? existsClaimProbe(parts) : env.syntax.claimProbe(parts);
  },
};

/** `list` (§5.4): optional AND-ed equality filters, newest first. */
export const LIST_TEMPLATE: StatementTemplate = {
  params: paramsOfAll([LIST_FILTER], [P.limit, P.offset]),
  clock: null,
  build: (c, env) =>
    `SELECT ${env.syntax.taskColumns()} FROM ${TASKS_TABLE}${where(c, LIST_FILTER)} ` +
    `ORDER BY created_at_ms DESC, id DESC LIMIT ${c.slot(P.limit)} OFFSET ${c.slot(P.offset)}`,
};

/**
 * `list` in id order (`order: "id"`), with keyset pagination by `beforeId`:
 * `… AND id < ? ORDER BY id DESC LIMIT ?`. The primary key index yields the
 * rows in this order, so a page costs the same at any depth of a large table
 * (a filter with few matches is served by its own index instead).
 */
export const LIST_BY_ID_TEMPLATE: StatementTemplate = {
  params: paramsOfAll([LIST_ROWS], [P.limit, P.offset]),
  clock: null,
  build: (c, env) =>
    `SELECT ${env.syntax.taskColumns()} FROM ${TASKS_TABLE}${where(c, LIST_ROWS)} ` +
    `ORDER BY id DESC LIMIT ${c.slot(P.limit)} OFFSET ${c.slot(P.offset)}`,
};

/** `stats` (§5.5): counts by `(queue, status)`, optionally for one queue. */
export const STATS_TEMPLATE: StatementTemplate = {
  params: paramsOfAll([STATS_ROWS]),
  clock: null,
  build: (c) => `SELECT queue, status, count(*) AS n FROM ${TASKS_TABLE}${where(c, STATS_ROWS)} GROUP BY queue, status`,
};

/** `queue_depth` (§5.6): counts queued rows of one queue over a LIMITed subquery, reading at most `maxDepth` rows. */
export const QUEUE_DEPTH_TEMPLATE: StatementTemplate = {
  params: paramsOfAll([QUEUE_DEPTH_ROWS], [P.maxDepth]),
  clock: null,
  build: (c) =>
    `SELECT count(*) AS n FROM (SELECT 1 AS one FROM ${TASKS_TABLE}${where(c, QUEUE_DEPTH_ROWS)} LIMIT ${c.slot(P.maxDepth)}) AS q`,
};

const BY_ID: Expr = x.eq(x.col("id"), P.taskId);

/** `get` (§5.2): the full row. */
export const GET_TEMPLATE: StatementTemplate = {
  params: [P.taskId],
  clock: null,
  build: (c, env) => `SELECT ${env.syntax.taskColumns()} FROM ${TASKS_TABLE}${where(c, BY_ID)}`,
};

const BY_IDS: Expr = x.inList(x.col("id"), PARAMS.taskIds);

/** Full rows of a list of ids (`taskIds`), in no particular order: what a merged owned write reads back (see `BatchableOwnedWrite.manyLocked`). */
export const GET_MANY_TEMPLATE: StatementTemplate = {
  params: [PARAMS.taskIds],
  clock: null,
  build: (c, env) => `SELECT ${env.syntax.taskColumns()} FROM ${TASKS_TABLE}${where(c, BY_IDS)}`,
};

/** `get_status` (§5.3): `{ id, status }` only. */
export const GET_STATUS_TEMPLATE: StatementTemplate = {
  params: [P.taskId],
  clock: null,
  build: (c) => `SELECT id, status FROM ${TASKS_TABLE}${where(c, BY_ID)}`,
};

function byKey(c: ExprCompiler, env: CompileEnv, key: ParamExpr, columns: string): string {
  return (
    `SELECT ${columns} FROM ${KEYS_TABLE} AS k JOIN ${TASKS_TABLE} AS t ON t.id = k.task_id ` +
    `WHERE k.${env.syntax.quoteId("key")} = ${c.slot(key)}`
  );
}

/** `get_by_key` (§5.2): the row the key points at (a join; a dangling key reads as none). */
export const GET_BY_KEY_TEMPLATE: StatementTemplate = {
  params: [P.key],
  clock: null,
  build: (c, env) => byKey(c, env, P.key, env.syntax.taskColumns("t")),
};

/** `get_status_by_key` (§5.3): re-resolves the key on every call. */
export const GET_STATUS_BY_KEY_TEMPLATE: StatementTemplate = {
  params: [P.key],
  clock: null,
  build: (c, env) => byKey(c, env, P.key, "t.id, t.status"),
};

/** The task a key points at, by id only (`cancel_by_key`, `retry_by_key`, §5.7–5.8). */
export const KEY_TASK_ID_TEMPLATE: StatementTemplate = {
  params: [P.key],
  clock: null,
  build: (c, env) => `SELECT task_id FROM ${KEYS_TABLE} WHERE ${env.syntax.quoteId("key")} = ${c.slot(P.key)}`,
};

/** The key upsert of a keyed submit (§5.1 step 5); keeps `created_at_ms` of an existing key row. */
export const UPSERT_KEY_TEMPLATE: StatementTemplate = {
  params: [P.key, P.taskId],
  clock: "transaction",
  build: (c, env) => env.syntax.upsertKey(c.slot(P.key), c.slot(P.taskId), c.now()),
};

const batchTemplates = perRule((rule: SetTransition): StatementTemplate => {
  const assignments = flattenAssignments(rule.branches);
  const selection = rule.selection;
  return {
    params: paramsOfAll([selection.where, ...assignments.values()], [selection.limit]),
    clock: rule.clock,
    build: (c, env) => {
      const set = setList(c, assignments);
      const guard = c.condition(selection.where);
      const recheck = guard === null ? "" : ` AND ${guard}`;
      return `UPDATE ${tasksById(env)} SET ${set} WHERE id IN (${pickIds(c, env, selection)})${recheck} RETURNING id, parent_id, status`;
    },
  };
});

/**
 * One batch of a bulk cancel or retry (`CANCEL_BATCH`, `RETRY_BATCH`) as ONE
 * statement: `UPDATE … SET <the single rule's branches> WHERE id IN (SELECT
 * id … WHERE <where> ORDER BY id LIMIT ?) AND <where> RETURNING id, parent_id,
 * status` (a child a cancel ended wakes its joining parent). The
 * selection's condition is repeated on the outer UPDATE so that it is
 * evaluated again on each row's current values as it is written: on Postgres
 * a row another transaction changed after the subquery's snapshot is
 * re-checked once its lock is released (READ COMMITTED), so a task that
 * finished meanwhile is left alone, exactly as `cancel(id)` would leave it.
 */
export function batchTransitionTemplate(rule: SetTransition): StatementTemplate {
  return batchTemplates(rule);
}
