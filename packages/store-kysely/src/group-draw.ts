/**
 * The group draw of a claim cycle: how one draw of a grouped name (a name
 * whose claim carries `groupConcurrency` or `groupRateLimit`) picks its rows.
 * The rules are `@cairnq/protocol` `groups.ts`; this file is the SQL. It runs
 * inside the claim transaction, after lease recovery, under the per-name
 * flow lock ({@link FlowControlStep}), so its reads and writes are one
 * serialised step per name:
 *
 * 1. Running counts: the name's running tasks (`GROUP_RUNNING`: running,
 *    with a lease, over the partial lease index), each with its group row by
 *    key — the group running counts, except those held by an attempt whose
 *    settlement this store has in flight (`SettlementsInFlight`: their
 *    handlers ended). Bounded by what runs; whichever claim took a task, it
 *    counts. With them, the name's `requeued` group rows (tasks a fail, a
 *    retry, a park or lease recovery sent back: `group-requeue.ts`), which
 *    go back to their group's walk (`queued`, and the group wakes — its row
 *    created when a prune deleted it: `group-prune.ts`), or to
 *    `claimed` when their task is no longer queued. So a task that ends
 *    needs no write here: the claim's one write per task is the one that
 *    takes it out of its group's walk (`queued` → `claimed`).
 * 2. The head of the plain claim order (a few rows): tasks without a group
 *    are taken there (first in the rotation), and a grouped task found there
 *    whose group row is not `queued` (a task a v1 peer requeued, or a store
 *    that never used groups) is put back in its group, and one whose group is
 *    inactive wakes it (a task a claim without group limits took, its row
 *    left `queued`, that came back after its group went idle with no mark:
 *    its lease recovered by such a claim, or a v1 peer's fail).
 *    Steps 1 and 2 are one statement.
 * 3. Pages of the name's active groups in served order, skipping groups at
 *    their concurrency limit (after the first page) and, with `groupRateLimit`,
 *    groups whose rate window is full (every page: the read counts each group's
 *    claims in the window), each page read with each group's best due
 *    tasks in the same statement (a correlated `ORDER BY … LIMIT` read per
 *    group over the walk index — `LATERAL` on Postgres, one JSON list per
 *    group on SQLite — so a group's backlog is never scanned), as many as the
 *    rotation could pick from the group (`groupReadDepth`: the smaller of the
 *    group limits and the cap less the ungrouped tasks and the eligible groups
 *    read ahead of it). Until enough work was seen, or
 *    `GROUP_PAGES` pages that gave work, or `GROUP_SCAN_PAGES` pages in all
 *    (pages of groups without due work count only there).
 * 4. `rotateGroups` picks; then ONE batch (one round trip on Postgres,
 *    `StoreExecutor.batch`): `GROUP_DRAW` takes the picked ids (guarded again
 *    by the draw's predicate), and the writes after it, each guarded by what
 *    the draw took rather than waiting for its result: the group rows of the
 *    taken tasks become `claimed` (out of the walk), the
 *    served groups move to the back of the served order (`served_seq` = the
 *    highest + 1, and the `groupConcurrency` enforced is noted for
 *    `explain`), their claims are recorded for `groupRateLimit` (and the limit, for `explain`, when due), and groups
 *    found without any queued task — or whose due work the draw took to the
 *    last task, in the same statement as their served order — go inactive
 *    (guarded by `touched`, which every submit to the group bumps, so a
 *    concurrent submit is never lost); the groups read in pages that gave no
 *    work whose queued tasks are none of them due go to the back of the
 *    served order (`PASSED`), so they never fill the pages of the claims
 *    after it. Once a minute per store and name, a prune (`group-prune.ts`)
 *    reads the idle rows that may go before the batch, deleted at its end.
 *
 * The read of steps 1 and 2 depends only on the claim's queues, and the first
 * page of step 3 only on them and the size of the claim's first draw (a group
 * at its concurrency limit is then skipped by its allowance, not by the read):
 * the claim sends both with `BEGIN`, lease recovery and the flow lock
 * (`FlowControlStep.headStatements`, {@link GroupDraw.firstPage}). When the
 * draw planner marks the draw last and nothing else follows it, step 4's batch
 * also carries the probe again and `COMMIT` (`StoreExecutor.batchLast`,
 * {@link ClaimEnd}). So on Postgres a group claim is two round trips (the
 * head, the draw's batch) unless step 1 or 2 woke a group (its writes go with a
 * page read afresh) or the first page did not hold enough work. The group
 * rows of tasks the claim's own lease recovery requeued are marked
 * `requeued` right after the locks (`group-requeue.ts`, by the ids recovery
 * returns), and the draw then reads afresh.
 */
import { RATE_LIMIT_SCOPES, type Task } from "@cairnq/protocol";
import type { CompiledQuery, QueryResult } from "kysely";
import type { GroupCandidates, GroupLimits, ParamExpr, Params } from "@cairnq/protocol/adapter";
import {
  CLAIMABLE,
  compareGroupWalk,
  countsAsGroupRunning,
  GROUP_DRAW,
  GROUP_HEAD_ROWS,
  headGroupRowAction,
  GROUP_RUNNING,
  GROUP_TASK_IDS,
  GROUP_TASK_STATES,
  groupAllowance,
  groupReadDepth,
  rotateGroups,
  wakeGroupTask,
  x,
} from "@cairnq/protocol/adapter";
import type { CompileEnv, ExprCompiler, StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { QueryRunner, Row } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_RATE_CLAIMS_TABLE, GROUPS_TABLE, TASK_GROUPS_TABLE } from "./extension-tables.js";
import type { GroupPrune } from "./group-prune.js";
import { DELETE_IDLE_GROUPS, WAKE } from "./group-prune.js";
import { groupRowIn } from "./group-reads.js";
import type { RateLimitWrites } from "./rate-limit-records.js";
import { rateWindowSql, RECORD_RATE_LIMIT } from "./rate-window-reads.js";
import { decodeTask } from "./rows.js";
import { inSubqueryJoin } from "./sql-syntax.js";
import { setTransitionByIdsTemplate, TASKS_TABLE } from "./statements.js";

const NAME = x.param("name", "text");
const GROUPS = x.param("groups", "textList");
const TASK_IDS = x.param("taskIds", "textList");
const PER_GROUP = x.param("perGroup", "int");
const STATE = x.param("state", "text");
const QUEUES = x.param("queues", "textList");
const IN_QUEUES = x.inList(x.col("queue"), QUEUES);
const LIMIT = x.param("limit", "int");
const PER_MS = x.param("perMs", "int");
/** `groupRateLimit.max` where the claim carries one (a page then skips the groups whose window is full), else null. */
const RATE_MAX = x.param("rateMax", "int");
const AFTER_SEQ = x.param("afterSeq", "int");
const AFTER_GROUP = x.param("afterGroup", "text");
const GUARDS = x.param("guards", "textList");
const CLAIMED_IDS = x.param("claimedIds", "textList");
const SETTLING = x.param("settling", "textList");
const IDLE = x.param("idle", "textList");
const FROM_SEQ = x.param("fromSeq", "int");
const FROM_GROUP = x.param("fromGroup", "text");
const TO_SEQ = x.param("toSeq", "int");
const TO_GROUP = x.param("toGroup", "text");
const MOVED = x.param("moved", "textList");
/** The status the running read gives a task held by an attempt whose settlement the claiming store has in flight. */
const SETTLING_STATUS = "settling";

const QUEUED = GROUP_TASK_STATES.queued;
const CLAIMED = GROUP_TASK_STATES.claimed;
const REQUEUED = GROUP_TASK_STATES.requeued;

/** How many pages of active groups that gave work one group draw visits at most (step 3). */
export const GROUP_PAGES = 4;
/**
 * How many pages one group draw visits at most, counting those whose groups had no due work (step 3):
 * a claim passes that many groups with only delayed tasks at most, and moves them behind (`PASSED`).
 */
export const GROUP_SCAN_PAGES = 16;
/** The fewest groups per page (a draw for one row still looks past a few groups without due work). */
export const GROUP_PAGE_MIN = 16;

/** Sets the state of the group rows of `:taskIds`. */
const SET_STATE: StatementTemplate = {
  params: [STATE, TASK_IDS],
  clock: null,
  build: (c, env) => `UPDATE ${TASK_GROUPS_TABLE} SET state = ${c.slot(STATE)} WHERE ${env.syntax.inList("task_id", c.slot(TASK_IDS))}`,
};

/**
 * Step 4: the group rows of `:claimedIds` whose task the draw took (it is `running` now: the statement
 * follows the draw in the same batch, so a picked task the draw skipped keeps its row) become `claimed`:
 * out of their group's walk. The claim's only write per grouped task.
 */
const SET_CLAIMED: StatementTemplate = setClaimed(true);

/**
 * {@link SET_CLAIMED} without reading each task's status, where the claim transaction is the database's
 * only writer (the dialect has no `skipLocked`: SQLite): between the page read that found the picked
 * tasks queued and due and the draw, nothing else can take one, so the draw takes every picked id.
 * 64 fewer primary-key reads of the task rows per claim of 64.
 */
const SET_CLAIMED_SOLE_WRITER: StatementTemplate = setClaimed(false);

/** The group rows of `:claimedIds` become `claimed`; `taken`: only those whose task is `running` now (the draw took it). */
function setClaimed(taken: boolean): StatementTemplate {
  return {
    params: [CLAIMED_IDS],
    clock: null,
    build: (c, env) =>
      `UPDATE ${TASK_GROUPS_TABLE} SET state = ${env.syntax.literal(CLAIMED)} WHERE ${env.syntax.inList("task_id", c.slot(CLAIMED_IDS))}` +
      (taken ? ` AND (SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = ${TASK_GROUPS_TABLE}.task_id) = ${env.syntax.literal("running")}` : ""),
  };
}

/**
 * Steps 1 and 2 in one read: the name's running tasks with their group (`kind` 0: from the task rows,
 * over the partial lease index, each group row by key), the name's `requeued` group rows with their
 * task's status (`kind` 2), then the head of the plain claim order of the draw's name (`kind` 1: the
 * draw's own predicate, compiled as the draw compiles it, so it walks the claim index in order), with
 * each row's group row if any and whether its group is `active` (by primary key). One statement: nothing is written between them. With `settling`, a
 * running task held by an attempt whose settlement this store has in flight reads as `settling`
 * (`:settling` holds their fences); without (SQLite, or nothing in flight) the bare status.
 */
function runningAndHead(settling: boolean): StatementTemplate {
  return {
    params: paramsOfAll([CLAIMABLE, GROUP_RUNNING], settling ? [NAME, LIMIT, SETTLING] : [NAME, LIMIT]),
    clock: "statement",
    build: (c, env) => {
      const status = settling
        ? `CASE WHEN ${env.syntax.inList(`(r.id || '#' || r.attempt || '#' || r.worker_id)`, c.slot(SETTLING))} ` +
          `THEN ${env.syntax.literal(SETTLING_STATUS)} ELSE r.status END`
        : "r.status";
      return (
        `SELECT 0 AS kind, r.id AS id, (SELECT tg.group_key FROM ${TASK_GROUPS_TABLE} tg WHERE tg.task_id = r.id) AS group_key, NULL AS state, ` +
        `${status} AS status, 0 AS priority, 0 AS run_at_ms, 1 AS active FROM (SELECT id, attempt, worker_id, status FROM ${TASKS_TABLE} ` +
        `WHERE ${c.condition(GROUP_RUNNING) ?? "TRUE"}) r ` +
        `UNION ALL SELECT 2 AS kind, tg.task_id AS id, tg.group_key AS group_key, tg.state AS state, ` +
        `(SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = tg.task_id) AS status, 0 AS priority, 0 AS run_at_ms, 1 AS active ` +
        `FROM ${TASK_GROUPS_TABLE} tg WHERE tg.name = ${c.slot(NAME)} AND tg.state = ${env.syntax.literal(REQUEUED)} ` +
        `UNION ALL SELECT 1 AS kind, h.id AS id, tg.group_key AS group_key, tg.state AS state, NULL AS status, h.priority AS priority, h.run_at_ms AS run_at_ms, ` +
        `(SELECT g.active FROM ${GROUPS_TABLE} g WHERE g.name = tg.name AND g.group_key = tg.group_key) AS active ` +
        `FROM (SELECT id, priority, run_at_ms FROM ${TASKS_TABLE} ` +
        `WHERE ${c.condition(CLAIMABLE) ?? "TRUE"} ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ${c.slot(LIMIT)}) h ` +
        `LEFT JOIN ${TASK_GROUPS_TABLE} tg ON tg.task_id = h.id ORDER BY kind ASC, priority DESC, run_at_ms ASC, id ASC`
      );
    },
  };
}
const RUNNING_AND_HEAD = runningAndHead(false);
const RUNNING_AND_HEAD_SETTLING = runningAndHead(true);

/**
 * Step 3: one page of the name's active groups in served order, after `(:afterSeq, :afterGroup)`,
 * skipping `:groups` and, with `:rateMax`, the groups whose rate window is full (`:rateMax` claims
 * recorded in `(now − :perMs, now]`), each with its best due tasks (at most `:perGroup`, by priority,
 * then oldest: a read per group over the walk index, so a group's backlog is never scanned) and its
 * claims in the window (`rate_n`, 0 without `:rateMax`). One statement where a page, its groups' tasks
 * and their rate windows were three. Where the syntax has `topRowsList` (SQLite), one row per
 * group, its tasks as the JSON array `ids` of `[priority, task_id]`; otherwise a row per task, and a
 * group without any comes once with a null `id` ({@link pageGroups} reads both).
 *
 * A group whose window is full is skipped by the read, as one at its concurrency limit is by `:groups`,
 * so it takes no place in a page: read and then passed over, 16 pages of them kept a claim from every
 * group behind them until their windows passed (`group-rate-full-skipped`). Its window is judged on
 * the statement's clock under the flow lock; a window that frees during the claim waits for the next.
 */
const PAGE_WITH_BEST: StatementTemplate = {
  params: [NAME, QUEUES, GROUPS, AFTER_SEQ, AFTER_GROUP, LIMIT, PER_GROUP, RATE_MAX, PER_MS],
  clock: "statement",
  build: (c, env) => {
    const walk =
      `FROM ${TASK_GROUPS_TABLE} tg WHERE tg.name = ${c.slot(NAME)} AND tg.state = ${env.syntax.literal(QUEUED)} ` +
      `AND tg.group_key = g.group_key AND ${taskIsDue(c, env)} ORDER BY tg.priority DESC, tg.task_id ASC LIMIT ${c.slot(PER_GROUP)}`;
    // The group's claims in the window: a range of the rate index, at most `max` rows (older ones are pruned by each claim).
    const inWindow = c.has(RATE_MAX)
      ? `(SELECT count(*) FROM ${GROUP_RATE_CLAIMS_TABLE} rc WHERE rc.name = ${c.slot(NAME)} AND rc.group_key = ${GROUPS_TABLE}.group_key ` +
        `AND ${rateWindowSql(c, PER_MS, { column: "rc.claimed_at_ms" })})`
      : null;
    const page =
      `SELECT group_key, served_seq, touched, ${inWindow ?? "0"} AS rate_n FROM ${GROUPS_TABLE} WHERE name = ${c.slot(NAME)} AND active = 1 ` +
      `AND (served_seq > ${c.slot(AFTER_SEQ)} OR (served_seq = ${c.slot(AFTER_SEQ)} AND group_key > ${c.slot(AFTER_GROUP)})) ` +
      `AND NOT (${env.syntax.inList("group_key", c.slot(GROUPS))}) ${inWindow === null ? "" : `AND ${inWindow} < ${c.slot(RATE_MAX)} `}` +
      `ORDER BY served_seq ASC, group_key ASC LIMIT ${c.slot(LIMIT)}`;
    const list = env.syntax.topRowsList?.(`SELECT tg.priority AS priority, tg.task_id AS task_id ${walk}`, ["priority", "task_id"]) ?? null;
    if (list !== null) {
      return `SELECT g.group_key AS group_key, g.served_seq AS served_seq, g.touched AS touched, g.rate_n AS rate_n, ${list} AS ids FROM (${page}) g ORDER BY g.served_seq ASC, g.group_key ASC`;
    }
    const best = `SELECT tg.task_id AS task_id ${walk}`;
    const join = env.syntax.topRowsJoin?.(TASK_GROUPS_TABLE, "b", "task_id", best) ?? inSubqueryJoin(TASK_GROUPS_TABLE, "b", "task_id", best);
    return (
      `SELECT g.group_key AS group_key, g.served_seq AS served_seq, g.touched AS touched, g.rate_n AS rate_n, b.task_id AS id FROM (${page}) g ` +
      `${join} ORDER BY g.served_seq ASC, g.group_key ASC, b.priority DESC, b.task_id ASC`
    );
  },
};

/** A page's groups in served order with their best due tasks, best first, from either shape of {@link PAGE_WITH_BEST}'s rows. */
export function pageGroups(rows: readonly Row[]): { group: string; seq: number; touched: number; inWindow: number; taskIds: string[] }[] {
  const paged: { group: string; seq: number; touched: number; inWindow: number; taskIds: string[] }[] = [];
  for (const row of rows) {
    const group = String(row.group_key);
    let entry = paged[paged.length - 1];
    if (entry?.group !== group) {
      entry = { group, seq: Number(row.served_seq), touched: Number(row.touched), inWindow: Number(row.rate_n ?? 0), taskIds: [] };
      paged.push(entry);
    }
    if (typeof row.ids === "string") {
      // The list's own order is not promised: sorted in the group's order.
      const tasks = (JSON.parse(row.ids) as [number, string][]).map(([priority, taskId]) => ({ priority, taskId })).sort(compareGroupWalk);
      for (const { taskId } of tasks) entry.taskIds.push(taskId);
    } else if (typeof row.id === "string") entry.taskIds.push(row.id);
  }
  return paged;
}

/**
 * Whether the task of the group row `tg` is queued, due and in the claim's queues, as a scalar
 * subquery on its primary key. Written so on purpose: as a join, a planner without statistics on a
 * fresh group table (Postgres) walked the claim index for every group row — 285 ms per claim where
 * this takes under 1 ms (bench/run.mjs --only groups, 10 groups × 400 tasks).
 */
function taskIsDue(c: ExprCompiler, env: CompileEnv, inQueues = true): string {
  const queues = inQueues ? (c.condition(IN_QUEUES) ?? "TRUE") : "TRUE";
  return (
    `(SELECT CASE WHEN status = ${env.syntax.literal("queued")} AND ${queues} AND run_at_ms <= ${c.now()} THEN 1 ELSE 0 END ` +
    `FROM ${TASKS_TABLE} t WHERE t.id = tg.task_id) = 1`
  );
}

/**
 * One past the name's highest `served_seq`, active groups and inactive ones alike: the back of the served order.
 * An inactive group keeps its number until it has work again, so a group served after it must get a higher one: from
 * the active groups alone, a group served after one that went idle holding the highest number got that same number,
 * and came first by key once the idle one had work again (`group-served-order-after-idle`). The two highest of the
 * served index, one per `active` value, so each is one probe of the index's end rather than a walk of the name's groups.
 */
function backOfServed(c: ExprCompiler): string {
  const highest = (active: number): string => `SELECT max(g2.served_seq) AS seq FROM ${GROUPS_TABLE} g2 WHERE g2.name = ${c.slot(NAME)} AND g2.active = ${active}`;
  return `(SELECT max(b.seq) FROM (${highest(1)} UNION ALL ${highest(0)}) b) + 1`;
}

/**
 * Step 4: the served groups go to the back of the served order: one past the name's highest
 * `served_seq` ({@link backOfServed}; an inactive group keeps its number, so once it has work again
 * it is among the least recently served, as it should be).
 * The groups the rotation served, by key: the statement does not check that the draw took their
 * picks (under the flow lock only a claim without group limits, or a v1 peer, can take a picked task
 * first, and then the group merely moves back one rotation early). Checking it cost a read of the
 * picked rows in every claim — by state, a planner walked the name's `claimed` rows (every task a
 * group claim ever took: 12 ms per claim on Postgres); by key, Postgres joined the subquery to each
 * group and walked the walk index per group (7 ms).
 *
 * The served groups of `:idle` — those whose due work the draw takes to the last task — go inactive in
 * the same statement, on the same terms as {@link PASSED} (`:guards`, no queued task left): one
 * write per such group where two statements wrote it twice (over 10,000 groups, nearly every group a
 * claim serves). The `max` is read once, before the statement writes a row (SQLite evaluates it at the
 * first row it updates, which is a served one; Postgres reads the statement's snapshot).
 *
 * The served groups are found in the span of the served order the claim's pages covered, from the
 * first served group to the last (`(:fromSeq, :fromGroup)` to `(:toSeq, :toGroup)`, as the pages read
 * them: active, and nothing but this serialised step moves a group in the served order), then by key:
 * a range of the served index bounded by the pages read. By key alone, Postgres's plan on a group
 * table not analysed yet (its estimate for a name is a few rows, for the 64 keys 64 index probes) read
 * every group of the name through the served index (1–2.6 ms per claim of 64 at 2,600 groups,
 * `bench/group-cycle.mjs`), where the span reads the page's rows.
 */
function served(span: Span): StatementTemplate {
  return {
    params: [NAME, GROUPS, LIMIT, IDLE, GUARDS, ...spanParams(span)],
    clock: null,
    build: (c, env) =>
      `UPDATE ${GROUPS_TABLE} SET served_seq = ${backOfServed(c)}, ` +
      `concurrency_limit = ${c.has(LIMIT) ? c.slot(LIMIT) : "NULL"}, ` +
      `active = CASE WHEN ${idleCondition(c, env, IDLE)} THEN 0 ELSE active END ` +
      `WHERE ${inSpan(c, span)} AND ${env.syntax.inList("group_key", c.slot(GROUPS))}`,
  };
}

/**
 * How a span of the served order is bounded: `same` when it lies within one `served_seq` (every group
 * never served has 0; a claim gives all it serves the same next number), `across` otherwise.
 */
type Span = "same" | "across";

/**
 * The active groups of `:name` in the span `(:fromSeq, :fromGroup)` to `(:toSeq, :toGroup)` of the served order
 * (a range of the served index): where {@link SERVED} and {@link PASSED} find the groups a claim's pages read.
 * Within one `served_seq` the group keys bound both ends of the range (`same`). Across several, as row comparisons:
 * a B-tree starts at the lower row exactly, but Postgres (before 18) ends a row-comparison range by its first
 * column only, so it reads on through the groups sharing `:toSeq` — those of the one claim that served them
 * last, where ending by the first column alone within `served_seq` 0 read every group never served (1 ms at
 * 10,000 groups for a claim that served one).
 */
function inSpan(c: ExprCompiler, span: Span): string {
  const bounds =
    span === "same"
      ? `served_seq = ${c.slot(FROM_SEQ)} AND group_key >= ${c.slot(FROM_GROUP)} AND group_key <= ${c.slot(TO_GROUP)}`
      : `(served_seq, group_key) >= (${c.slot(FROM_SEQ)}, ${c.slot(FROM_GROUP)}) AND (served_seq, group_key) <= (${c.slot(TO_SEQ)}, ${c.slot(TO_GROUP)})`;
  return `name = ${c.slot(NAME)} AND active = 1 AND ${bounds}`;
}

/** The parameters {@link inSpan} reads. */
function spanParams(span: Span): ParamExpr[] {
  return span === "same" ? [FROM_SEQ, FROM_GROUP, TO_GROUP] : [FROM_SEQ, FROM_GROUP, TO_SEQ, TO_GROUP];
}

/** The span of the served order that `groups` (paged, in served order; at least one) lie in, as {@link inSpan} reads it. */
function spanOf(groups: readonly PagedGroup[]): { span: Span; params: Params } {
  const from = groups[0] as PagedGroup;
  const to = groups[groups.length - 1] as PagedGroup;
  return { span: from.seq === to.seq ? "same" : "across", params: { fromSeq: from.seq, fromGroup: from.group, toSeq: to.seq, toGroup: to.group } };
}

const SERVED: Readonly<Record<Span, StatementTemplate>> = { same: served("same"), across: served("across") };

/**
 * Step 4: the groups of `:groups` the pages passed without due work (only tasks not yet due, or in other
 * queues, or none at all), in one statement:
 * - those without any queued task go inactive, each unless a submit touched it since it was read
 *   (`:guards` holds `<group>#<touched>` as read; a group key may hold `#`, the count never does, so the
 *   pair is read back unambiguously). They keep their place, so once they have work again they are among
 *   the least recently served;
 * - those of `:moved` (read in pages that gave no work) with no due task in any queue go to the back of
 *   the served order as served groups do ({@link backOfServed}; by key among themselves): left in place,
 *   groups with only delayed tasks would fill the first pages of every claim and keep it from the groups
 *   behind them that have due work. Keeping the passed groups' gaps (`+ served_seq − :fromSeq`) instead
 *   doubled the highest `served_seq` with every claim that passed a never-served group
 *   (`group-passed-order-bounded`);
 * - the others keep their place: a group with due work in another queue, moved back by this queue's
 *   claims, would be starved or have its own queue's rotation reset (`group-other-queue-not-starved`,
 *   `group-other-queue-rotation`), and groups in a page that gave work fill no claim's pages.
 * "No queued task" is a scalar subquery per group (`… LIMIT 1) IS NULL`), not `NOT EXISTS`: a planner
 * without statistics on a fresh group table (Postgres) ran `NOT EXISTS` as an anti-join that read every
 * queued row of the name for each group — 190 ms to 1.9 s per claim over 10,000 groups (`auto_explain`).
 * The highest `served_seq` is read once (see {@link served}); a row made inactive before it is read
 * leaves every moved group behind every group still active all the same.
 */
function passed(span: Span): StatementTemplate {
  return {
    params: [NAME, GROUPS, GUARDS, MOVED, ...spanParams(span)],
    clock: "statement",
    build: (c, env) => {
      const idle = idleCondition(c, env, GROUPS);
      const moved = env.syntax.inList("group_key", c.slot(MOVED));
      // A group with a due task in any queue keeps its place: it is not held up, the claim's queues are.
      const noneDue =
        `(SELECT 1 FROM ${TASK_GROUPS_TABLE} tg WHERE tg.name = ${c.slot(NAME)} AND tg.state = ${env.syntax.literal(QUEUED)} ` +
        `AND tg.group_key = ${GROUPS_TABLE}.group_key AND ${taskIsDue(c, env, false)} LIMIT 1) IS NULL`;
      return (
        `UPDATE ${GROUPS_TABLE} SET served_seq = CASE WHEN ${idle} THEN served_seq WHEN ${moved} AND ${noneDue} THEN ${backOfServed(c)} ELSE served_seq END, ` +
        `active = CASE WHEN ${idle} THEN 0 ELSE active END WHERE ${inSpan(c, span)} AND ${env.syntax.inList("group_key", c.slot(GROUPS))}`
      );
    },
  };
}
const PASSED: Readonly<Record<Span, StatementTemplate>> = { same: passed("same"), across: passed("across") };

/** The group row (of `:name`) is in `groups`, was read with the `touched` of its `:guards` entry, and has no queued task (see {@link PASSED}). */
function idleCondition(c: ExprCompiler, env: CompileEnv, groups: typeof GROUPS): string {
  return (
    `${env.syntax.inList("group_key", c.slot(groups))} AND ${env.syntax.inList(`(group_key || '#' || touched)`, c.slot(GUARDS))} ` +
    `AND ${groupRowIn(env, c.slot(NAME), `${GROUPS_TABLE}.group_key`, QUEUED, true)} IS NULL`
  );
}

/** Step 4: records the claims of `:taskIds` for `groupRateLimit` at `now` (read after the draw): those the draw took, `running` by then (found by key, as `SERVED`). */
const RECORD: StatementTemplate = {
  params: [TASK_IDS],
  clock: "statement",
  build: (c, env) =>
    `INSERT INTO ${GROUP_RATE_CLAIMS_TABLE} (name, group_key, claimed_at_ms, task_id) SELECT name, group_key, ${c.now()}, task_id FROM ${TASK_GROUPS_TABLE} ` +
    `WHERE ${env.syntax.inList("task_id", c.slot(TASK_IDS))} AND (SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = ${TASK_GROUPS_TABLE}.task_id) = ${env.syntax.literal("running")}`,
};

/** Step 4: deletes the name's group claims outside every window still to be checked. */
const PRUNE_GROUP_RATE_CLAIMS: StatementTemplate = {
  params: [NAME, PER_MS],
  clock: "statement",
  build: (c) => `DELETE FROM ${GROUP_RATE_CLAIMS_TABLE} WHERE name = ${c.slot(NAME)} AND ${rateWindowSql(c, PER_MS, { outside: true })}`,
};

/** The draw by the picked ids, found by primary key whatever the planner knows (see `setTransitionByIdsTemplate`). */
const GROUP_DRAW_TEMPLATE = setTransitionByIdsTemplate(GROUP_DRAW, GROUP_TASK_IDS, CLAIMABLE);

/**
 * The draw and {@link SET_CLAIMED} as one statement where the syntax has writable CTEs
 * (`SqlSyntax.writableCtes`): the group rows of the rows the draw returns become `claimed`, found by
 * the returned ids — no read of each task's status, and one statement fewer per claim.
 */
const GROUP_DRAW_MARKING: StatementTemplate = {
  params: GROUP_DRAW_TEMPLATE.params,
  clock: GROUP_DRAW_TEMPLATE.clock,
  build: (c, env) =>
    `WITH drawn AS (${GROUP_DRAW_TEMPLATE.build(c, env)}), marked AS (UPDATE ${TASK_GROUPS_TABLE} SET state = ${env.syntax.literal(CLAIMED)} ` +
    `WHERE task_id IN (SELECT id FROM drawn)) SELECT * FROM drawn`,
};

interface PagedGroup {
  readonly group: string;
  /** Its `served_seq` as the page read it. */
  readonly seq: number;
  readonly touched: number;
}

/** A first page of active groups read before the draw ({@link GroupDraw.firstPage}): the statement, then its rows, and the sizes it was read with. */
export interface GroupFirstPage {
  readonly query: CompiledQuery<Row>;
  readonly pageSize: number;
  readonly perGroup: number;
}

/** What the claim transaction read for a group draw before it ran (with its head): steps 1 and 2's rows, and the first page's if it was read. */
export interface GroupFirstReads {
  readonly head: readonly Row[];
  readonly page: { readonly rows: readonly Row[]; readonly pageSize: number; readonly perGroup: number } | null;
}

/**
 * The end of the claim transaction, offered to the draw the planner marks last when nothing else
 * runs after it: `tail` (the probe again, if any) goes after the draw's batch and the transaction
 * commits with it (`StoreExecutor.batchLast`); `results` is then set to `tail`'s results. Left
 * `null` when the draw ran no batch: the claim then runs `tail` and commits as usual.
 */
export interface ClaimEnd {
  readonly tail: readonly CompiledQuery<Row>[];
  results: readonly QueryResult<Row>[] | null;
}

/** The group draws of one grouped name in one claim cycle; see the module comment. */
export class GroupDraw {
  readonly #ext: StoreExtensions;
  readonly #name: string;
  readonly #limits: GroupLimits;
  readonly #settling: readonly string[];
  readonly #prune: GroupPrune | null;
  readonly #limitWrites: RateLimitWrites;

  /** `settling`: the fences of the store's settlements in flight (`SettlementsInFlight`), whose tasks the running counts leave out; `prune`: the store's prune of idle group rows (`group-prune.ts`: when due, its read runs before the draw's batch and its delete ends it); `limitWrites`: the claim's limit rows (`rate-limit-records.ts`). */
  constructor(ext: StoreExtensions, name: string, limits: GroupLimits, settling: readonly string[], prune: GroupPrune | null, limitWrites: RateLimitWrites) {
    this.#ext = ext;
    this.#limitWrites = limitWrites;
    this.#name = name;
    this.#limits = limits;
    this.#settling = settling;
    this.#prune = prune;
  }

  /**
   * Steps 1 and 2's read (the running counts, the requeued rows and the head of the plain order) for a claim of `queues`: it
   * depends on nothing else, so the claim sends it with its head (after the locks) and hands the
   * rows to {@link draw}.
   */
  firstRead(queues: readonly string[]): CompiledQuery<Row> {
    const name = this.#name;
    const settling = this.#settling;
    if (settling.length === 0) return this.#query(RUNNING_AND_HEAD, { name, queues, names: [name], limit: GROUP_HEAD_ROWS });
    return this.#query(RUNNING_AND_HEAD_SETTLING, { name, queues, names: [name], limit: GROUP_HEAD_ROWS, settling });
  }

  /**
   * Step 3's first page for a claim of `queues` expected to draw up to `cap` rows of the name: read
   * with the head too (it depends on nothing step 1 finds: a group at its concurrency limit is
   * skipped when the page is used rather than by the read), sized for `cap`, and used by
   * {@link draw} when the draw's own first page would ask for no more.
   */
  firstPage(queues: readonly string[], cap: number): GroupFirstPage {
    const name = this.#name;
    const perGroup = groupReadDepth(cap, 0, 0, this.#mostPerGroup());
    const pageSize = Math.max(cap, GROUP_PAGE_MIN);
    const query = this.#query(PAGE_WITH_BEST, { name, queues, groups: [], afterSeq: -1, afterGroup: "", limit: pageSize, perGroup, ...this.#rateParams() });
    return { query, pageSize, perGroup };
  }

  /** The page read's rate parameters: with `groupRateLimit`, it skips the groups whose window is full and counts the others'. */
  #rateParams(): { rateMax: number | null; perMs: number | null } {
    const rate = this.#limits.groupRateLimit;
    return { rateMax: rate?.max ?? null, perMs: rate?.perMs ?? null };
  }

  /** No group may give more than the smaller of its limits. */
  #mostPerGroup(): number {
    return Math.min(this.#limits.groupConcurrency ?? Number.POSITIVE_INFINITY, this.#limits.groupRateLimit?.max ?? Number.POSITIVE_INFINITY);
  }

  /**
   * Draws up to `params.limit` rows of the name (the draw's parameters: `queues`, `limit`, `workerId`,
   * `leaseMs`). `first`: what {@link firstRead} (and {@link firstPage}) read for these queues in this
   * transaction under the lock with nothing written since, or `null` to read them now. `end`: the
   * end of the transaction when nothing runs after this draw (see {@link ClaimEnd}).
   */
  async draw(tx: QueryRunner, params: Params, first: GroupFirstReads | null = null, end: ClaimEnd | null = null): Promise<Task[]> {
    const cap = params.limit as number;
    const queues = params.queues as readonly string[];
    const name = this.#name;
    if (cap <= 0) return [];

    // 1. Running counts and requeued rows, and 2. the head of the plain order, in one read.
    const running = new Map<string, number>();
    const requeued = new Set<string>();
    const stale: string[] = [];
    /** The tasks whose groups wake (by task id: the wake creates a group's row when it is missing). */
    const wake = new Set<string>();
    const ungrouped: string[] = [];
    for (const row of first?.head ?? (await tx.executeQuery(this.firstRead(queues))).rows) {
      const group = row.group_key;
      const kind = Number(row.kind);
      if (kind === 0) {
        if (typeof group === "string" && countsAsGroupRunning(row.status === SETTLING_STATUS)) running.set(group, (running.get(group) ?? 0) + 1);
      } else if (kind === 2) {
        if (wakeGroupTask(String(row.status)) === QUEUED) {
          requeued.add(String(row.id));
          wake.add(String(row.id));
        } else stale.push(String(row.id));
      } else if (typeof group !== "string") ungrouped.push(String(row.id));
      else {
        // A group without a row (pruned while idle) reads `active` as null, which is 0 here: an idle group, which the wake recreates.
        const action = headGroupRowAction(String(row.state), Number(row.active) !== 0);
        if (action === "requeue") requeued.add(String(row.id));
        if (action !== "none") wake.add(String(row.id));
      }
    }
    // Requeued rows go back to their group's walk (and their groups wake); stale marks go to `claimed`.
    const woken: CompiledQuery<Row>[] = [];
    if (requeued.size > 0) woken.push(this.#query(SET_STATE, { state: QUEUED, taskIds: [...requeued] }));
    if (stale.length > 0) woken.push(this.#query(SET_STATE, { state: CLAIMED, taskIds: stale }));
    if (wake.size > 0) woken.push(this.#query(WAKE, { name, taskIds: [...wake], groupConcurrency: this.#limits.groupConcurrency }));

    // 3. Pages of eligible groups with their best due tasks.
    const full: string[] = [];
    const concurrency = this.#limits.groupConcurrency;
    if (concurrency !== null) for (const [group, n] of running) if (n >= concurrency) full.push(group);
    // Each page reads of each group as many tasks as the rotation could pick from it (`groupReadDepth`).
    const mostPerGroup = this.#mostPerGroup();
    const eligible: GroupCandidates[] = [];
    /** The eligible groups as paged, in served order (those the rotation may serve). */
    const seen: PagedGroup[] = [];
    const empty: PagedGroup[] = [];
    /** The groups of `empty` read in pages that gave no work: only they move to the back (`PASSED`). */
    const moved: string[] = [];
    const whole = new Map<string, PagedGroup>();
    let available = ungrouped.length;
    let after: { seq: number; group: string } = { seq: -1, group: "" };
    // The first page read with the head stands for this draw's own first page when nothing was woken since
    // (a woken group or task would be missing from it) and it asked for at least as much; it skips no full group,
    // which the allowance below skips instead.
    let early = woken.length === 0 ? (first?.page ?? null) : null;
    if (early !== null && (early.pageSize < Math.max(cap, GROUP_PAGE_MIN) || early.perGroup < groupReadDepth(cap, ungrouped.length, 0, mostPerGroup))) early = null;
    for (let page = 0, gave = 0; gave < GROUP_PAGES && page < GROUP_SCAN_PAGES && available < cap; page++) {
      const pageSize = early?.pageSize ?? Math.max(cap, GROUP_PAGE_MIN);
      const perGroup = early?.perGroup ?? groupReadDepth(cap, ungrouped.length, eligible.length, mostPerGroup);
      let rows: readonly Row[];
      if (early !== null) rows = early.rows;
      else {
        const read = this.#query(PAGE_WITH_BEST, { name, queues, groups: full, afterSeq: after.seq, afterGroup: after.group, limit: pageSize, perGroup, ...this.#rateParams() });
        // The wake-up writes go with the first page read after them (one round trip where the executor pipelines).
        rows = woken.length > 0 ? ((await this.#ext.dialect.executor.batch(tx, woken.splice(0, woken.length).concat([read]))).at(-1)?.rows ?? []) : (await tx.executeQuery(read)).rows;
      }
      early = null;
      if (rows.length === 0) break;
      const last = rows[rows.length - 1] as Row;
      after = { seq: Number(last.served_seq), group: String(last.group_key) };
      // Rows come by group in served order, each group's tasks best first, with its claims in the rate window.
      const paged = pageGroups(rows);
      const eligibleBefore = eligible.length;
      const emptyBefore = empty.length;
      for (const g of paged) {
        const allowance = groupAllowance(this.#limits, running.get(g.group) ?? 0, g.inWindow);
        if (allowance <= 0) continue;
        if (g.taskIds.length === 0) {
          empty.push(g);
          continue;
        }
        eligible.push({ group: g.group, taskIds: g.taskIds, allowance });
        seen.push(g);
        // Fewer tasks than asked for: the page showed all the group's due work, so a draw taking it all leaves none.
        if (g.taskIds.length < perGroup) whole.set(g.group, g);
        available += Math.min(allowance, g.taskIds.length);
      }
      // A page of groups without due work (or without room) does not count against the pages that gave work.
      if (eligible.length > eligibleBefore) gave++;
      // Only a page that gave no work moves its groups without due work back: in a page that gave work they keep
      // their place (they fill no claim's pages), which a group whose due work is in another queue needs — moved back
      // by every claim of this queue whose first page holds it, it would never come within reach of a claim of its own.
      else for (const g of empty.slice(emptyBefore)) moved.push(g.group);
      if (paged.length < pageSize) break;
    }

    // 4. Pick, then the draw and the bookkeeping writes in one batch (one round trip where the executor pipelines):
    // every write after the draw is guarded by what the draw took, so none needs its result first.
    const rotation = rotateGroups(ungrouped, eligible, cap);
    const picked = new Set(rotation.taskIds);
    // Groups whose due work the draw takes to the last task go inactive as they are served (unless a queued task is left).
    const idle: PagedGroup[] = [];
    for (const g of eligible) if (whole.has(g.group) && g.taskIds.every((id) => picked.has(id))) idle.push(whole.get(g.group) as PagedGroup);
    const grouped = rotation.taskIds.filter((id) => rotation.groupOf.has(id));
    // Wake-up writes no page read took along (the head's tasks without a group filled the claim) lead the batch.
    const writes: CompiledQuery<Row>[] = woken;
    const drawAt = writes.length;
    // Where the draw can mark its tasks' group rows itself (one statement), it does when it takes grouped tasks.
    const marking = grouped.length > 0 && this.#ext.dialect.syntax.writableCtes === true;
    if (rotation.taskIds.length > 0) writes.push(this.#query(marking ? GROUP_DRAW_MARKING : GROUP_DRAW_TEMPLATE, { ...params, names: [name], taskIds: rotation.taskIds }));
    if (grouped.length > 0 && !marking) writes.push(this.#query(this.#ext.dialect.capabilities.skipLocked ? SET_CLAIMED : SET_CLAIMED_SOLE_WRITER, { claimedIds: grouped }));
    if (grouped.length > 0) {
      const guards = idle.map((g) => `${g.group}#${g.touched}`);
      // The span of the served order the served groups lie in: pages come in served order, so the first and last served in it.
      const servedSet = new Set(rotation.served);
      const { span, params: bounds } = spanOf(seen.filter((g) => servedSet.has(g.group)));
      const served = { name, groups: rotation.served, limit: this.#limits.groupConcurrency, idle: idle.map((g) => g.group), guards, ...bounds };
      writes.push(this.#query(SERVED[span], served));
      if (this.#limits.groupRateLimit !== null) writes.push(this.#query(RECORD, { taskIds: grouped }), ...this.#limitWrites.plan(name, RATE_LIMIT_SCOPES.group, this.#limits.groupRateLimit).map((p) => this.#query(RECORD_RATE_LIMIT, p)));
    }
    if (empty.length > 0) {
      const guards = empty.map((g) => `${g.group}#${g.touched}`);
      const { span, params: bounds } = spanOf(empty);
      writes.push(this.#query(PASSED[span], { name, groups: empty.map((g) => g.group), guards, moved, ...bounds }));
    }
    if (this.#limits.groupRateLimit !== null) writes.push(this.#query(PRUNE_GROUP_RATE_CLAIMS, { name, perMs: this.#limits.groupRateLimit.perMs }));
    // Once a minute per store and name, the prune of idle group rows (a read now, its delete last in the batch); else nothing.
    const prune = (await this.#prune?.take(tx, name)) ?? null;
    if (prune !== null) writes.push(this.#query(DELETE_IDLE_GROUPS, prune));
    if (writes.length === 0) return [];
    let results: QueryResult<Row>[];
    if (end === null) results = await this.#ext.dialect.executor.batch(tx, writes);
    else {
      // Nothing runs after this batch: the claim's tail goes with it, and the commit too where the executor can.
      results = await this.#ext.dialect.executor.batchLast(tx, [...writes, ...end.tail]);
      end.results = results.slice(writes.length);
    }
    if (rotation.taskIds.length === 0) return [];
    const byId = new Map((results[drawAt]?.rows ?? []).map((row) => [String(row.id), decodeTask(row)]));
    return rotation.taskIds.flatMap((id) => byId.get(id) ?? []);
  }

  /** `template` compiled with `params` (a `now` it reads is bound here). */
  #query(template: StatementTemplate, params: Params): CompiledQuery<Row> {
    return this.#ext.statements.compiler.statement(template, params).query(params);
  }
}
