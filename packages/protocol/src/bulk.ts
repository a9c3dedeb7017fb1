/**
 * Bulk client transitions: cancel or retry every task matching `list`'s
 * filters, one bounded batch at a time.
 *
 * Terminology:
 * - **batch**: one statement over at most `limit` rows, picked in id order
 *   after a cursor (`afterId`), so that a caller looping over batches visits
 *   every matching row once, even rows a batch leaves matching (a cancelled
 *   running task stays `running`, flagged).
 * - The transition of each row is the single-row rule's own branches
 *   (`CANCEL`, `RETRY`) over a selection whose guard is the rule's status
 *   guard (`CANCELABLE`, `RETRYABLE`) AND the filters; nothing is re-derived.
 *
 * A SQL store compiles a batch into ONE conditional statement whose guard is
 * evaluated again on each row's current values as it is written, so each row
 * is as atomic against concurrent writers (peers included) as `cancel(id)`.
 * Not a protocol v1 operation: a peer sees the same row changes as from as
 * many single cancels or retries.
 */
import type { Params } from "./decide.js";
import { describe } from "./describe.js";
import { InvalidArgument } from "./errors.js";
import type { Expr, InExpr } from "./expr.js";
import { x } from "./expr.js";
import { optionalText, requireInt, requireKnownKeys } from "./inputs.js";
import type { SetTransition } from "./rules.js";
import { CANCEL, CANCELABLE, PARAMS, RETRY, RETRYABLE } from "./rules.js";
import type { TaskStatus } from "./statuses.js";
import { isTaskStatus, STATUSES } from "./statuses.js";
import type { BulkBatchInput, RetryBatchInput } from "./store.js";

/** Default rows per bulk batch (as purge's, §5.9). */
export const DEFAULT_BULK_LIMIT = 1000;

/** The cursor parameter: only rows whose id sorts after it (`null` = from the start). */
const AFTER_ID = x.param("afterId", "text");

/** `list`'s optional AND-ed equality filters (§5.4). */
export const LIST_FILTER: Expr = x.and(
  x.optionalEq("status", PARAMS.status),
  x.optionalEq("queue", PARAMS.queue),
  x.optionalEq("name", PARAMS.name),
  x.optionalEq("root_id", PARAMS.rootId),
  x.optionalEq("correlation_id", PARAMS.correlationId),
);

const AFTER: Expr = x.or(x.isNull(AFTER_ID), x.gt(x.col("id"), AFTER_ID));

function batchOf(op: string, single: typeof CANCEL, guard: Expr): SetTransition {
  return {
    op,
    clock: single.clock,
    selection: {
      where: x.and(guard, LIST_FILTER, AFTER),
      orderBy: [{ column: "id", direction: "asc" }],
      limit: PARAMS.limit,
      // Wait for a row another transaction holds rather than skip it: a bulk cancel must not miss
      // a task a worker is claiming or settling at that moment.
      skipLocked: false,
    },
    branches: single.branches,
  };
}

/** `cancelBatch`: `CANCEL`'s branches (T3/T4) over the cancelable rows matching the filters, in id order. */
export const CANCEL_BATCH: SetTransition = batchOf("cancelBatch", CANCEL, CANCELABLE);

/** `retryBatch`: `RETRY`'s branch (T14) over the retryable rows matching the filters, in id order. */
export const RETRY_BATCH: SetTransition = batchOf("retryBatch", RETRY, RETRYABLE);

/** The statuses a bulk operation's guard admits: a `status` filter outside them could match nothing. */
function guardStatuses(guard: Expr): readonly TaskStatus[] {
  return (guard as InExpr).values as readonly TaskStatus[];
}

const FILTER_KEYS = ["status", "queue", "name", "rootId", "correlationId"] as const;
const BATCH_KEYS = [...FILTER_KEYS, "limit", "afterId"] as const;
const RETRY_KEYS = [...BATCH_KEYS, "resetAttempt"] as const;

/**
 * Validates a bulk input: a plain object with only known keys (a misspelt
 * filter silently ignored would widen the operation to every task), filters
 * as `list`'s, a status the guard admits, `limit` an integer ≥ 1.
 */
function batchParams(input: unknown, op: string, guard: Expr, keys: readonly string[]): Params & { limit: number } {
  input ??= {};
  if (typeof input !== "object" || Array.isArray(input)) {
    throw new InvalidArgument("input", `${op} takes an object of filters, got ${describe(input)}`);
  }
  const given = input as Record<string, unknown>;
  requireKnownKeys(given, keys, op);
  const status = given.status ?? null;
  const allowed = guardStatuses(guard);
  if (status !== null && (!isTaskStatus(status) || !allowed.includes(status))) {
    const why = isTaskStatus(status) ? `a ${status} task is never changed by it` : `statuses are ${STATUSES.join(", ")}`;
    throw new InvalidArgument("status", `${op} status must be one of ${allowed.join(", ")} (${why}), got ${describe(status)}`);
  }
  return {
    status,
    queue: optionalText(given.queue, "queue"),
    name: optionalText(given.name, "name"),
    rootId: optionalText(given.rootId, "rootId"),
    correlationId: optionalText(given.correlationId, "correlationId"),
    limit: given.limit === undefined ? DEFAULT_BULK_LIMIT : requireInt(given.limit, "limit", 1),
    afterId: optionalText(given.afterId, "rootId", "afterId"),
  };
}

/** Parameters of {@link CANCEL_BATCH}; `InvalidArgument` for unknown keys or a status no cancel changes. */
export function cancelBatchParams(input: BulkBatchInput = {}): Params & { limit: number } {
  return batchParams(input, "cancelMany", CANCELABLE, BATCH_KEYS);
}

/** Parameters of {@link RETRY_BATCH}; `InvalidArgument` for unknown keys or a status no retry changes. */
export function retryBatchParams(input: RetryBatchInput = {}): Params & { limit: number } {
  const params = batchParams(input, "retryMany", RETRYABLE, RETRY_KEYS);
  const resetAttempt = (input as RetryBatchInput | null)?.resetAttempt ?? false;
  if (typeof resetAttempt !== "boolean") {
    throw new InvalidArgument("resetAttempt", `resetAttempt must be a boolean, got ${describe(resetAttempt)}`);
  }
  return { ...params, resetAttempt };
}

/**
 * The cursor for the batch after one that changed `ids`: the greatest id, or
 * `null` when the batch changed nothing. Ids sort the same in JavaScript and
 * in both databases (`task_` + fixed-length base-32 in upper case, §2.4).
 */
export function nextBatchCursor(ids: readonly string[]): string | null {
  let last: string | null = null;
  for (const id of ids) if (last === null || id > last) last = id;
  return last;
}
