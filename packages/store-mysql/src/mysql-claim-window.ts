/**
 * Claims over several queues on MySQL/MariaDB: the draw's picks without locking every due row they sort.
 *
 * The core's draw picks its rows with one locking read, `SELECT id FROM cairnq_tasks WHERE <claimable>
 * ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT n FOR UPDATE SKIP LOCKED` (joined, see the statement
 * plan's "picked ids"). Over one queue the claim index (`queue, status, priority DESC, run_at_ms, id`) gives
 * that order: the read walks the index and stops at its `n`th row, locking only those. Over several queues
 * no index gives the order, so the server reads every due row of those queues to sort them, and InnoDB
 * keeps every row that read locked (it matched the `WHERE`) until the claim commits: a claim over the same
 * queues at the same moment skipped them all and came back short, even empty, while due tasks waited
 * (two concurrent claims of 3 over 5 due tasks in two queues: 5 to 22 rounds of 60 short).
 *
 * Where the queue list holds more than one queue (known when the statement is bound, see
 * {@link choosePlan}), the draw runs instead as
 * 1. a plain read of the first `w` = {@link windowOf}`(n)` due ids in claim order, which locks nothing (`READ
 *    COMMITTED` reads the committed rows): `SELECT JSON_ARRAYAGG(id ORDER BY <claim order>), COUNT(*)
 *    INTO @cq_cands, @cq_ncands FROM ((SELECT id, <order columns> … WHERE queue = ? AND … ORDER BY … LIMIT
 *    w) UNION ALL … ORDER BY … LIMIT w) cq_c`, one part per queue (the statement's text is chosen by the
 *    queue count when it is bound), each walking the claim index from its queue's first due row and
 *    stopping at its `w`th: a claim reads at most `w` rows a queue, whatever the backlog. One read of
 *    all the queues (`queue IN (…) ORDER BY … LIMIT w`) had no index giving its order: it read and sorted
 *    every due row of the queues (`Using filesort`; 100,000 due over 8 queues: 150 claims/s of 16, a
 *    quarter of one queue's rate);
 * 2. the locking pick among those candidates, read by primary key in the read's order and stopped at `n`:
 *    `UPDATE (SELECT cairnq_tasks.id AS cq_id FROM JSON_TABLE(@cq_cands, …) cq_c STRAIGHT_JOIN cairnq_tasks
 *    ON cairnq_tasks.id = cq_c.cq_cid WHERE <claimable> ORDER BY cq_c.cq_ord LIMIT n FOR UPDATE SKIP
 *    LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks … SET …`. EXPLAIN: the candidates first, sorted on their
 *    own (`Using filesort` on `cq_c` alone, no temporary table), each looked up `eq_ref` on `PRIMARY`, so
 *    the join ends at its `n`th row and locks only the rows it takes (a lock probe from a second session
 *    after a claim of 3 over 20 due rows: 17 still free, where the sorting pick left none). The claimable
 *    condition is checked again on the locked row, so a candidate another claim took since the read is
 *    passed over;
 * 3. `SELECT n - ROW_COUNT(), @cq_ncands >= w AND ROW_COUNT() < n INTO @cq_left, @cq_more`;
 * 4. the sorting pick as before, only when the window was full (more due rows may lie past it) and the
 *    candidates gave fewer than `n` (others hold them): `… WHERE @cq_more AND (<claimable>) ORDER BY …
 *    LIMIT n FOR UPDATE SKIP LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks … SET … WHERE (@cq_left :=
 *    @cq_left - 1) >= 0`, whose outer `WHERE` takes only the `n` − taken first of its picks. With
 *    `@cq_more` false the server finds the pick's `WHERE` impossible (EXPLAIN: "Impossible WHERE"): it
 *    reads and locks nothing. So a claim never comes back short while due rows are free; only this
 *    fallback, when others hold the whole window, locks what it sorts, as every such claim did before.
 *
 * The claim order is the core's text's (its `ORDER BY`); both updates record their ids in update order
 * (the read-back's order), the fallback's after the candidates'. Everything goes in the claim's one
 * multi-statement round trip, four statements more than a claim over one queue, which is unchanged.
 */
import { claimWindow, TASKS_TABLE as TASKS } from "@cairnq/store-kysely";
import { closing, topLevel } from "./mysql-sql-text.js";

/**
 * The most candidates a claim reads: their ids travel as one JSON array, which MariaDB's `JSON_ARRAYAGG`
 * cuts at `group_concat_max_len` (1 MiB by default; 4,096 task ids take about 140 KB). A claim of more
 * rows than that takes the rest through the sorting fallback.
 */
export const MAX_WINDOW = 4096;

/**
 * How many candidates a claim of `limit` reads: store-kysely's {@link claimWindow} (four times its limit, and
 * 16 more, so that concurrent claims taking their rows from the top of the same queues leave it enough free
 * rows without the sorting fallback), at most {@link MAX_WINDOW}.
 */
export function windowOf(limit: number): number {
  return Math.min(claimWindow(limit), MAX_WINDOW);
}

const HEAD = `UPDATE (SELECT id AS cq_id FROM ${TASKS} WHERE `;
const SKIP = " FOR UPDATE SKIP LOCKED";
const JOIN = ` cq_pick STRAIGHT_JOIN ${TASKS} ON ${TASKS}.id = cq_pick.cq_id SET `;
/** The queue list of the claimable condition, as the plan writes a bound list (`?L<n>`). */
const QUEUE_LIST = /\bqueue IN \(\?L(\d+)\)/;

/** The statements of a windowed draw, and which core parameter (0-based) is the queue list. */
export interface WindowedPicks {
  readonly list: number;
  /**
   * The statements for a list of `count` queues, numbered placeholders as in the draw; `?W<n>` stands for
   * {@link windowOf} of parameter n, `?E<n>:<i>` for element i of the list parameter n.
   */
  steps(count: number): readonly string[];
}

/**
 * A joined, sorted, limited picked-ids update over a queue list (the claim draw, planned as
 * `UPDATE (SELECT id AS cq_id FROM cairnq_tasks WHERE … queue IN (?Lq) … ORDER BY … LIMIT ?n FOR UPDATE
 * SKIP LOCKED) cq_pick STRAIGHT_JOIN cairnq_tasks ON … SET …`, with no condition after its picks) → its
 * windowed statements (see the file's notes); `null` for any other text.
 */
export function windowedPicks(sql: string): WindowedPicks | null {
  if (!sql.startsWith(HEAD)) return null;
  const close = closing(sql, "UPDATE ".length);
  if (!sql.startsWith(JOIN, close + 1)) return null;
  const set = sql.slice(close + 1 + JOIN.length);
  if (topLevel(set, "WHERE").length > 0) return null;
  const picks = sql.slice(HEAD.length, close);
  if (!picks.endsWith(SKIP)) return null;
  const body = picks.slice(0, -SKIP.length);
  const orderAt = topLevel(body, "ORDER BY");
  const limitAt = topLevel(body, "LIMIT");
  if (orderAt.length !== 1 || limitAt.length !== 1) return null;
  const condition = body.slice(0, orderAt[0]).trimEnd();
  const order = body.slice((orderAt[0] as number) + "ORDER BY ".length, limitAt[0]).trim();
  const limit = /^\?(\d+)$/.exec(body.slice((limitAt[0] as number) + "LIMIT ".length).trim());
  const queues = QUEUE_LIST.exec(condition);
  if (limit === null || queues === null) return null;
  const columns = order.split(",").map((item) => item.trim().replace(/ (ASC|DESC)$/, ""));
  if (!columns.every((column) => /^[a-z_]+$/.test(column))) return null;
  const n = `?${limit[1]}`;
  const w = `?W${limit[1]}`;
  const selected = ["id", ...columns.filter((column) => column !== "id")].join(", ");
  const list = queues[1] as string;
  const perQueue = (i: number): string =>
    `(SELECT ${selected} FROM ${TASKS} WHERE ${condition.replace(QUEUE_LIST, `queue = ?E${list}:${i}`)} ORDER BY ${order} LIMIT ${w})`;
  const read = (count: number): string =>
    `SELECT JSON_ARRAYAGG(CAST(id AS CHAR CHARACTER SET utf8mb4) ORDER BY ${order}), COUNT(*) INTO @cq_cands, @cq_ncands ` +
    `FROM (${Array.from({ length: count }, (_, i) => perQueue(i)).join(" UNION ALL ")} ORDER BY ${order} LIMIT ${w}) cq_c`;
  const candidates = `JSON_TABLE(@cq_cands, '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_cid VARCHAR(255) PATH '$')) cq_c`;
  const pick =
    `UPDATE (SELECT ${TASKS}.id AS cq_id FROM ${candidates} STRAIGHT_JOIN ${TASKS} ON ${TASKS}.id = cq_c.cq_cid ` +
    `WHERE (${condition}) ORDER BY cq_c.cq_ord LIMIT ${n}${SKIP})${JOIN}${set}`;
  const count = `SELECT ${n} - ROW_COUNT(), @cq_ncands >= ${w} AND ROW_COUNT() < ${n} INTO @cq_left, @cq_more`;
  const fallback = `${HEAD}@cq_more AND (${condition}) ORDER BY ${order} LIMIT ${n}${SKIP})${JOIN}${set} WHERE (@cq_left := @cq_left - 1) >= 0`;
  return { list: Number(list) - 1, steps: (queueCount) => [read(queueCount), pick, count, fallback] };
}
