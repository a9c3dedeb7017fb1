import type { Conflict } from "./conflict.js";
import type { FlowControl } from "./flow-control.js";
import type { ScheduleSlotsInput, ScheduleSlotsResult } from "./schedule.js";
import type { TaskStatus, TerminalStatus } from "./statuses.js";
import type { Task, TaskRef } from "./task.js";

/**
 * The `TaskStore` contract: what a store adapter implements, what the client,
 * worker and retention packages call, and what `@cairnq/conformance` checks.
 *
 * Inputs are camelCase option objects; rows keep protocol column names.
 * Every method connects lazily; `connect()` only makes the first call's cost
 * (migrations, guards) explicit.
 */
export interface TaskStore {
  /** What this backend can do beyond the contract's floor. */
  readonly capabilities: StoreCapabilities;
  /**
   * The backpressure gate every submit passes after validation (§5.6),
   * including child submits from handlers. `null` = no gate. Installed by the
   * client (`maxQueueDepth`).
   */
  queueDepthGate: QueueDepthGate | null;

  /** Opens the database: migrations, installation and protocol-version guards. Idempotent. */
  connect(): Promise<void>;
  /** Releases connections the store opened (never a pool or Kysely the caller owns). Idempotent. */
  close(): Promise<void>;

  /** T1, honouring `key` + `conflict` in one keyed transaction (§5.1). */
  submit(input: SubmitInput): Promise<Task>;
  /**
   * {@link TaskStore.submit}, also saying whether the row was inserted by
   * this call (`created: true`) or is an existing task a keyed submit reused
   * (`created: false`) — what an API needs to answer 201 or 200. Decided
   * inside the same keyed transaction as the submit itself.
   */
  submitOutcome(input: SubmitInput): Promise<SubmitOutcome>;
  get(id: string): Promise<Task | null>;
  getByKey(key: string): Promise<Task | null>;
  getStatus(id: string): Promise<TaskRef | null>;
  getStatusByKey(key: string): Promise<TaskRef | null>;
  list(input?: ListInput): Promise<Task[]>;
  stats(queue?: string): Promise<QueueStats>;
  /** Headroom: `maxDepth − min(maxDepth, queued rows)`, reading at most `maxDepth` rows (§5.6). */
  queueDepth(queue: string, maxDepth: number): Promise<number>;

  /** T3/T4; the post-update row, or `null` when the task is terminal or missing. */
  cancel(id: string): Promise<Task | null>;
  cancelByKey(key: string): Promise<Task | null>;
  /** T14; the post-update row, or `null` unless the task is failed or canceled. */
  retry(id: string, options?: RetryOptions): Promise<Task | null>;
  retryByKey(key: string, options?: RetryOptions): Promise<Task | null>;
  /**
   * One batch of a bulk cancel: `CANCEL`'s transition (T3/T4) on up to
   * `limit` queued or running rows matching `list`'s filters, taken in id
   * order after `afterId`. Returns the ids it changed. Each row is decided on
   * its current values as it is written (one conditional statement in the
   * Kysely core), so it is as atomic as `cancel(id)`. Callers loop, moving
   * `afterId` to the greatest id returned, until a batch is shorter than
   * `limit` (the client's `cancelMany` does).
   */
  cancelBatch(input?: BulkBatchInput): Promise<string[]>;
  /** One batch of a bulk retry: `RETRY`'s transition (T14) on failed or canceled rows; as {@link TaskStore.cancelBatch}. */
  retryBatch(input?: RetryBatchInput): Promise<string[]>;
  /** T15: deletes up to `limit` terminal rows past the cutoff; returns their ids. */
  purge(input?: PurgeInput): Promise<string[]>;

  /** The claim cycle (§5.10): probe, recover expired leases, then draw. */
  claim(input: ClaimInput): Promise<Task[]>;
  /** Extends an owned lease; `LostLease` when the lease is gone. */
  heartbeat(input: HeartbeatInput): Promise<Task>;
  /** Renews every listed lease still owned: id → cancel requested. Missing ids lost their lease. */
  heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>>;
  progress(input: ProgressInput): Promise<Task>;
  /** T5, the raw primitive: ignores the cancel flag. */
  succeed(input: SucceedInput): Promise<Task>;
  /** T6/T7: succeeds, or ends canceled when a cancel was requested. */
  complete(input: CompleteInput): Promise<Task>;
  /** T8/T9/T10. */
  fail(input: FailInput): Promise<Task>;

  /** Resolves after `timeoutMs`, or earlier when the backend signals a task queued in one of `queues`. */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Resolves after `timeoutMs`, or earlier when the backend signals the task reached a terminal status. */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * Subscribes to the backend's push signals (§9): `queued` for a queue, `done`
   * for a task. Returns an unsubscribe function. Stores without push return a
   * no-op unsubscribe and never call `listener`.
   */
  subscribe(listener: (signal: StoreSignal) => void): () => void;
}

/** A push signal from the backend: "re-read". */
export type StoreSignal = { readonly reason: "queued"; readonly queue: string } | { readonly reason: "done"; readonly taskId: string };

/**
 * Capability flags with documented defaults (not optional methods callers
 * probe): a third-party store declares what it has.
 */
export interface StoreCapabilities {
  /** Backend pushes `queued`/`done` signals (Postgres LISTEN/NOTIFY). @default false */
  readonly pushWakeups: boolean;
  /**
   * The store is a {@link TransactionalTaskStore}: `completeIn` settles in a
   * transaction that also runs the caller's function (`ctx.succeedIn`), and
   * `withTransaction(trx)` writes in the caller's transaction. @default false
   */
  readonly transactionalComplete: boolean;
  /** Times come from the database clock rather than the process clock. @default false */
  readonly databaseClock: boolean;
  /**
   * `claim` enforces `ClaimInput.flowControl` (cross-process
   * `globalConcurrency` and `rateLimit`, see `flow-control.ts`) exactly,
   * inside the claim transaction. A store without it must not be given
   * limits; the worker refuses them. Optional so stores written before the
   * flag keep compiling. @default false
   */
  readonly flowControl?: boolean;
  /**
   * The store is a {@link ScheduleTaskStore} (`submitScheduleSlots`, for
   * `worker.schedule`). Optional so stores written before the flag keep
   * compiling. @default false
   */
  readonly schedules?: boolean;
  /**
   * The store is a {@link RefCompleteTaskStore} (`completeRef`: `complete`
   * answering `{ id, status }` instead of the whole row, for a worker's own
   * settlement). Optional so stores written before the flag keep compiling.
   * @default false
   */
  readonly completeRef?: boolean;
  /**
   * `claim` honours `ClaimInput.reprobe`: it probes again after its draws,
   * in the same transaction, and reports whether anything was left to claim.
   * Optional so stores written before the flag keep compiling. @default false
   */
  readonly claimReprobe?: boolean;
}

/** The gate a store calls before each submit (§5.6). Implemented by the client. */
export interface QueueDepthGate {
  /** Waits for headroom on `queue`; rejects with `QueueFull` at the deadline. */
  acquire(queue: string, store: TaskStore): Promise<void>;
}

export interface SubmitInput<Payload = unknown> {
  name: string;
  /** JSON payload. @default {} */
  payload?: Payload;
  /** @default "default" */
  queue?: string;
  key?: string | null;
  /** @default "reuse" */
  conflict?: Conflict;
  /** Integer ≥ 1. @default 3 */
  maxAttempts?: number;
  /** Integer; higher is claimed first. @default 0 */
  priority?: number;
  metadata?: Record<string, unknown> | null;
  parentId?: string | null;
  /** @default the new task's id */
  rootId?: string | null;
  correlationId?: string | null;
  /** Integer ≥ 0. @default 0 */
  runAtDelayMs?: number;
}

/** What {@link TaskStore.submitOutcome} returns. */
export interface SubmitOutcome<P = unknown, R = unknown> {
  /** The new row, or the existing one a keyed submit returned. */
  task: Task<P, R>;
  /** True when this call inserted `task`; false when a keyed submit reused an existing task. */
  created: boolean;
}

/** `list`'s filters (§5.4), AND-ed; absent = any. */
export interface TaskFilter {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  rootId?: string;
  correlationId?: string;
}

/** One batch of a bulk cancel or retry. */
export interface BulkBatchInput extends TaskFilter {
  /** At most this many rows (an integer ≥ 1). @default 1000 */
  limit?: number;
  /** Only rows whose id sorts after this one: the cursor of the previous batch. @default null (from the first id) */
  afterId?: string | null;
}

/** One batch of a bulk retry. */
export interface RetryBatchInput extends BulkBatchInput, RetryOptions {}

export interface ListInput {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  rootId?: string;
  correlationId?: string;
  /** @default 100 */
  limit?: number;
  /** @default 0 */
  offset?: number;
  /**
   * Row order. `"created"` is §5.4's `created_at_ms DESC, id DESC`. `"id"` is
   * `id DESC`, which the primary key index serves, and the only order
   * {@link ListInput.beforeId} pages through: task ids are ULIDs, so it is
   * newest first by the submitting process's clock (it can differ from
   * `created_at_ms` order by a few milliseconds).
   * @default "created"
   */
  order?: ListOrder;
  /**
   * Keyset pagination (with `order: "id"` only): only tasks whose id sorts
   * strictly before this one. Pass the last id of a page to get the next
   * page; unlike `offset`, the cost does not grow with the page number and
   * rows submitted meanwhile never shift a page.
   * @default undefined (from the newest task)
   */
  beforeId?: string;
}

/** The orders `list` can return rows in: see {@link ListInput.order}. */
export type ListOrder = "created" | "id";

/** Per-queue counts by status, zero-filled (§5.5). */
export type QueueStats = Record<string, Record<TaskStatus, number>>;

export interface RetryOptions {
  /** Start counting attempts from 0 again. @default false */
  resetAttempt?: boolean;
}

export interface PurgeInput {
  /** Only rows completed more than this long ago. @default 0 */
  olderThanMs?: number;
  queue?: string;
  status?: TerminalStatus;
  name?: string;
  /** @default 1000 */
  limit?: number;
}

/** One draw of a claim cycle: `names` null = any registered name. */
export interface ClaimDraw {
  readonly names: readonly string[] | null;
  readonly limit: number;
  /**
   * The planner's promise that it returns `null` for the next index whatever
   * this draw claims: no draw follows. A store may then commit together with
   * this draw (Postgres: `COMMIT` in the same round trip). Absent = unknown.
   */
  readonly last?: boolean;
}

export interface ClaimInput {
  queues: readonly string[];
  workerId: string;
  /** @default 30000 */
  leaseMs?: number;
  /** Probe and default-draw name filter; `null` = no filter, `[]` = claim nothing. @default null */
  names?: readonly string[] | null;
  /** Row cap of the default single draw. @default 1 */
  limit?: number;
  /**
   * Advanced: plan several draws in one cycle (the worker's per-name
   * sources, §8.3). Called inside the claim transaction with the rows drawn
   * so far and the draw's index (0, 1, …); return the next draw or `null` to
   * finish. Must be synchronous and pure. When given, `limit` is ignored.
   */
  draws?: (claimedSoFar: readonly Task[], index: number) => ClaimDraw | null;
  /**
   * Advanced: `false` skips the read-only probe and opens the claim
   * transaction at once (lease recovery, then the draws, as always). The probe
   * only spares a transaction when nothing is claimable; a caller that was
   * just woken by a push `queued` signal for its queues (§9) expects work.
   * A store may probe anyway. @default true
   */
  probe?: boolean;
  /**
   * Cross-process limits per task name (an extension, see
   * `flow-control.ts`): no draw of this cycle takes more rows of a listed
   * name than `globalConcurrency − running` and `rateLimit.max − claims in the
   * window` allow, evaluated inside the claim transaction after lease
   * recovery. Only for stores whose `capabilities.flowControl` is true; every
   * draw must then name its names (no `names: null`). @default null (no limits)
   */
  flowControl?: Readonly<Record<string, FlowControl>> | null;
  /**
   * Advanced: asks for the probe (§5.10 step 2, over this claim's `queues`
   * and `names`) once more, inside the claim transaction after its draws,
   * and for its answer: `reprobe(claimable)` is called once, just before
   * `claim` resolves. `false` says nothing was left to claim when the
   * transaction ended (no due `queued` row of these queues and names, no
   * expired lease anywhere), so a worker that hears push `queued` signals
   * (§9) may wait for one rather than open another claim transaction at once.
   * A cycle whose opening probe found nothing answers `false` too. Only
   * stores whose `capabilities.claimReprobe` is true call it; it must not
   * throw (a throw is ignored: the claimed rows are returned all the same).
   * @default undefined (no second probe)
   */
  reprobe?: ((claimable: boolean) => void) | null;
}

/** Fields of every ownership-checked write. */
export interface OwnedInput {
  taskId: string;
  workerId: string;
  /**
   * The attempt the write belongs to. When given, the write also requires
   * `attempt` to match, so a settlement from an abandoned attempt never lands
   * on a later attempt of the same task.
   */
  attempt?: number | null;
}

export interface HeartbeatInput extends OwnedInput {
  /** @default 30000 */
  leaseMs?: number;
}

export interface HeartbeatBatchInput {
  taskIds: readonly string[];
  workerId: string;
  /** @default 30000 */
  leaseMs?: number;
}

export interface ProgressInput extends OwnedInput {
  /** `null` keeps the previous value. */
  progress?: number | null;
  /** `null` keeps the previous value. */
  message?: string | null;
}

export interface SucceedInput extends OwnedInput {
  result?: unknown;
  message?: string | null;
}

export interface CompleteInput extends OwnedInput {
  result?: unknown;
}

export interface FailInput extends OwnedInput {
  /** Stored as JSON (an error envelope, §12); `null` → `{}`. */
  error?: unknown;
  /** @default true */
  retryable?: boolean;
  /** Requeue delay (integer ≥ 0). @default 0 */
  delayMs?: number;
}

/**
 * A store that submits schedule slots (`capabilities.schedules`; see
 * `schedule.ts`): each slot after the schedule's last submitted slot becomes
 * exactly one keyed task with `run_at_ms` = the slot, in one write
 * transaction serialised per schedule, and the last slot advances. Slots at or
 * before it are skipped, even when their task was purged.
 */
export interface ScheduleTaskStore extends TaskStore {
  submitScheduleSlots(input: ScheduleSlotsInput): Promise<ScheduleSlotsResult>;
}

/**
 * A store whose `complete` also comes in a lighter form (`capabilities.completeRef`):
 * `completeRef` writes exactly what `complete` writes (§5.15: the same guard,
 * branches and errors — `LostLease` when the guard matches nothing) and
 * answers only the task's `{ id, status }` after the write — `succeeded`, or
 * `canceled` when a cancel was requested. A worker settling its own tasks
 * needs no more than that, and not returning the whole row spares the
 * database and the driver most of a settlement's per-row work.
 */
export interface RefCompleteTaskStore extends TaskStore {
  completeRef(input: CompleteInput): Promise<TaskRef>;
}

/**
 * A store that can settle a task in the caller's own transaction (§5.15
 * `complete_in`; Postgres and SQLite). `fn` receives the store's transaction handle
 * (a Kysely `Transaction` or single-connection Kysely for first-party stores); its writes commit only if
 * the completion matches, else everything rolls back with `LostLease`.
 */
export interface TransactionalTaskStore<Tx = unknown> extends TaskStore {
  completeIn<R>(input: OwnedInput, fn: (tx: Tx) => Promise<R>): Promise<{ task: Task; result: R }>;
  /**
   * A view of this store whose every statement runs on the caller's open
   * transaction `trx`, so what it writes commits or rolls back with it
   * (client-level: `cairnq.withTransaction(trx)`). `close()` closes only the view.
   */
  withTransaction(trx: Tx): TaskStore;
}
