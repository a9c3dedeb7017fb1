/**
 * How one statement of the shared core runs on MySQL/MariaDB: the store
 * core compiles every statement once per shape (a bounded set), and this
 * file turns each text, once, into what the server accepts.
 *
 * Terminology:
 * - **numbered placeholder**: `?n`, as {@link MySQLSyntax} writes the core's
 *   n-th distinct parameter; the driver only knows positional `?`, so the
 *   plan lists, per `?` in text order, which parameter fills it;
 * - **returning update**: `UPDATE cairnq_tasks … RETURNING <columns>`, which
 *   MariaDB 10.11 and MySQL 8 lack. The plan records each updated row's id in
 *   the session variable `@cq_ids` from an added last assignment of the `SET`
 *   list (assignments run only for rows the update changes, after the server
 *   re-read a row it waited for), then selects the columns of those ids in
 *   update order. Both statements run in one transaction, so the rows read
 *   back are the rows written;
 * - **picked ids**: `id IN (SELECT id FROM cairnq_tasks … LIMIT n FOR UPDATE
 *   SKIP LOCKED)`, where the server refuses both a `LIMIT` inside `IN` and a
 *   subquery on the table being changed: the plan wraps the subquery in a
 *   derived table, which the server materializes first. In an `UPDATE`
 *   whose whole `WHERE` is that `IN`, the derived table is joined instead
 *   (`UPDATE (<picks>) cq_pick STRAIGHT_JOIN cairnq_tasks ON …`): MariaDB
 *   before 11.1 has no semi-join for a single-table `UPDATE`, so the `IN`
 *   form walks the whole primary key and probes the picks per row (EXPLAIN:
 *   `index` on PRIMARY, 99,079 rows with 100k queued), where the join reads
 *   the picked rows by primary key; a purge's `DELETE … RETURNING id` collects its
 *   picks first, then deletes them joined ({@link deletePickedIds}). A claim draw's picks over more than one
 *   queue run windowed instead (`mysql-claim-window.ts`, chosen when the
 *   statement is bound: {@link choosePlan}), because a sorting locking read
 *   keeps every due row of those queues locked;
 * - **bound list**: `expr IN (SELECT v FROM JSON_TABLE(?n, …) cq_l)`, as
 *   {@link MySQLSyntax.inList} writes a list parameter (JSON array text),
 *   becomes `expr IN (?, ?, …)` with one value per element, expanded when the
 *   statement is bound ({@link bindStep}; an empty list reads an empty
 *   subquery): the server reads the list's keys by index. MariaDB before 11.1
 *   has no semi-join for a single-table `UPDATE` or `DELETE`, so the
 *   `JSON_TABLE` form walked the whole table and read the list per row (a
 *   group draw's `UPDATE cairnq_tasks … WHERE id IN (<64 ids>)` over 2,000
 *   tasks: 129,921 `Handler_read_rnd_next`, where the values take 64 key reads);
 * - **concatenation**: `(a || b)` becomes `CONCAT(a, b)`;
 * - **upsert**: `ON CONFLICT (…) DO UPDATE SET c = excluded.c` becomes
 *   `ON DUPLICATE KEY UPDATE c = VALUES(c)`; a conditional upsert
 *   (`DO UPDATE … WHERE`) has no MySQL form and is refused.
 */
import { TASKS_TABLE as TASKS } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";
import { windowedPicks, windowOf } from "./mysql-claim-window.js";
import { COND, oldValuesInSet, rewriteUpsert, UNTOUCHED } from "./mysql-set-rewrites.js";
import { closing, quotedEnd, setListEnd, topLevel } from "./mysql-sql-text.js";

/** One statement the server runs, with the parameter index (0-based) filling each `?` in order. */
export interface PlannedStatement {
  readonly sql: string;
  readonly params: readonly number[];
  /**
   * The positions (in `params`) of bound lists: their `?` stands inside `IN (…)` for the list's
   * elements, one `?` each (see {@link bindStep}). Absent when the statement has none.
   */
  readonly lists?: readonly number[];
  /**
   * The positions (in `params`) bound to a claim's window of candidates for the limit they name
   * (`windowOf(limit)`, see `mysql-claim-window.ts`). Absent when the statement has none.
   */
  readonly scaled?: readonly number[];
  /**
   * The positions (in `params`) bound to one element of a bound list, and which (0-based): a windowed
   * claim's per-queue reads (`mysql-claim-window.ts`). Absent when the statement has none.
   */
  readonly elements?: readonly (readonly [position: number, element: number])[];
}

/** How one core statement runs: its statements in order; the result is the last one's rows. */
export interface MySQLStatementPlan {
  readonly steps: readonly PlannedStatement[];
  /** The steps must run in one transaction (a returning update outside one gets its own). */
  readonly transactional: boolean;
  /** Rows whose first column is null are not the statement's (a conditional upsert that changed nothing). */
  readonly dropNullRows: boolean;
  /**
   * The last step answers one row whose `cq_rows` holds the statement's rows as a JSON array of
   * arrays, one value per listed column ({@link capturedReturning}): the rows are decoded from it.
   */
  readonly capturedColumns?: readonly string[];
  /**
   * The plan to run instead when the bound list at core parameter `list` holds more than one value: a
   * claim draw over several queues, windowed (`mysql-claim-window.ts`; {@link choosePlan}).
   */
  readonly manyQueues?: { readonly list: number; plan(queueCount: number): MySQLStatementPlan };
}

/** The session variable collecting a returning update's ids. */
const IDS = "@cq_ids";
/**
 * What {@link IDS} starts as, and how a changed row's value is appended to it: a plain string of
 * comma-led JSON values, made a JSON array only when read ({@link CAPTURED}). `JSON_ARRAY_APPEND`
 * parses and rewrites the whole array on every row: a claim of 64 then cost the server about 0.3 ms
 * more in the draw and again in a multi-row complete (`SHOW PROFILES`, 30 rounds each, medians:
 * draw 2,883 → 2,328 µs, complete 2,484 → 2,180 µs), the append about nothing. It starts as the
 * empty text in utf8mb4_bin whatever the connection's character set: on a connection in another one
 * (a pool the caller passes keeps its own, e.g. latin1) a plain `''` would be that set's, and
 * `CONCAT` with the utf8mb4 ids an "Illegal mix of collations" error on every capture.
 */
const EMPTY = "SET @cq_ids = _utf8mb4'' COLLATE utf8mb4_bin";
const append = (json: string): string => `${IDS} := CONCAT(${IDS}, ',', ${json})`;
/** {@link IDS} as the JSON array text of the captured values. */
const CAPTURED = `CONCAT('[', SUBSTRING(${IDS}, 2), ']')`;

/**
 * Plans `sql` (the core's text with numbered placeholders). Pure and cached
 * by text in {@link planStatement}.
 */
export function plan(sql: string): MySQLStatementPlan {
  const upsert = rewriteUpsert(concatenations(boundLists(sql)));
  let text = wrapPickedIds(upsert.sql);
  text = oldValuesInSet(text);
  if (upsert.conditional) {
    return { steps: [{ sql: `SET ${COND} = 1`, params: [] }, positional(text)], transactional: true, dropNullRows: true };
  }
  const deleted = deletePickedIds(text);
  if (deleted !== null) return { steps: deleted.map(positional), transactional: true, dropNullRows: false };
  const captured = capturedReturning(text);
  if (captured !== null) {
    return {
      steps: [{ sql: EMPTY, params: [] }, positional(captured.update), { sql: `SELECT ${CAPTURED} AS cq_rows`, params: [] }],
      transactional: false,
      dropNullRows: false,
      capturedColumns: captured.columns,
    };
  }
  const returning = splitReturningUpdate(text);
  if (returning === null) {
    const joined = joinPickedIds(text);
    const updates = gateUnboundedPicks(joinUpdateSource(joined)).map(positional);
    return windowed({ steps: updates, transactional: updates.length > 1, dropNullRows: false }, joined, (steps) => steps);
  }
  const joined = joinPickedIds(returning.update);
  const around = (steps: readonly PlannedStatement[]): PlannedStatement[] => [{ sql: EMPTY, params: [] }, ...steps, positional(returning.select)];
  return windowed({ steps: around(gateUnboundedPicks(joinUpdateSource(joined)).map(positional)), transactional: true, dropNullRows: false }, joined, around);
}

/** `planned` with its windowed form for several queues when `update` is a claim draw's joined picks ({@link windowedPicks}). */
function windowed(planned: MySQLStatementPlan, update: string, around: (steps: readonly PlannedStatement[]) => readonly PlannedStatement[]): MySQLStatementPlan {
  const picks = windowedPicks(update);
  if (picks === null) return planned;
  const byCount = new Map<number, MySQLStatementPlan>();
  const planFor = (queueCount: number): MySQLStatementPlan => {
    let many = byCount.get(queueCount);
    if (many === undefined) {
      many = { steps: around(picks.steps(queueCount).map(positional)), transactional: true, dropNullRows: false };
      // A worker's claims name a few queue lists; a caller passing ever more queues is planned each time past this.
      if (byCount.size < 64) byCount.set(queueCount, many);
    }
    return many;
  };
  return { ...planned, manyQueues: { list: picks.list, plan: planFor } };
}

/**
 * The plan that runs for the core statement's `parameters`: a claim draw over more than one queue
 * runs windowed (`MySQLStatementPlan.manyQueues`, its text made for the number of queues), anything else as `planned`.
 */
export function choosePlan(planned: MySQLStatementPlan, parameters: readonly unknown[]): MySQLStatementPlan {
  const many = planned.manyQueues;
  if (many === undefined) return planned;
  const queues = listElements(parameters[many.list]);
  return queues !== null && queues.length > 1 ? many.plan(queues.length) : planned;
}

const cache = new Map<string, MySQLStatementPlan>();

/** {@link plan}, once per statement text (the core's texts are a bounded set; other texts are planned each time). */
export function planStatement(sql: string): MySQLStatementPlan {
  let planned = cache.get(sql);
  if (planned === undefined) {
    planned = plan(sql);
    if (cache.size < 10_000) cache.set(sql, planned);
  }
  return planned;
}

const withoutRows = new Map<string, string>();

/**
 * {@link planStatement} for a statement whose rows nobody reads (a claim transaction's head `first`,
 * the lease recovery, whose result the executor drops): a returning update without its `RETURNING`,
 * so the plan neither collects the updated ids nor reads them back (two statements fewer, and about
 * a quarter of a claim's server time with nothing to recover). Any other text plans as it is.
 */
export function planStatementWithoutRows(sql: string): MySQLStatementPlan {
  let text = withoutRows.get(sql);
  if (text === undefined) {
    const returning = sql.startsWith(`UPDATE ${TASKS} SET `) ? topLevel(sql, "RETURNING").at(-1) : undefined;
    text = returning === undefined ? sql : sql.slice(0, returning).trimEnd();
    if (withoutRows.size < 10_000) withoutRows.set(sql, text);
  }
  return planStatement(text);
}

/** The driver queries of `planned` for the core statement's parameters. */
export function queriesOf(planned: MySQLStatementPlan, parameters: readonly unknown[]): CompiledQuery<Record<string, unknown>>[] {
  const readList = listReader();
  return planned.steps.map((step) => {
    const bound = bindStep(step, parameters, readList);
    return CompiledQuery.raw(bound.sql, bound.values);
  });
}

/** A list parameter as `MySQLSyntax.inList` reads it. */
const LIST_SUBQUERY = /IN \(SELECT v FROM JSON_TABLE\(\?(\d+), '\$\[\*\]' COLUMNS \(v VARCHAR\(255\) PATH '\$'\)\) cq_l\)/g;
/** What an empty list reads: no row, so `x IN (…)` is false (not null, as `IN (NULL)` would be). */
const EMPTY_LIST = "SELECT NULL FROM DUAL WHERE FALSE";

/** Every list parameter read through `JSON_TABLE` → `IN (?Ln)`, a list {@link positional} marks. */
function boundLists(sql: string): string {
  return sql.includes(" cq_l)") ? sql.replace(LIST_SUBQUERY, "IN (?L$1)") : sql;
}

/**
 * `step`'s text and values for the core statement's `parameters`: each bound list's `?` becomes one
 * `?` per element (strings and numbers; the JSON array text parsed), or {@link EMPTY_LIST} for an
 * empty one; a value that is no such array is read through `JSON_TABLE` as the syntax wrote it.
 * `readList` parses a list parameter ({@link listReader} shares one parse among a statement's steps).
 */
export function bindStep(step: PlannedStatement, parameters: readonly unknown[], readList: (value: unknown) => unknown[] | null = listElements): { sql: string; values: unknown[] } {
  const lists = step.lists;
  const scaled = step.scaled;
  const elements = step.elements;
  const valueAt =
    scaled === undefined && elements === undefined
      ? (i: number) => parameters[i]
      : (i: number, k: number) => {
          if (scaled?.includes(k) === true) return windowOf(Number(parameters[i]));
          const element = elements?.find(([position]) => position === k);
          return element === undefined ? parameters[i] : readList(parameters[i])?.[element[1]];
        };
  if (lists === undefined) return { sql: step.sql, values: step.params.map(valueAt) };
  const values: unknown[] = [];
  const pieces = placeholderPieces(step.sql);
  let sql = pieces[0] as string;
  step.params.forEach((index, k) => {
    const value = valueAt(index, k);
    const elements = lists.includes(k) ? readList(value) : null;
    if (elements === null) {
      sql += lists.includes(k) ? "SELECT v FROM JSON_TABLE(?, '$[*]' COLUMNS (v VARCHAR(255) PATH '$')) cq_l" : "?";
      values.push(value);
    } else if (elements.length === 0) sql += EMPTY_LIST;
    else {
      sql += elements.length === 1 ? "?" : `?${", ?".repeat(elements.length - 1)}`;
      values.push(...elements);
    }
    sql += pieces[k + 1] as string;
  });
  return { sql, values };
}

const pieceCache = new Map<string, readonly string[]>();

/** `sql` split at its placeholders (outside quotes), once per text. */
function placeholderPieces(sql: string): readonly string[] {
  let pieces = pieceCache.get(sql);
  if (pieces !== undefined) return pieces;
  const found: string[] = [];
  let start = 0;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i] as string;
    if (ch === "'" || ch === "`" || ch === '"') i = quotedEnd(sql, i) - 1;
    else if (ch === "?") {
      found.push(sql.slice(start, i));
      start = i + 1;
    }
  }
  found.push(sql.slice(start));
  pieces = found;
  if (pieceCache.size < 10_000) pieceCache.set(sql, pieces);
  return pieces;
}

/** The elements of a bound list (JSON array text of strings or numbers), or `null` for any other value. */
/**
 * {@link listElements} parsing each value once: one per binding of a statement, whose steps read the same
 * lists (a windowed claim's read names the queue list once per queue, and its pick and count steps again).
 */
export function listReader(): (value: unknown) => unknown[] | null {
  const parsed = new Map<unknown, unknown[] | null>();
  return (value) => {
    let elements = parsed.get(value);
    if (elements === undefined) {
      elements = listElements(value);
      parsed.set(value, elements);
    }
    return elements;
  };
}

function listElements(value: unknown): unknown[] | null {
  if (typeof value !== "string") return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || !parsed.every((e) => typeof e === "string" || typeof e === "number")) return null;
  return parsed;
}

/**
 * Each `?n` outside string literals → `?`, recording n − 1; a bare `?` keeps its position; `?Ln` is a
 * bound list, `?Wn` the window of candidates for limit n, `?En:i` element i of the list parameter n.
 */
function positional(sql: string): PlannedStatement {
  const params: number[] = [];
  const lists: number[] = [];
  const scaled: number[] = [];
  const elements: [number, number][] = [];
  let out = "";
  let bare = 0;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i] as string;
    if (ch === "'" || ch === "`" || ch === '"') {
      const end = quotedEnd(sql, i);
      out += sql.slice(i, end);
      i = end - 1;
      continue;
    }
    if (ch !== "?") {
      out += ch;
      continue;
    }
    const list = sql[i + 1] === "L";
    const window = sql[i + 1] === "W";
    const element = sql[i + 1] === "E";
    if (list) lists.push(params.length);
    if (window) scaled.push(params.length);
    let j = list || window || element ? i + 2 : i + 1;
    const digits = j;
    while (j < sql.length && isDigit(sql.charCodeAt(j))) j++;
    params.push(j > digits ? Number(sql.slice(digits, j)) - 1 : bare++);
    if (element && sql[j] === ":") {
      const at = ++j;
      while (j < sql.length && isDigit(sql.charCodeAt(j))) j++;
      elements.push([params.length - 1, Number(sql.slice(at, j))]);
    }
    out += "?";
    i = j - 1;
  }
  return {
    sql: out,
    params,
    ...(lists.length > 0 ? { lists } : {}),
    ...(scaled.length > 0 ? { scaled } : {}),
    ...(elements.length > 0 ? { elements } : {}),
  };
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/**
 * `(a || b || c)` → `CONCAT(a, b, c)`: `||` is `OR` in MySQL unless the session's `sql_mode` has
 * `PIPES_AS_CONCAT`, which a pool or transaction the application passes may not. Parenthesized runs
 * without nested parentheses, the only form the core writes.
 */
function concatenations(sql: string): string {
  if (!sql.includes("||")) return sql;
  return sql.replace(/\(([^()']*(?:'[^']*'[^()']*)*\|\|[^()]*)\)/g, (_match, inner: string) => `CONCAT(${inner.split("||").map((p) => p.trim()).join(", ")})`);
}

/** In an UPDATE or DELETE of cairnq_tasks: every `IN (SELECT … FROM cairnq_tasks …)` as a derived table. */
function wrapPickedIds(sql: string): string {
  if (!/^(UPDATE|DELETE FROM) cairnq_tasks\b/.test(sql)) return sql;
  let out = sql;
  let from = 0;
  for (;;) {
    const at = out.indexOf("IN (SELECT ", from);
    if (at === -1) return out;
    const open = at + 3;
    const close = closing(out, open);
    const inner = out.slice(open + 1, close);
    if (new RegExp(`\\bFROM ${TASKS}\\b`).test(inner)) {
      const wrapped = `(SELECT * FROM (${inner}) cq_pick)`;
      out = out.slice(0, open) + wrapped + out.slice(close + 1);
      from = open + wrapped.length;
    } else {
      from = close;
    }
  }
}

/** The JSON array of the ids {@link deletePickedIds} picked, as a table: `cq_ord`, `cq_id`. */
const PICKED = `JSON_TABLE(${CAPTURED}, '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_id VARCHAR(255) PATH '$')) cq_j`;

/**
 * `DELETE FROM cairnq_tasks WHERE id IN (SELECT * FROM (SELECT id FROM cairnq_tasks …) cq_pick) RETURNING id`
 * (purge, whose whole `WHERE` is the picks) → in one transaction: the picks read and locked first, their
 * ids collected in {@link IDS} (`SELECT COUNT(<append>) INTO @cq_picked FROM (SELECT id AS cq_id FROM
 * cairnq_tasks …) cq_pick`), then `DELETE cairnq_tasks FROM <those ids> STRAIGHT_JOIN cairnq_tasks ON …`,
 * then the ids read back as the statement's rows. MariaDB before 11.1 has no semi-join for a
 * single-table `DELETE`, and its `RETURNING` is single-table only: the `IN` form walked the whole table
 * for every batch and probed the picks per row (EXPLAIN: `ALL`, 930,473 rows, on a table of 966k
 * tasks; 3.3 s per batch of 1,000), where the join deletes each picked row by primary key (`eq_ref`
 * on PRIMARY). Every id read back is a row this transaction locked (`FOR UPDATE`) and then deleted, so
 * the ids are the deleted rows, in the picks' order; rows of other tables go with their task through
 * the foreign keys' cascade, as before. Any other text gives `null`.
 */
function deletePickedIds(sql: string): string[] | null {
  const head = `DELETE FROM ${TASKS} WHERE id IN (SELECT * FROM (`;
  const tail = ") cq_pick) RETURNING id";
  if (!sql.startsWith(head) || !sql.endsWith(tail)) return null;
  const innerOpen = head.length - 1;
  if (closing(sql, innerOpen) !== sql.length - tail.length) return null;
  const picks = sql.slice(innerOpen + 1, sql.length - tail.length);
  const select = `SELECT id FROM ${TASKS} `;
  if (!picks.startsWith(select)) return null;
  const aliased = `SELECT id AS cq_id FROM ${TASKS} ${picks.slice(select.length)}`;
  return [
    EMPTY,
    `SELECT COUNT(${append("JSON_QUOTE(cq_id)")}) INTO @cq_picked FROM (${aliased}) cq_pick`,
    `DELETE ${TASKS} FROM ${PICKED} STRAIGHT_JOIN ${TASKS} ON ${TASKS}.id = cq_j.cq_id`,
    `SELECT cq_id AS id FROM ${PICKED} ORDER BY cq_ord`,
  ];
}

/**
 * `UPDATE cairnq_tasks SET … WHERE id IN (SELECT * FROM (SELECT id FROM cairnq_tasks …) cq_pick)` →
 * `UPDATE (SELECT id AS cq_id FROM cairnq_tasks …) cq_pick STRAIGHT_JOIN cairnq_tasks ON
 * cairnq_tasks.id = cq_pick.cq_id SET … [WHERE <the conditions after the IN>]`: the picks first,
 * then each picked row by primary key (see the file's notes). Only where the `IN` opens the `WHERE`
 * (alone or followed by `AND …`) and no assignment reads the stash of {@link oldValuesInSet}, whose
 * left-to-right reading a multi-table `UPDATE` does not promise. Any other text is returned as it is.
 */
function joinPickedIds(sql: string): string {
  const head = `UPDATE ${TASKS} SET `;
  if (!sql.startsWith(head) || sql.includes("@cq_o_")) return sql;
  const where = topLevel(sql, "WHERE");
  if (where.length !== 1) return sql;
  const at = where[0] as number;
  const condition = at + "WHERE ".length;
  const wrapped = "id IN (SELECT * FROM (";
  if (!sql.startsWith(wrapped, condition)) return sql;
  const open = condition + "id IN ".length;
  const close = closing(sql, open);
  // The picks, then possibly more conditions on the picked rows (a bulk cancel re-checks its filter).
  const rest = sql.slice(close + 1);
  if (rest !== "" && !rest.startsWith(" AND ")) return sql;
  const innerOpen = condition + wrapped.length - 1;
  const innerClose = closing(sql, innerOpen);
  if (sql.slice(innerClose + 1, close) !== " cq_pick") return sql;
  const picks = sql.slice(innerOpen + 1, innerClose);
  const select = `SELECT id FROM ${TASKS} `;
  if (!picks.startsWith(select)) return sql;
  const aliased = `SELECT id AS cq_id FROM ${TASKS} ${picks.slice(select.length)}`;
  const more = rest === "" ? "" : ` WHERE ${rest.slice(" AND ".length)}`;
  return `UPDATE (${aliased}) cq_pick STRAIGHT_JOIN ${TASKS} ON ${TASKS}.id = cq_pick.cq_id SET ${sql.slice(head.length, at).trimEnd()}${more}`;
}

/** The session variable holding whether an unbounded pick found any row ({@link gateUnboundedPicks}). */
const CAND = "@cq_cand";

/**
 * A joined picked-ids update whose picks lock every matching row (`FOR UPDATE SKIP LOCKED` without
 * `LIMIT`: the lease recovery of §5.10 step 4) → first `SELECT EXISTS (SELECT 1 FROM cairnq_tasks
 * WHERE <picks' condition>) INTO @cq_cand`, a plain read that locks nothing, then the update only
 * when it found a row: `EXECUTE IMMEDIATE IF(@cq_cand, '<the update>', 'DO 0')` for an update without
 * parameters (the recovery), else the update gated on it (`… WHERE @cq_cand [AND (<the rest>)]`);
 * either way the same statement as before when the read found a row.
 * MariaDB's locking read of a range also locks the first index record past it and keeps that lock
 * until the transaction ends: the recovery's read of the lease index locked the running task with
 * the earliest lease, whose complete or heartbeat then waited for the claim to commit (a locking
 * read in a second session timed out behind it). With nothing expired the gated update is
 * `DO 0` (or, gated, "Impossible WHERE"): no derived table, no lock, and a fraction of the server
 * time (MariaDB profiles, no expired lease: gate 113–120 µs + `DO 0` through `EXECUTE IMMEDIATE` 55,
 * or + the gated update 160–185, against 352–507 for the update alone). Each statement reads its
 * own clock (recovery's is the statement clock): the update's is no earlier than the read's, so it
 * recovers every lease the read found expired; one expiring between the two waits for the next
 * claim, as one expiring just after the update always did. Any other text is returned alone.
 */
function gateUnboundedPicks(sql: string): string[] {
  const head = `UPDATE (SELECT id AS cq_id FROM ${TASKS} WHERE `;
  const skip = " FOR UPDATE SKIP LOCKED";
  if (!sql.startsWith(head)) return [sql];
  const close = closing(sql, "UPDATE ".length);
  const picks = sql.slice(head.length, close);
  if (!picks.endsWith(skip)) return [sql];
  const condition = picks.slice(0, -skip.length);
  if (topLevel(condition, "LIMIT").length > 0 || topLevel(condition, "ORDER BY").length > 0) return [sql];
  // `SELECT … INTO`, not `SET @v = EXISTS (…)`: MariaDB 10.11 spent about 0.17 ms more on the SET form of the same read
  // (one-row claims, 600 alternated rounds, round-trip medians over the draw alone: +270 µs as SET, +96 as SELECT … INTO).
  const gate = `SELECT EXISTS (SELECT 1 FROM ${TASKS} WHERE ${condition}) INTO ${CAND}`;
  // Without parameters the update is a string the server runs only when the read found a row (MariaDB's EXECUTE IMMEDIATE):
  // with none found, `DO 0` costs 55 µs where the gated update still cost 185 (prepared, then found impossible).
  if (!sql.includes("?")) return [gate, `EXECUTE IMMEDIATE IF(${CAND}, ${quoted(sql)}, 'DO 0')`];
  const where = topLevel(sql, "WHERE", close + 1)[0];
  const gated = where === undefined ? `${sql} WHERE ${CAND}` : `${sql.slice(0, where)}WHERE ${CAND} AND (${sql.slice(where + "WHERE ".length)})`;
  return [gate, gated];
}

/** `text` as a MySQL string literal (backslash escapes on, as `MySQLSyntax.literal` writes them). */
function quoted(text: string): string {
  return `'${text.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

/**
 * `UPDATE cairnq_tasks SET … [WHERE …] RETURNING cols` → the update with the id capture as its last
 * assignment, and the select of `cols` by the captured ids in update order. `null` for any other text.
 */
function splitReturningUpdate(sql: string): { update: string; select: string } | null {
  if (!sql.startsWith(`UPDATE ${TASKS} SET `)) return null;
  const returning = topLevel(sql, "RETURNING").at(-1);
  if (returning === undefined) return null;
  const columns = sql.slice(returning + "RETURNING".length).trim();
  const body = sql.slice(0, returning).trimEnd();
  const where = setListEnd(body, `UPDATE ${TASKS} SET `.length);
  const update = withCapture(body, where, "JSON_QUOTE(id)");
  const select =
    `SELECT STRAIGHT_JOIN ${qualify(columns)} FROM JSON_TABLE(${CAPTURED}, '$[*]' COLUMNS (cq_ord FOR ORDINALITY, cq_id VARCHAR(255) PATH '$')) cq_j ` +
    `JOIN ${TASKS} ON ${TASKS}.id = cq_j.cq_id ORDER BY cq_j.cq_ord`;
  return { update, select };
}

/**
 * `UPDATE cairnq_tasks SET … WHERE <no subquery> RETURNING a, b` (bare columns: a complete's
 * `id, status`) → the update appending `JSON_ARRAY(a, b)` to `@cq_ids` (see {@link CAPTURED}) as its
 * last assignment, whose values the rows are then decoded from (`SELECT @cq_ids`). A single-table
 * `UPDATE` whose `WHERE` reads no table runs its assignments left to right, so the last one sees
 * the row as written: what `RETURNING` gives, without reading the rows back by id, and without a
 * transaction around the three statements (the variable is the session's; the update commits on
 * its own). Server time per lone complete: the read-back join and the transaction's two
 * statements. `null` for any other text (`RETURNING *`, a joined or picked update, a subquery).
 */
function capturedReturning(sql: string): { update: string; columns: string[] } | null {
  if (!sql.startsWith(`UPDATE ${TASKS} SET `) || sql.includes("SELECT ") || sql.includes("@cq_o_")) return null;
  const returning = topLevel(sql, "RETURNING").at(-1);
  if (returning === undefined) return null;
  const columns = sql.slice(returning + "RETURNING".length).split(",").map((c) => c.trim());
  if (!columns.every((c) => /^[a-z_]+$/.test(c))) return null;
  const body = sql.slice(0, returning).trimEnd();
  const where = setListEnd(body, `UPDATE ${TASKS} SET `.length);
  if (topLevel(body, "FROM", `UPDATE ${TASKS} SET `.length).length > 0) return null;
  return { update: withCapture(body, where, `JSON_ARRAY(${columns.join(", ")})`), columns };
}

/**
 * The update `body` (its `SET` list ending at `where`) with one more assignment, last, that appends
 * `json` to {@link IDS} for each row it changes and leaves {@link UNTOUCHED} as it was.
 */
function withCapture(body: string, where: number, json: string): string {
  const target = UNTOUCHED;
  const capture = `, ${target} = IF((${append(json)}) IS NULL, ${target}, ${target})`;
  return `${body.slice(0, where).trimEnd()}${capture}${where < body.length ? ` ${body.slice(where)}` : ""}`;
}

/**
 * `UPDATE cairnq_tasks SET … FROM <rows> AS b WHERE …` (the write combiner's multi-row transition,
 * with Postgres' `UPDATE … FROM`) → `UPDATE <rows> AS b STRAIGHT_JOIN cairnq_tasks SET … WHERE …`:
 * the bound rows first, each task row then read by the primary key the guard compares with
 * `b.p_taskId`. A multi-table `UPDATE` evaluates every assignment on the row as it was (the
 * standard's semantics, as Postgres), which the plan's own assignments are written for (see
 * {@link UNTOUCHED}). Any other text is returned as it is.
 */
function joinUpdateSource(sql: string): string {
  const head = `UPDATE ${TASKS} SET `;
  if (!sql.startsWith(head)) return sql;
  const from = topLevel(sql, "FROM", head.length)[0];
  if (from === undefined) return sql;
  const where = topLevel(sql, "WHERE", from)[0] ?? sql.length;
  const source = sql.slice(from + "FROM ".length, where).trim();
  return `UPDATE ${source} STRAIGHT_JOIN ${TASKS} SET ${sql.slice(head.length, from).trim()}${where < sql.length ? ` ${sql.slice(where)}` : ""}`;
}

/** `*` → `cairnq_tasks.*`; bare column names qualified by the table. */
function qualify(columns: string): string {
  if (columns === "*") return `${TASKS}.*`;
  return columns
    .split(",")
    .map((c) => c.trim())
    .map((c) => (/^[a-z_]+$/.test(c) ? `${TASKS}.${c}` : c))
    .join(", ");
}
