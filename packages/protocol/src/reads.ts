/**
 * The read operations' row filters as data (§5.4–§5.6), like the transition
 * rules: a SQL store compiles them into its `WHERE` clauses and the
 * in-memory store evaluates them with `holds`, so `list`, `stats` and
 * `queueDepth` pick the same rows everywhere. The orders and the counting
 * stay with each store (`ORDER BY` / a sort, `count(*)` / a loop).
 */
import type { Expr } from "./expr.js";
import { x } from "./expr.js";
import { LIST_FILTER } from "./bulk.js";
import { PARAMS } from "./rules.js";

/** Parameters of the reads that the transition rules do not define. */
export const READ_PARAMS = {
  beforeId: x.param("beforeId", "text"),
  maxDepth: x.param("maxDepth", "int"),
  offset: x.param("offset", "int"),
} as const;

/** `list` in id order pages by `beforeId` (§5.4): only ids before it; `null` starts at the newest. */
export const LIST_BEFORE_ID: Expr = x.or(x.isNull(READ_PARAMS.beforeId), x.lt(x.col("id"), READ_PARAMS.beforeId));

/** The rows `list` returns, before its order and page (§5.4): every given filter, and the keyset bound. */
export const LIST_ROWS: Expr = x.and(LIST_FILTER, LIST_BEFORE_ID);

/** The rows `stats` counts (§5.5): one queue, or every queue when `queue` is `null`. */
export const STATS_ROWS: Expr = x.optionalEq("queue", PARAMS.queue);

/** The rows `queueDepth` counts (§5.6): the queued tasks of one queue. */
export const QUEUE_DEPTH_ROWS: Expr = x.and(x.eq(x.col("queue"), PARAMS.queue), x.eq(x.col("status"), x.lit("queued")));
