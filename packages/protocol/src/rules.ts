/**
 * Protocol v1's state machine as data.
 *
 * Terminology (protocol v1 §4, §5):
 * - **guard**: the condition a row must meet for the operation to touch it;
 *   a row that fails it is left alone (the operation reports `null` or
 *   `LostLease`).
 * - **branch**: the first branch whose `when` holds decides the new values;
 *   the last branch has `when: null` ("otherwise").
 * - **assignments**: column → expression, evaluated against the row's values
 *   *before* the write, as SQL's `UPDATE … SET` does. Columns not assigned
 *   keep their value. Every update also sets `updated_at_ms = now` (§5.0).
 * - **selection**: for operations over many rows (lease recovery, claim draws,
 *   heartbeat_batch, purge), which rows and in what order.
 *
 * A store compiles these into one conditional statement per operation (see
 * {@link flattenAssignments}); the in-memory evaluator in `decide.ts` runs the
 * very same definitions.
 */
import { LEASE_EXPIRED_ENVELOPE } from "./envelope.js";
import type { Expr, ParamExpr } from "./expr.js";
import { x } from "./expr.js";
import type { TaskStatus } from "./statuses.js";
import { CANCELABLE_STATUSES, RETRYABLE_STATUSES, TERMINAL_STATUSES } from "./statuses.js";
import type { Task, TaskColumn } from "./task.js";

/** Column → new value. */
export type Assignments = Readonly<Partial<Record<TaskColumn, Expr>>>;

/**
 * Which clock a Postgres statement reads (§2.1): `statement` is real time
 * (`clock_timestamp()`), for statements that may run after waiting on locks;
 * `transaction` is the transaction's start (`now()`). SQLite reads the SDK
 * clock once per statement either way.
 */
export type Clock = "statement" | "transaction";

/** One outcome of a transition. */
export interface Branch {
  /** A stable name for the outcome (e.g. `requeue`), reported by the evaluator. */
  readonly name: string;
  /** The status the row ends in, for documentation and tests. */
  readonly to: TaskStatus;
  /** Condition over the row before the write; `null` = otherwise. */
  readonly when: Expr | null;
  readonly set: Assignments;
}

/** What a single-row operation reports when its guard matches nothing. */
export type Miss = "lost-lease" | "null";

/** A transition of one row, addressed by the `taskId` parameter. */
export interface RowTransition {
  readonly op: string;
  readonly clock: Clock;
  /** Includes `id = :taskId`. */
  readonly guard: Expr;
  readonly branches: readonly Branch[];
  readonly onMiss: Miss;
}

/** The rows a multi-row operation acts on. */
export interface Selection {
  readonly where: Expr;
  readonly orderBy: readonly { readonly column: TaskColumn; readonly direction: "asc" | "desc" }[];
  /** The parameter bounding the row count, if any. */
  readonly limit: ParamExpr | null;
  /** Postgres selects these rows `FOR UPDATE SKIP LOCKED` (§13). */
  readonly skipLocked: boolean;
}

/** A transition over every row of a selection. */
export interface SetTransition {
  readonly op: string;
  readonly clock: Clock;
  readonly selection: Selection;
  readonly branches: readonly Branch[];
}

/** The insert of a new task (T1): a value for every column it sets. */
export interface InsertRule {
  readonly op: "submit";
  readonly clock: Clock;
  readonly values: Assignments;
}

/** A delete over a selection (T15). */
export interface DeleteRule {
  readonly op: "purge";
  readonly clock: Clock;
  readonly selection: Selection;
}

const col = x.col;
const p = {
  taskId: x.param("taskId", "text"),
  workerId: x.param("workerId", "text"),
  leaseMs: x.param("leaseMs", "int"),
  attempt: x.param("attempt", "int"),
  progress: x.param("progress", "float"),
  message: x.param("message", "text"),
  result: x.param("result", "json"),
  error: x.param("error", "json"),
  retryable: x.param("retryable", "bool"),
  delayMs: x.param("delayMs", "int"),
  resetAttempt: x.param("resetAttempt", "bool"),
  queues: x.param("queues", "textList"),
  names: x.param("names", "textList"),
  taskIds: x.param("taskIds", "textList"),
  limit: x.param("limit", "int"),
  olderThanMs: x.param("olderThanMs", "int"),
  queue: x.param("queue", "text"),
  status: x.param("status", "text"),
  name: x.param("name", "text"),
  payload: x.param("payload", "json"),
  metadata: x.param("metadata", "json"),
  maxAttempts: x.param("maxAttempts", "int"),
  priority: x.param("priority", "int"),
  runAtDelayMs: x.param("runAtDelayMs", "int"),
  parentId: x.param("parentId", "text"),
  rootId: x.param("rootId", "text"),
  correlationId: x.param("correlationId", "text"),
} as const;

/** The parameters rules read, by name, with their binding types. */
export const PARAMS = p;

const NULL = x.lit(null);
const thisTask = x.eq(col("id"), p.taskId);
/** The cancel flag (§4): a cancel was requested while the task ran. */
export const FLAG: Expr = x.notNull(col("cancel_requested_at_ms"));
const noFlag = x.isNull(col("cancel_requested_at_ms"));

/**
 * The ownership predicate (§5.0), plus an attempt fence: when the caller
 * names the attempt its write belongs to, a later attempt of the same task
 * (even re-claimed by the same worker) does not match. Peers that omit the
 * fence are unaffected: it only narrows our own writes.
 */
export const OWNER: Expr = x.and(
  x.eq(col("status"), x.lit("running")),
  x.eq(col("worker_id"), p.workerId),
  x.gt(col("lease_until_ms"), x.now),
  x.or(x.isNull(p.attempt), x.eq(col("attempt"), p.attempt)),
);

/** A running task whose lease ran out (§5.10 step 4); recovery reads `≤ now`, ownership `> now`. */
export const EXPIRED: Expr = x.and(
  x.eq(col("status"), x.lit("running")),
  x.notNull(col("lease_until_ms")),
  x.le(col("lease_until_ms"), x.now),
);

/** A task a claim draw may take: queued, due, in one of `queues`, name-filtered (§5.10 step 5). */
export const CLAIMABLE: Expr = x.and(
  x.eq(col("status"), x.lit("queued")),
  x.inList(col("queue"), p.queues),
  x.inList(col("name"), p.names, true),
  x.le(col("run_at_ms"), x.now),
);

/** The statuses a cancel acts on (§5.7): the guard of `CANCEL` beyond the task id. */
export const CANCELABLE: Expr = x.in(col("status"), CANCELABLE_STATUSES);

/** The statuses a retry acts on (§5.8): the guard of `RETRY` beyond the task id; succeeded cannot be retried. */
export const RETRYABLE: Expr = x.in(col("status"), RETRYABLE_STATUSES);

const leaseFromNow = x.add(x.now, p.leaseMs);
const endLease = { lease_until_ms: NULL } as const;

/** T1: the new row (§5.1). `root_id` defaults to the new id. */
export const SUBMIT: InsertRule = {
  op: "submit",
  clock: "statement",
  values: {
    id: p.taskId,
    name: p.name,
    queue: p.queue,
    status: x.lit("queued"),
    payload: p.payload,
    metadata: p.metadata,
    max_attempts: p.maxAttempts,
    priority: p.priority,
    run_at_ms: x.add(x.now, p.runAtDelayMs),
    parent_id: p.parentId,
    root_id: x.coalesce(p.rootId, p.taskId),
    correlation_id: p.correlationId,
    created_at_ms: x.now,
    updated_at_ms: x.now,
  },
};

/** T3/T4: cancel (§5.7). A repeat cancel of a running task refreshes the flag. */
export const CANCEL: RowTransition = {
  op: "cancel",
  clock: "transaction",
  guard: x.and(thisTask, CANCELABLE),
  branches: [
    { name: "cancel-queued", to: "canceled", when: x.eq(col("status"), x.lit("queued")), set: { status: x.lit("canceled"), completed_at_ms: x.now } },
    { name: "flag-running", to: "running", when: null, set: { cancel_requested_at_ms: x.now } },
  ],
  onMiss: "null",
};

/** T14: retry a failed or canceled task (§5.8); `result` is left alone. */
export const RETRY: RowTransition = {
  op: "retry",
  clock: "transaction",
  guard: x.and(thisTask, RETRYABLE),
  branches: [
    {
      name: "requeue",
      to: "queued",
      when: null,
      set: {
        status: x.lit("queued"),
        error: NULL,
        worker_id: NULL,
        lease_until_ms: NULL,
        cancel_requested_at_ms: NULL,
        completed_at_ms: NULL,
        progress: NULL,
        message: NULL,
        run_at_ms: x.now,
        attempt: x.case([{ when: x.eq(p.resetAttempt, x.lit(true)), then: x.lit(0) }], col("attempt")),
      },
    },
  ],
  onMiss: "null",
};

/** §5.11: extend the lease of an owned task. */
export const HEARTBEAT: RowTransition = {
  op: "heartbeat",
  clock: "transaction",
  guard: x.and(thisTask, OWNER),
  branches: [{ name: "renew", to: "running", when: null, set: { lease_until_ms: leaseFromNow } }],
  onMiss: "lost-lease",
};

/** §5.13: null keeps the old value; neither can be cleared. */
export const PROGRESS: RowTransition = {
  op: "progress",
  clock: "transaction",
  guard: x.and(thisTask, OWNER),
  branches: [
    {
      name: "report",
      to: "running",
      when: null,
      set: { progress: x.coalesce(p.progress, col("progress")), message: x.coalesce(p.message, col("message")) },
    },
  ],
  onMiss: "lost-lease",
};

/** T5: the raw succeed primitive (§5.14) ignores the cancel flag. */
export const SUCCEED: RowTransition = {
  op: "succeed",
  clock: "transaction",
  guard: x.and(thisTask, OWNER),
  branches: [
    {
      name: "succeed",
      to: "succeeded",
      when: null,
      set: {
        status: x.lit("succeeded"),
        result: p.result,
        progress: x.lit(1),
        message: x.coalesce(p.message, col("message")),
        completed_at_ms: x.now,
        ...endLease,
      },
    },
  ],
  onMiss: "lost-lease",
};

/** T6/T7: complete (§5.15); cancel wins and discards the result. */
export const COMPLETE: RowTransition = {
  op: "complete",
  clock: "transaction",
  guard: x.and(thisTask, OWNER),
  branches: [
    { name: "cancel", to: "canceled", when: FLAG, set: { status: x.lit("canceled"), completed_at_ms: x.now, ...endLease } },
    {
      name: "succeed",
      to: "succeeded",
      when: null,
      set: { status: x.lit("succeeded"), result: p.result, progress: x.lit(1), completed_at_ms: x.now, ...endLease },
    },
  ],
  onMiss: "lost-lease",
};

/** T8/T9/T10: fail (§5.16); cancel wins, then requeue while attempts remain. */
export const FAIL: RowTransition = {
  op: "fail",
  clock: "transaction",
  guard: x.and(thisTask, OWNER),
  branches: [
    { name: "cancel", to: "canceled", when: FLAG, set: { status: x.lit("canceled"), error: p.error, completed_at_ms: x.now, ...endLease } },
    {
      name: "requeue",
      to: "queued",
      when: x.and(noFlag, x.eq(p.retryable, x.lit(true)), x.lt(col("attempt"), col("max_attempts"))),
      set: {
        status: x.lit("queued"),
        error: p.error,
        worker_id: NULL,
        run_at_ms: x.add(x.now, p.delayMs),
        completed_at_ms: NULL,
        progress: NULL,
        message: NULL,
        ...endLease,
      },
    },
    { name: "fail", to: "failed", when: null, set: { status: x.lit("failed"), error: p.error, completed_at_ms: x.now, ...endLease } },
  ],
  onMiss: "lost-lease",
};

/** T11/T12/T13: lease recovery over the whole table (§5.10 step 4). */
export const RECOVER: SetTransition = {
  op: "recover",
  clock: "statement",
  selection: { where: EXPIRED, orderBy: [], limit: null, skipLocked: true },
  branches: [
    { name: "cancel", to: "canceled", when: FLAG, set: { status: x.lit("canceled"), completed_at_ms: x.now, ...endLease } },
    {
      name: "requeue",
      to: "queued",
      when: x.lt(col("attempt"), col("max_attempts")),
      set: { status: x.lit("queued"), worker_id: NULL, run_at_ms: x.now, progress: NULL, message: NULL, ...endLease },
    },
    {
      name: "fail",
      to: "failed",
      when: null,
      set: { status: x.lit("failed"), error: x.json(JSON.stringify(LEASE_EXPIRED_ENVELOPE)), completed_at_ms: x.now, ...endLease },
    },
  ],
};

/** T2: one claim draw (§5.10 step 5), FIFO by due time within priority. */
export const DRAW: SetTransition = {
  op: "draw",
  clock: "statement",
  selection: {
    where: CLAIMABLE,
    orderBy: [
      { column: "priority", direction: "desc" },
      { column: "run_at_ms", direction: "asc" },
      { column: "id", direction: "asc" },
    ],
    limit: p.limit,
    skipLocked: true,
  },
  branches: [
    {
      name: "lease",
      to: "running",
      when: null,
      set: { status: x.lit("running"), worker_id: p.workerId, lease_until_ms: leaseFromNow, attempt: x.add(col("attempt"), x.lit(1)) },
    },
  ],
};

/**
 * The claim order (§5.10 step 5, {@link DRAW}'s `orderBy`) as a comparator of claimed rows: higher `priority`
 * first, then the earlier `run_at_ms`, then the smaller `id`. A multi-row draw's rows come back in no
 * particular order (§5) — SQLite's by ascending priority, Postgres's at random — so a worker that buffers them
 * (`prefetch`) sorts a claim's rows with this to run them in claim order. Ids compare by UTF-16 code units, as
 * a binary collation does (every id the protocol mints is ASCII).
 *
 * @example
 * ```ts
 * const rows = (await store.claim(input)).sort(compareClaimOrder);
 * ```
 */
export const compareClaimOrder: (a: Pick<Task, "priority" | "run_at_ms" | "id">, b: Pick<Task, "priority" | "run_at_ms" | "id">) => number = compareByOrder(
  DRAW.selection.orderBy,
);

/**
 * A selection's `orderBy` as a comparator of rows (the columns in turn, each ascending or descending; equal rows
 * compare 0): how {@link compareClaimOrder} and the reference evaluator's `selectRows` order rows.
 */
export function compareByOrder(orderBy: Selection["orderBy"]): (a: Readonly<Partial<Task>>, b: Readonly<Partial<Task>>) => number {
  return (a, b) => {
    for (const { column, direction } of orderBy) {
      const left = a[column] as number | string;
      const right = b[column] as number | string;
      if (left === right) continue;
      const ascending = left < right ? -1 : 1;
      return direction === "asc" ? ascending : -ascending;
    }
    return 0;
  };
}

/** §5.12: renew every listed row still owned; returns only `(id, cancel_requested_at_ms)`. */
export const HEARTBEAT_BATCH: SetTransition = {
  op: "heartbeatBatch",
  clock: "transaction",
  selection: { where: x.and(x.inList(col("id"), p.taskIds), OWNER), orderBy: [], limit: null, skipLocked: false },
  branches: [{ name: "renew", to: "running", when: null, set: { lease_until_ms: leaseFromNow } }],
};

/** The claim probe (§5.10 step 2): is there anything to draw or to recover? Read-only. */
export const PROBE = { claimable: CLAIMABLE, expired: EXPIRED } as const;

/**
 * A child whose parent may still read it (extension, not in v1 §5.9): the
 * task's parent exists and is not terminal — queued (a parent parked on
 * `ctx.join` is queued) or running. Its `ctx.join` returns each child's row as
 * it reads it, so a finished child deleted before the join's last read would
 * come back as `null` (its result lost). Evaluated by primary key on the
 * parent's id.
 */
export const PARENT_WAITING: Expr = x.parent(x.in(col("status"), CANCELABLE_STATUSES));

/**
 * T15: purge eligibility (§5.9). Status is always tested, even with a status
 * filter. Extension: a child of a waiting parent ({@link PARENT_WAITING}) is
 * kept until its parent is terminal; a v1 peer's purge, which does not test
 * it, may still delete such a child (the join then reads `null`).
 */
export const PURGE: DeleteRule = {
  op: "purge",
  clock: "transaction",
  selection: {
    where: x.and(
      x.in(col("status"), TERMINAL_STATUSES),
      x.notNull(col("completed_at_ms")),
      x.lt(col("completed_at_ms"), x.sub(x.now, p.olderThanMs)),
      x.optionalEq("queue", p.queue),
      x.optionalEq("status", p.status),
      x.optionalEq("name", p.name),
      x.not(PARENT_WAITING),
    ),
    orderBy: [{ column: "completed_at_ms", direction: "asc" }],
    limit: p.limit,
    skipLocked: true,
  },
};

/** Every row transition, by operation name. */
export const ROW_TRANSITIONS = { cancel: CANCEL, retry: RETRY, heartbeat: HEARTBEAT, progress: PROGRESS, succeed: SUCCEED, complete: COMPLETE, fail: FAIL } as const;

/**
 * Turns a transition's branches into one expression per assigned column:
 * `CASE WHEN b1 THEN v1 WHEN b2 THEN v2 … ELSE vN END`, where a branch that
 * does not assign the column contributes the column itself. Columns every
 * branch assigns identically are emitted without a CASE. `updated_at_ms = now`
 * is always included (§5.0). This is what a SQL store puts in `SET`.
 */
export function flattenAssignments(branches: readonly Branch[]): ReadonlyMap<TaskColumn, Expr> {
  const columns = new Set<TaskColumn>();
  for (const branch of branches) for (const column of Object.keys(branch.set) as TaskColumn[]) columns.add(column);
  const out = new Map<TaskColumn, Expr>();
  for (const column of columns) {
    const values = branches.map((branch) => branch.set[column] ?? col(column));
    const first = values[0] as Expr;
    if (values.every((value) => value === first)) {
      out.set(column, first);
      continue;
    }
    const whens = branches.slice(0, -1).map((branch, i) => {
      if (branch.when === null) throw new Error(`only the last branch may be 'otherwise' (branch ${branch.name})`);
      return { when: branch.when, then: values[i] as Expr };
    });
    out.set(column, x.case(whens, values[values.length - 1] as Expr));
  }
  out.set("updated_at_ms", x.now);
  return out;
}
