import type { ParamExpr, Params, ParamType } from "@cairnq/protocol/adapter";
import type { Bind } from "./compiler.js";
import type { ClaimProbeParts, ListPickParts } from "./sql-syntax.js";
import { BaseSqlSyntax, claimWindow, orderText } from "./sql-syntax.js";

const CASTS: Readonly<Record<ParamType, string>> = {
  text: "text",
  int: "bigint",
  float: "double precision",
  bool: "boolean",
  json: "jsonb",
  textList: "text[]",
};

const ARRAY_CASTS: Readonly<Record<ParamType, string>> = {
  text: "text[]",
  int: "bigint[]",
  float: "double precision[]",
  bool: "boolean[]",
  json: "text[]",
  textList: "text[]",
};

/** The characters an element of an array literal escapes with a backslash inside its quotes. */
const ARRAY_ESCAPED = /[\\"]/;
const ARRAY_ESCAPES = /[\\"]/g;

/**
 * Postgres's side of §2.3: `$n` placeholders cast to their type (so a
 * parameter is typed even where only `IS NULL` reads it), native booleans,
 * string lists as `text[]` matched with `= any(…)`, JSON as text cast to
 * `jsonb`, and `FOR UPDATE SKIP LOCKED` row picking.
 *
 * Only the compile-time half of a Postgres dialect: the executor, key lock,
 * migrations and LISTEN wakeups live in `@cairnq/store-postgres`.
 *
 * @example
 * new PostgresSyntax().placeholder(2, "textList"); // "$2::text[]"
 */
export class PostgresSyntax extends BaseSqlSyntax {
  override readonly skipLockedClause: string = " FOR UPDATE SKIP LOCKED";
  readonly writableCtes = true;

  placeholder(index: number, type: ParamType): string {
    return type === "json" ? `cast($${index} as jsonb)` : `$${index}::${CASTS[type]}`;
  }

  /**
   * As given, but a `textList` (a JS array) as the text of its array literal, built as {@link PostgresSyntax.batchColumn}
   * builds a column's: the driver's own encoding of a list of 64 task ids (a group draw's picks, the groups it
   * served) grew the text by three concatenations per element, about 700 bytes for the collector per task a
   * grouped c64 claim took (a sampling heap profile of `store.claim` cycles over 10,000 groups).
   */
  bindValue(value: unknown, type: ParamType): unknown {
    if (type !== "textList" || !Array.isArray(value)) return value;
    return arrayLiteral(value.length, (i) => value[i] as unknown) ?? value;
  }

  /**
   * A column of a multi-row statement (the settlements a combined write carries, a batch of submits)
   * as the text of a Postgres array literal ({@link arrayLiteral}), which its placeholder's `::<type>[]`
   * cast reads. The driver's own encoding grows the text by three concatenations per value: about
   * 700 bytes for the collector per settled task of a c64 drain (a sampling heap profile of the
   * worker). A column holding anything but strings, numbers, booleans and null is left to the driver.
   */
  override batchColumn(rows: readonly Params[], name: string, type: ParamType): unknown {
    return arrayLiteral(rows.length, (i) => (rows[i] as Params)[name]) ?? super.batchColumn(rows, name, type);
  }

  override jsonLiteral(json: string): string {
    return `cast(${this.literal(json)} as jsonb)`;
  }

  inList(expr: string, listPlaceholder: string): string {
    return `${expr} = any(${listPlaceholder})`;
  }

  /**
   * `LEFT JOIN LATERAL` of the subquery: one run of the subquery per outer row. A subquery selecting
   * only its row's key (`SELECT t.key AS key FROM table t …`) selects the whole row instead, so the
   * rows need no second read by key (a group draw's page: 64 primary-key reads of the group rows the
   * walk index had already given); any other is followed by `table` by its key.
   */
  override topRowsJoin(table: string, alias: string, key: string, subquery: string): string {
    const keyOnly = /^SELECT (\w+)\.(\w+) AS (\w+) FROM (\w+) (\w+) /.exec(subquery);
    if (keyOnly !== null && keyOnly[2] === key && keyOnly[3] === key && keyOnly[4] === table && keyOnly[5] === keyOnly[1]) {
      return `LEFT JOIN LATERAL (SELECT ${keyOnly[1]}.*${subquery.slice(subquery.indexOf(" FROM "))}) ${alias} ON TRUE`;
    }
    return `LEFT JOIN LATERAL (${subquery}) ${alias}_top ON TRUE LEFT JOIN ${table} ${alias} ON ${alias}.${key} = ${alias}_top.${key}`;
  }

  /**
   * `unnest($1::text[], $2::bigint[], …) AS b("p_taskId", …)`: one typed array per parameter, so the
   * statement text is the same for every row count and prepares once. JSON travels as `text[]` and is
   * cast where it is read.
   */
  override batchSource(params: readonly ParamExpr[], slot: (key: string, bind: Bind) => number): string {
    const arrays = params.map((p) => {
      if (p.type === "textList") throw new Error(`list parameter '${p.name}' cannot vary per row of a multi-row statement`);
      return `$${slot(`#column:${p.name}`, { kind: "column", name: p.name, type: p.type })}::${ARRAY_CASTS[p.type]}`;
    });
    const columns = params.map((p) => this.quoteId(`p_${p.name}`));
    return `unnest(${arrays.join(", ")}) AS b(${columns.join(", ")})`;
  }

  /**
   * `SELECT (SELECT 1 … WHERE <claimable> ORDER BY <claim index order> LIMIT 1) IS NOT NULL OR
   * EXISTS (<expired>)`. Why not `EXISTS`: the planner costs an `EXISTS` as a seq scan that stops at
   * the first match, assuming matches are spread evenly; in a table that holds many terminal rows
   * next to the queued ones (no purge for a while) they are not, and the probe read the whole heap
   * (`pnpm bench --only claim`, the growth figure: 1M terminal + 100k queued rows). The index order makes the claim index
   * the only cheap plan, and an empty queue costs an index descent instead of a full scan.
   */
  override claimProbe(parts: ClaimProbeParts): string {
    return (
      `SELECT (SELECT 1 FROM ${parts.table}${parts.claimableWhere} ORDER BY ${parts.claimIndexOrder} LIMIT 1) IS NOT NULL ` +
      `OR EXISTS (SELECT 1 FROM ${parts.table}${parts.expiredWhere}) AS found`
    );
  }

  /**
   * The picks over several values of the listed column (the claim draw over several queues), read per
   * value in index order instead of sorting every matching row (`queue = ANY(…)` leaves the claim index
   * no order to give: a draw of 16 over 8 queues read and sorted all 100,000 due rows, 49 ms, against
   * 640 index entries and 5 ms this way; `EXPLAIN ANALYZE`, `test/integration/claim-planner.test.ts`):
   * 1. `cq_w`, the window: the first `w = 4n + 16` rows in claim order of each value
   *    (`unnest(list) CROSS JOIN LATERAL (… WHERE queue = value AND <rest> ORDER BY … LIMIT w)`, an
   *    index walk each), cut to the first `w` of all, read without locking;
   * 2. `cq_pick`, the locking pick among them: each read again by primary key in window order with the
   *    whole condition, `LIMIT n FOR UPDATE OF <table> SKIP LOCKED`. The lock sits above the window's
   *    order, so it locks only the rows it takes (a row a concurrent claim holds is skipped; one that
   *    claim took and committed fails the condition, re-checked on the locked row), never a row it
   *    merely read — a lateral read that locked its `n` rows per queue would keep the others' rows from
   *    a concurrent claim (the kit's `claim-concurrent-leave-nothing-due`);
   * 3. `cq_more`, only when the pick came back short and the window was full (more matching rows may
   *    lie past it, held rows filled it): the sorting pick of the rest, as before, so a claim is
   *    never short while matching rows are free. Otherwise the server does not run it (a one-time filter).
   * The picks' ids leave as one array (`unnest(ARRAY(…))`), which the planner counts as a few rows: as a
   * plain subquery it counted the fallback's estimate (a share of every due row), and the update joined
   * its ids by hashing a scan of the whole table (5,160 rows read for a claim of 4 over 5,000 tasks).
   * Why `w` over `n`: concurrent claims of the same queues take their rows from the top of the same
   * window; {@link claimWindow} leaves room for about four claims of the same size before the sorting
   * pick is needed (`@cairnq/store-mysql` uses it too, capped at its `MAX_WINDOW`).
   */
  override listPicks(parts: ListPickParts): string {
    const { table, column, limit } = parts;
    const columns = ["id", ...parts.orderBy.map((o) => o.column).filter((c) => c !== "id")];
    const window = claimWindow(limit);
    const rest = parts.rest === null ? "" : ` AND ${parts.rest}`;
    const order = orderText(parts.orderBy);
    const windowOrder = orderText(parts.orderBy, "cq_");
    const lock = parts.skipLocked === "" ? "" : ` FOR UPDATE OF ${table} SKIP LOCKED`;
    const perValue =
      `SELECT ${columns.map((c) => `${c} AS cq_${c}`).join(", ")} FROM ${table} ` +
      `WHERE ${column} = cq_q.cq_value${rest} ORDER BY ${order} LIMIT ${window}`;
    return (
      `SELECT id FROM unnest(ARRAY(WITH cq_w AS (SELECT cq_c.* FROM unnest(${parts.list}) AS cq_q(cq_value) CROSS JOIN LATERAL (${perValue}) cq_c ` +
      `ORDER BY ${windowOrder} LIMIT ${window}), ` +
      `cq_pick AS (SELECT id FROM cq_w JOIN ${table} ON id = cq_id WHERE ${parts.condition} ORDER BY ${windowOrder} LIMIT ${limit}${lock}), ` +
      `cq_more AS (SELECT id FROM ${table} WHERE (${parts.condition}) AND (SELECT count(*) FROM cq_pick) < ${limit} ` +
      `AND (SELECT count(*) FROM cq_w) >= ${window} AND id NOT IN (SELECT id FROM cq_pick) ` +
      `ORDER BY ${order} LIMIT ${limit} - (SELECT count(*) FROM cq_pick)${parts.skipLocked}) ` +
      `SELECT id FROM cq_pick UNION ALL SELECT id FROM cq_more)) AS cq_ids(id)`
    );
  }

  /** `pg_notify` on the channel the v1 notify trigger uses (§3.8), so listeners need nothing new. */
  queuedSignal(queue: string): string {
    return `SELECT pg_notify('cairnq_queued', ${queue})`;
  }

  override batchRef(param: ParamExpr): string {
    const ref = super.batchRef(param);
    return param.type === "json" ? `cast(${ref} as jsonb)` : ref;
  }
}

/**
 * The text of a Postgres array literal of `count` values (`valueAt(i)`), which a `::<type>[]` cast reads: what
 * the driver would make of the JS array — every value quoted, `\` and `"` escaped, `NULL` for null or
 * undefined — built in one join of an array sized up front (growing it by pushes was ~190 bytes per settled
 * task of a c64 drain). `null` when a value is anything but a string, number, boolean or bigint (left to the driver).
 */
function arrayLiteral(count: number, valueAt: (i: number) => unknown): string | null {
  // Sized once (at most three pieces per value, the braces), so it never grows as it fills; holes join as "".
  const parts: string[] = new Array<string>(count * 3 + 2);
  parts[0] = "{";
  let k = 1;
  for (let i = 0; i < count; i++) {
    const value = valueAt(i);
    if (value === null || value === undefined) {
      parts[k++] = i > 0 ? ",NULL" : "NULL";
      continue;
    }
    let text: string;
    if (typeof value === "string") text = value;
    else if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") text = String(value);
    else return null;
    parts[k++] = i > 0 ? ',"' : '"';
    parts[k++] = ARRAY_ESCAPED.test(text) ? text.replace(ARRAY_ESCAPES, "\\$&") : text;
    parts[k++] = '"';
  }
  parts[k] = "}";
  return parts.join("");
}
