/**
 * The life of a group row (`cairnq_ext_groups`, one per name and group): how
 * a group claim wakes a group, creating its row when it is missing, and how it
 * deletes idle ones. The rule is `GROUP_PRUNE_BATCH` in `@cairnq/protocol`
 * `groups.ts`; this file is the SQL and the bookkeeping.
 *
 * Terminology:
 * - **wake**: a statement that sets a group's `active = 1` (the group may have
 *   queued work again). A grouped submit (`group-submit.ts`) and a group
 *   claim's wake ({@link WAKE}: tasks a fail, a retry, a park or lease
 *   recovery sent back, or found at the head of the plain claim order) are
 *   all of them, and each creates the row when it is missing, in the same
 *   statement, as a new group (`served_seq` 0, `active` 1, `touched` 0).
 * - **prune**: one statement of a group claim's transaction ({@link PRUNE})
 *   that deletes up to `GROUP_PRUNE_BATCH` idle rows of the claim's name: at
 *   most once per `GROUP_PRUNE_INTERVAL_MS` per store instance and name
 *   ({@link GroupPrune}), on the store's clock. A claim that does not prune
 *   sends exactly the statements it sent before pruning existed.
 *
 * Why a missing row is safe: every read treats it as an idle group (the head
 * read's `active` is null, which wakes the group; the page read skips it, as
 * it skips an inactive one; `taskGroup` reads no limit, `groupStats` does not
 * read the table), and every wake recreates it. So deleting a row is never
 * wrong for correctness; the rule only keeps what a row still means: the place
 * in the served order of a group with waiting work, and the limit `explain`
 * shows for a group with running tasks.
 *
 * Races (the prune runs under the name's flow lock, so no group claim of the
 * name — and so no wake by a claim — runs beside it; what can run beside it
 * is a grouped submit, a claim without group limits or a v1 peer, and a fail
 * or retry with its mark):
 * - a grouped submit's upsert sets `active = 1` in the same statement as
 *   `touched + 1`, and the delete re-checks `active = 0` on the row it locks.
 *   On Postgres (READ COMMITTED) a delete that waited for the submit's row
 *   lock re-evaluates its own table's conditions on the new row version
 *   (`active = 1`: not deleted), though its subqueries still read the
 *   statement's snapshot; a submit whose upsert comes after the delete waits
 *   for the claim's commit and then inserts the row afresh (a new group). On
 *   MySQL/MariaDB (READ COMMITTED, `mysql-connection.ts`) the delete takes
 *   record locks on the rows it deletes and reads the other tables without
 *   locks; a submit's `INSERT … ON DUPLICATE KEY UPDATE` that meets the
 *   deleted record waits for the claim's commit and then inserts. The prune
 *   is the last statement of the claim before its read-only tail, so the
 *   claim waits for no lock while holding the deleted rows: no lock cycle.
 *   SQLite has one writer: the statement sees every committed submit.
 * - a claim without group limits (or a v1 peer) takes a queued task of a
 *   group: its row stays `queued` and the task is `running`, which holds the
 *   group (condition 3; before the take, condition 2). It ends: nothing holds
 *   the group, and a retry of the task marks its row and the next group claim
 *   wakes the group (recreating its row).
 * - a retry of a task of the group (`claimed` row, terminal task) committed
 *   before the prune's snapshot: its row is `requeued` (held) — unless the
 *   mark (a statement after the retry commits) comes later, and then the next
 *   group claim reads the mark and wakes the group, recreating its row. A
 *   retry by a v1 peer marks nothing: its task waits for the head of the
 *   plain order, as a task of an idle group does, and wakes the group there.
 *
 * Cost: the prune walks the name's inactive rows (`cairnq_ext_groups_served_idx`
 * on `name, active`), for each one a probe of the queued and of the requeued
 * partial index of `cairnq_ext_task_groups` (on MySQL, the walk index on
 * `name, state, group_key`) and a hash probe of the groups with running tasks
 * (read once, over the partial lease index), until it has its batch; then
 * deletes them by primary key.
 */
import type { CompiledQuery } from "kysely";
import type { Params } from "@cairnq/protocol/adapter";
import { GROUP_PRUNE_BATCH, GROUP_RUNNING, GROUP_TASK_STATES, groupPruneDue, x } from "@cairnq/protocol/adapter";
import type { CompileEnv, ExprCompiler, StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { Row } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUPS_TABLE, TASK_GROUPS_TABLE } from "./extension-tables.js";
import { runningWithGroup } from "./group-reads.js";
import { TASKS_TABLE } from "./statements.js";

const NAME = x.param("name", "text");
const TASK_IDS = x.param("taskIds", "textList");
/** The waking claim's `groupConcurrency`, or null. */
const CONCURRENCY = x.param("groupConcurrency", "int");
const LIMIT = x.param("limit", "int");

/**
 * The wake of a group claim of `:name`: the groups of the tasks `:taskIds` become active (`touched` bumped, as a
 * submit bumps it, so a claim that read the group before does not put it to sleep again), and a group without a
 * row gets one as a grouped submit creates it — with the waking claim's `groupConcurrency` as the limit last
 * enforced (the claim reads the group next and enforces it), so `explain` shows it at once. By task id (the
 * group rows' primary key) rather than by group key: the wake comes from tasks, and the task rows name their
 * groups, so no dialect needs a list-as-rows form. `DISTINCT`: Postgres refuses an upsert that meets one row twice.
 */
export const WAKE: StatementTemplate = {
  params: [NAME, TASK_IDS, CONCURRENCY],
  clock: null,
  build: (c, env) => {
    const limit = c.has(CONCURRENCY);
    return (
      `INSERT INTO ${GROUPS_TABLE} (name, group_key, served_seq, active, touched${limit ? ", concurrency_limit" : ""}) ` +
      `SELECT DISTINCT tg.name, tg.group_key, 0, 1, 0${limit ? `, ${c.slot(CONCURRENCY)}` : ""} FROM ${TASK_GROUPS_TABLE} tg ` +
      `WHERE tg.name = ${c.slot(NAME)} AND ${env.syntax.inList("tg.task_id", c.slot(TASK_IDS))} ` +
      `ON CONFLICT (name, group_key) DO UPDATE SET active = 1, touched = ${GROUPS_TABLE}.touched + 1`
    );
  },
};

/**
 * No group row of the candidate `g` in `state` (`taskQueued`: whose task is queued), as a scalar probe of that
 * state's partial index: the form `group-draw.ts` uses for "no queued task" (a planner without statistics on a
 * fresh group table ran `NOT EXISTS` as an anti-join over every queued row of the name).
 */
function noneIn(c: ExprCompiler, env: CompileEnv, state: string, taskQueued: boolean): string {
  const queued = taskQueued ? ` AND (SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = tg.task_id) = ${env.syntax.literal("queued")}` : "";
  return (
    `(SELECT 1 FROM ${TASK_GROUPS_TABLE} tg WHERE tg.name = ${c.slot(NAME)} AND tg.state = ${env.syntax.literal(state)} ` +
    `AND tg.group_key = g.group_key${queued} LIMIT 1) IS NULL`
  );
}

/**
 * The prune: deletes up to `:limit` rows of `:name` that are idle (`active = 0`), hold no waiting work (no group
 * row `requeued`, nor `queued` with its task queued) and no running task (`GROUP_RUNNING`, read once: the name's
 * running tasks with their groups). `active = 0` is checked again on each row as it is deleted (the fence against
 * a concurrent submit, see the module comment). The candidates are a derived table: MySQL refuses both `LIMIT`
 * inside `IN` and a subquery on the table being changed, and materialises a derived table first. Where the
 * dialect has `SKIP LOCKED`, the candidates are locked as they are read and a row another transaction holds (a
 * submit's upsert not yet committed) is passed over, so the prune never waits for a lock.
 */
export const PRUNE: StatementTemplate = {
  params: paramsOfAll([GROUP_RUNNING], [NAME, LIMIT]),
  clock: null,
  build: (c, env) => {
    const { queued, requeued } = GROUP_TASK_STATES;
    // `IS NOT NULL`: a running task without a group would make `NOT IN` unknown for every candidate.
    const running = `SELECT w.group_key FROM (${runningWithGroup(c)}) w WHERE w.group_key IS NOT NULL`;
    const candidates =
      `SELECT g.group_key AS group_key FROM ${GROUPS_TABLE} g WHERE g.name = ${c.slot(NAME)} AND g.active = 0 ` +
      `AND ${noneIn(c, env, requeued, false)} AND ${noneIn(c, env, queued, true)} AND g.group_key NOT IN (${running}) LIMIT ${c.slot(LIMIT)}${env.skipLocked ? env.syntax.skipLockedClause : ""}`;
    return `DELETE FROM ${GROUPS_TABLE} WHERE name = ${c.slot(NAME)} AND active = 0 AND group_key IN (SELECT p.group_key FROM (${candidates}) p)`;
  },
};

/**
 * When this store instance prunes each name's idle group rows: once on its first group claim of the name, then
 * once per `GROUP_PRUNE_INTERVAL_MS` of its clock (`groupPruneDue`). A prune is noted when its statement is
 * handed out: a claim that rolls back (a deadlock retried, an error) leaves it to the next interval.
 */
export class GroupPrune {
  readonly #ext: StoreExtensions;
  /** When this store last handed out the prune of each name, on its clock. */
  readonly #lastAtMs = new Map<string, number>();

  constructor(ext: StoreExtensions) {
    this.#ext = ext;
  }

  /** The prune of `name`'s idle group rows when one is due (then noted as done), else `null`. */
  take(name: string): CompiledQuery<Row> | null {
    const now = this.#ext.dialect.clock.nowMs();
    if (!groupPruneDue(this.#lastAtMs.get(name), now)) return null;
    this.#lastAtMs.set(name, now);
    const params: Params = { name, limit: GROUP_PRUNE_BATCH };
    return this.#ext.statements.compiler.statement(PRUNE, params).query(params);
  }
}
