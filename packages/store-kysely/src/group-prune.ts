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
 * - **prune**: in a group claim's transaction, at most once per
 *   `GROUP_PRUNE_INTERVAL_MS` per store instance and name ({@link GroupPrune},
 *   on the store's clock), a read of up to `GROUP_PRUNE_BATCH` idle rows of the
 *   claim's name that may go ({@link PRUNABLE}, before the draw's last batch)
 *   and their delete ({@link DELETE_IDLE_GROUPS}, at the end of that batch). A claim that
 *   does not prune sends exactly the statements it sent before pruning existed.
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
 *   `touched + 1`, and the delete re-checks `active = 0` on each row. On
 *   Postgres and MySQL/MariaDB (both READ COMMITTED here) the read locks the
 *   rows it returns (`FOR UPDATE SKIP LOCKED`) and passes over a row a submit
 *   holds (its upsert not yet committed: active again once it commits); a
 *   submit committed after the read's snapshot but before its lock is seen by
 *   the lock's re-check (Postgres re-evaluates `g.active = 0` on the row's
 *   latest version; InnoDB locks the latest version) and by the delete's
 *   `active = 0`. A submit whose upsert comes after the delete waits for the
 *   claim's commit and then inserts the row afresh (Postgres's `ON CONFLICT`
 *   and InnoDB's `ON DUPLICATE KEY UPDATE` both wait on the deleted row's lock,
 *   then find no row): a new group. The prune waits for no lock (the delete
 *   touches only rows the read locked), so it adds no lock cycle. A submit's
 *   task row and group row are one transaction, so no committed state has a
 *   waiting task of a group marked idle by the submit. SQLite has one writer:
 *   the read and the delete see every committed submit and nothing else runs.
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
 * Cost: the read walks the name's inactive rows, for each one a probe of the
 * requeued and of the queued partial index of `cairnq_ext_task_groups` (on
 * MySQL and MariaDB, the walk index on `name, state, group_key`) and a hash
 * probe of the groups with running tasks (read once, over the partial lease
 * index), until it has its batch; the delete probes the primary key per row.
 * With 100,000 idle groups of one name, the read of 1,000 and their delete took
 * 3–4 and 8–13 ms on Postgres 15 (warm), 6–14 and 10–21 ms on MariaDB 10.11,
 * 0.8 and 1.3–1.8 ms on SQLite (a loaded 2-core machine; rows inserted by hand,
 * each pair timed in a transaction rolled back), once a minute per store and
 * name inside one claim; every other claim sends nothing more.
 */
import type { Params } from "@cairnq/protocol/adapter";
import { GROUP_PRUNE_BATCH, GROUP_RUNNING, GROUP_TASK_STATES, groupPruneDue, x } from "@cairnq/protocol/adapter";
import type { CompileEnv, ExprCompiler, StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { QueryRunner } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUPS_TABLE, TASK_GROUPS_TABLE } from "./extension-tables.js";
import { groupRowIn, runningWithGroup } from "./group-reads.js";
import { ACTIVATE_ON_CONFLICT } from "./group-submit.js";

const NAME = x.param("name", "text");
const TASK_IDS = x.param("taskIds", "textList");
/** The waking claim's `groupConcurrency`, or null. */
const CONCURRENCY = x.param("groupConcurrency", "int");
const LIMIT = x.param("limit", "int");
const GROUPS = x.param("groups", "textList");

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
      `WHERE tg.name = ${c.slot(NAME)} AND ${env.syntax.inList("tg.task_id", c.slot(TASK_IDS))} ${ACTIVATE_ON_CONFLICT}`
    );
  },
};

/**
 * No group row of the candidate `g` in `state` (`taskQueued`: whose task is queued), as a scalar probe of that
 * state's partial index: the form `group-draw.ts` uses for "no queued task" (a planner without statistics on a
 * fresh group table ran `NOT EXISTS` as an anti-join over every queued row of the name). Written `COALESCE(…, 0) <> 1`
 * rather than `… IS NULL`: Postgres estimates `IS NULL` of a subquery at 0.5 % of the rows, so with two of them it
 * expected no candidate at all and costed the read as a walk of every group row — over `jit_above_cost` from about
 * 30,000 idle groups, and the JIT compilation then took 30–40 ms of the claim (100,000 idle groups, `EXPLAIN
 * ANALYZE`, where the read itself takes 2 ms); `<> 1` is estimated at 99.5 %.
 */
function noneIn(c: ExprCompiler, env: CompileEnv, state: string, taskQueued: boolean): string {
  return `COALESCE(${groupRowIn(env, c.slot(NAME), "g.group_key", state, taskQueued)}, 0) <> 1`;
}

/**
 * The prune's read: up to `:limit` rows of `:name` that are idle (`active = 0`), hold no waiting work (no group
 * row `requeued`, nor `queued` with its task queued) and no running task (`GROUP_RUNNING`, read once: the name's
 * running tasks with their groups). Where the dialect has `SKIP LOCKED`, the rows are locked as they are read and a
 * row another transaction holds (a submit's upsert not yet committed) is passed over: the prune never waits for a
 * lock, so it can be in no lock cycle.
 */
export const PRUNABLE: StatementTemplate = {
  params: paramsOfAll([GROUP_RUNNING], [NAME, LIMIT]),
  clock: null,
  build: (c, env) => {
    const { queued, requeued } = GROUP_TASK_STATES;
    // `IS NOT NULL`: a running task without a group would make `NOT IN` unknown for every candidate.
    const running = `SELECT w.group_key FROM (${runningWithGroup(c)}) w WHERE w.group_key IS NOT NULL`;
    return (
      `SELECT g.group_key AS group_key FROM ${GROUPS_TABLE} g WHERE g.name = ${c.slot(NAME)} AND g.active = 0 ` +
      `AND ${noneIn(c, env, requeued, false)} AND ${noneIn(c, env, queued, true)} AND g.group_key NOT IN (${running}) ` +
      `LIMIT ${c.slot(LIMIT)}${env.skipLocked ? env.syntax.skipLockedClause : ""}`
    );
  },
};

/**
 * The prune's delete: the rows of `:name` in `:groups` (what {@link PRUNABLE} read), each only if it is still idle
 * (`active = 0`, the fence against a submit: see the module comment), by primary key. Two statements where one with
 * the read as a subquery would do: as one, Postgres joined the candidates to the whole group table (a hash join over a
 * scan of its 100,000 rows: 10 ms of the 19 ms statement), and MariaDB before 11.1 has no semi-join for a single-table
 * `DELETE`; by a bound list every dialect probes the primary key.
 */
export const DELETE_IDLE_GROUPS: StatementTemplate = {
  params: [NAME, GROUPS],
  clock: null,
  build: (c, env) => `DELETE FROM ${GROUPS_TABLE} WHERE name = ${c.slot(NAME)} AND active = 0 AND ${env.syntax.inList("group_key", c.slot(GROUPS))}`,
};

/**
 * When this store instance prunes each name's idle group rows: once on its first group claim of the name, then
 * once per `GROUP_PRUNE_INTERVAL_MS` of its clock (`groupPruneDue`). A prune is noted when it is read: a claim that
 * rolls back (a deadlock retried, an error) leaves it to the next interval.
 */
export class GroupPrune {
  readonly #ext: StoreExtensions;
  /** When this store last pruned each name, on its clock. */
  readonly #lastAtMs = new Map<string, number>();

  constructor(ext: StoreExtensions) {
    this.#ext = ext;
  }

  /**
   * When a prune of `name` is due: reads its prunable rows in the claim transaction `tx` (one statement) and
   * returns the params of their delete ({@link DELETE_IDLE_GROUPS}), for the claim's last batch; `null` when none is
   * due or no row may go (nothing is sent).
   */
  async take(tx: QueryRunner, name: string): Promise<Params | null> {
    const now = this.#ext.dialect.clock.nowMs();
    if (!groupPruneDue(this.#lastAtMs.get(name), now)) return null;
    this.#lastAtMs.set(name, now);
    const { rows } = await this.#ext.exec(tx, PRUNABLE, { name, limit: GROUP_PRUNE_BATCH });
    return rows.length === 0 ? null : { name, groups: rows.map((row) => String(row.group_key)) };
  }
}
