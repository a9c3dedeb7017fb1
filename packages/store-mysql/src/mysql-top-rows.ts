/**
 * MySQL/MariaDB's spelling of `SqlSyntax.topRowsJoin`: each outer row's top
 * rows of a table, where MariaDB 10.11 has no `LATERAL`, refuses `LIMIT`
 * inside `IN (…)` and lets neither a derived table nor a CTE read the outer
 * row. Only a scalar subquery in the select list or the `ON` of a
 * `JSON_TABLE` may, so the keys travel as one JSON array, expanded with
 * `JSON_TABLE` (which may read the outer row, as a lateral table would) and
 * each looked up by equality.
 */

/**
 * How many rows per outer row the walk takes one at a time (the limits a group draw asks for:
 * `groupConcurrency`, capped by what the claim still needs). Above it the keys are aggregated in one
 * read of every matching row (see {@link topRowsJoin}).
 */
export const TOP_ROWS_WALKED = 8;

/** The parts of `SELECT <key> AS <name> FROM <table> <alias> WHERE <condition> ORDER BY <order> LIMIT <n>`. */
interface TopRowsQuery {
  readonly selected: string;
  readonly from: string;
  readonly alias: string;
  readonly condition: string;
  readonly order: readonly { readonly expr: string; readonly desc: boolean }[];
  readonly orderText: string;
  readonly limit: string;
}

function parse(subquery: string): TopRowsQuery {
  const fail = (): never => {
    throw new Error(`MySQLSyntax.topRowsJoin expects SELECT <key> FROM <table> <alias> WHERE … ORDER BY … LIMIT n, got: ${subquery}`);
  };
  const from = subquery.indexOf(" FROM ");
  const where = subquery.indexOf(" WHERE ", from);
  const order = subquery.lastIndexOf(" ORDER BY ");
  const limit = subquery.lastIndexOf(" LIMIT ");
  if (!subquery.startsWith("SELECT ") || from === -1 || where === -1 || order < where || limit < order) fail();
  const source = subquery.slice(from + " FROM ".length, where).trim().split(/\s+/);
  const alias = source.length === 2 ? (source[1] as string) : fail();
  const orderText = subquery.slice(order + " ORDER BY ".length, limit);
  return {
    selected: subquery.slice("SELECT ".length, from).replace(/ AS \w+$/, ""),
    from: source[0] as string,
    alias,
    condition: subquery.slice(where + " WHERE ".length, order),
    order: orderText.split(", ").map((item) => {
      const m = /^(.*?)(?: (ASC|DESC))?$/.exec(item.trim()) ?? fail();
      return { expr: m[1] as string, desc: m[2] === "DESC" };
    }),
    orderText,
    limit: subquery.slice(limit + " LIMIT ".length),
  };
}

/** `text` with every column reference `alias.` read as `to.` instead. */
function renamed(text: string, alias: string, to: string): string {
  return text.replace(new RegExp(`(?<![\\w.\`])${alias.replace(/[^\w]/g, "\\$&")}\\.`, "g"), `${to}.`);
}

/** Rows of `row` strictly after those of `prev` in `order` (every column not null, the last one unique). */
function after(q: TopRowsQuery, row: string, prev: string): string {
  const terms = q.order.map((o) => ({ mine: renamed(o.expr, q.alias, row), theirs: renamed(o.expr, q.alias, prev), op: o.desc ? "<" : ">" }));
  let cond = "";
  for (let i = terms.length - 1; i >= 0; i--) {
    const t = terms[i] as (typeof terms)[number];
    const strict = `${t.mine} ${t.op} ${t.theirs}`;
    cond = cond === "" ? strict : `(${strict} OR (${t.mine} = ${t.theirs} AND ${cond}))`;
  }
  return cond;
}

/** The key of `alias`'s row as JSON array text's element. */
const asText = (expr: string): string => `CAST(${expr} AS CHAR CHARACTER SET utf8mb4)`;

/**
 * Walk level `i`: the first row after level `i − 1`'s (none for `i = 0`), as a one-element JSON array
 * followed by level `i + 1`'s when the limit asks for more, or `NULL` when there is no such row.
 */
function level(q: TopRowsQuery, i: number, walked: number): string {
  const me = `${q.alias}_w${i}`;
  const next =
    i + 1 < walked ? `IF(${q.limit} > ${i + 1}, COALESCE(${level(q, i + 1, walked)}, JSON_ARRAY()), JSON_ARRAY())` : "JSON_ARRAY()";
  const pastPrevious = i === 0 ? "" : `${after(q, me, `${q.alias}_w${i - 1}`)} AND `;
  return (
    `(SELECT JSON_MERGE_PRESERVE(JSON_ARRAY(${asText(renamed(q.selected, q.alias, me))}), ${next}) ` +
    `FROM ${q.from} ${me} WHERE ${pastPrevious}(${renamed(q.condition, q.alias, me)}) ORDER BY ${renamed(q.orderText, q.alias, me)} LIMIT 1)`
  );
}

/**
 * The `LEFT JOIN` of each outer row's top rows of `table` (see `SqlSyntax.topRowsJoin`), its cost
 * bounded by the rows it returns. Up to {@link TOP_ROWS_WALKED} rows the subquery's first row is read
 * with `LIMIT 1`, and each next one by a scalar subquery nested in the previous one's select list,
 * reading the first row after it in the subquery's order (the order's columns must be non-null, its
 * last one unique, and an index must hold the order after the subquery's equalities: the walk stops
 * at the row it wants, so level `i` reads `i + 1` index entries and the subquery's own condition for
 * one row). Each level runs only when the limit asks for it and the previous one found a row. The
 * server cannot seek a correlated subquery to the previous row (no range access on outer values), so
 * each level reads the index from the group's start again: entries its condition skips (a group's
 * tasks that are not due) are read once per level, index-only, where the aggregate read them once
 * and every entry after them too. Above
 * {@link TOP_ROWS_WALKED}, `JSON_ARRAYAGG(… ORDER BY … LIMIT n)`, which reads every row of the
 * subquery before its `LIMIT`. Not `alias.key IN (SELECT … FROM JSON_TABLE(…))`: MariaDB evaluated
 * that subquery for every row of `table` and outer row (a group claim over one group of 1,000 queued
 * tasks took 7–10 s).
 */
export function topRowsJoin(table: string, alias: string, key: string, subquery: string): string {
  const q = parse(subquery);
  const all =
    `SELECT JSON_ARRAYAGG(${asText(q.selected)} ORDER BY ${q.orderText} LIMIT ${q.limit}) ` + `FROM ${q.from} ${q.alias} WHERE ${q.condition}`;
  const keys = `CASE WHEN ${q.limit} <= ${TOP_ROWS_WALKED} THEN ${level(q, 0, TOP_ROWS_WALKED)} ELSE (${all}) END`;
  return `LEFT JOIN JSON_TABLE(${keys}, '$[*]' COLUMNS (v VARCHAR(1024) PATH '$')) cq_k ON TRUE LEFT JOIN ${table} ${alias} ON ${alias}.${key} = cq_k.v`;
}
