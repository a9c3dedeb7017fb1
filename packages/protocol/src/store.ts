import type { DebounceOptions } from "./debounce.js";
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
 *
 * Terminology (the § numbers are sections of docs/protocol.md, which gives
 * each rule in full; the method comments below say what a caller may rely on):
 * - **owned write**: a write a worker makes to a task it holds — heartbeat,
 *   progress, succeed, complete, fail. It lands only while the row is
 *   `running`, owned by the given `workerId`, with a lease that has not
 *   expired, and (when `attempt` is given) on that attempt; otherwise nothing
 *   is written and it rejects with `LostLease`.
 * - **client transition**: cancel and retry, by id or by key, and their bulk
 *   batches. A transition whose guard matches nothing writes nothing and
 *   answers `null` (or leaves the id out of a batch's answer); it never throws
 *   for that.
 * - **atomic**: the guard and the choice of outcome are decided on the row's
 *   values at the instant of the write, against every other writer (other
 *   processes and other protocol-v1 implementations included), never on a
 *   copy read earlier.
 * - **input errors**: every method validates its input before it writes
 *   anything or waits on the backpressure gate: `InvalidArgument` naming the
 *   input, or `SerializationError` with the path of a value JSON cannot hold.
 *   Either fails the call with nothing written.
 */
export interface TaskStore {
  /**
   * What this store can do beyond the contract's floor: flags the client and
   * worker read before they use an optional feature (see
   * {@link StoreCapabilities} for each flag and its default). Read it when
   * deciding rather than once: `pushWakeups` may turn false while the store
   * runs (a Postgres LISTEN connection found deaf).
   */
  readonly capabilities: StoreCapabilities;
  /**
   * The backpressure gate (§5.6): when set, every submit calls
   * `acquire(queue, this)` after validating its input and before writing,
   * keyed submits and child submits from handlers included; a rejection
   * (`QueueFull`) fails the submit with nothing written. `null` = no gate.
   * The client installs it from `maxQueueDepth`; a store only calls it.
   */
  queueDepthGate: QueueDepthGate | null;

  /**
   * Opens the database and makes it ready: runs the migrations it lacks and
   * checks the protocol version (`ProtocolVersionMismatch`) and, on Postgres,
   * the installation's schema (`SchemaMismatch`) — §3.7, §10, §11. Idempotent,
   * and concurrent calls share one opening; a failed opening is tried again by
   * the next call. Optional: every other method connects on first use.
   * Rejects once `close()` has been called.
   */
  connect(): Promise<void>;
  /**
   * Waits for the calls in flight to settle, then releases what the store
   * opened itself — never a pool, Kysely instance or transaction the caller
   * passed in. Idempotent: a second call waits for the first. Every later call
   * of another method rejects with a fatal `CairnQError` saying the store is closed.
   */
  close(): Promise<void>;

  /**
   * Creates a task (T1, §5.1) and resolves with its row as stored: `queued`,
   * `attempt` 0, due `runAtDelayMs` from now, a new id, `rootId` defaulting to
   * that id. Input errors reject first (see the terminology above), then the
   * backpressure gate may reject with `QueueFull`.
   *
   * With a `key`, the submit is one write transaction under the key lock, so
   * concurrent submits of one key are decided one after the other: the task
   * the key points at is returned as it is when `conflict` reuses it
   * (`reuse`: queued or running; `reuse-succeeded`: succeeded too),
   * `AlreadyExists` rejects with nothing written under `reject`, and
   * otherwise (`replace`, or a task reuse declines) a task that is not
   * terminal is cancelled, the new task inserted and the key moved to it — all
   * or nothing. A `failed` or `canceled` task is never handed back.
   */
  submit(input: SubmitInput): Promise<Task>;
  /**
   * {@link TaskStore.submit}, also saying whether the row was inserted by
   * this call (`created: true`) or is an existing task a keyed submit reused
   * (`created: false`) — what an API needs to answer 201 or 200. Decided
   * inside the same keyed transaction as the submit itself.
   */
  submitOutcome(input: SubmitInput): Promise<SubmitOutcome>;
  /** The task's whole row as stored now, or `null` when no task has this id (never submitted, or purged). Read-only (§5.2). */
  get(id: string): Promise<Task | null>;
  /**
   * The whole row of the task `key` points at now, or `null` when the key
   * points nowhere (never used, or its task was purged). Read-only; takes no
   * key lock, so a keyed submit in flight is seen before or after, never half
   * done (§5.2).
   */
  getByKey(key: string): Promise<Task | null>;
  /** Only `{ id, status }` of the task, or `null` when there is none: the cheap poll a waiter makes (§5.3). */
  getStatus(id: string): Promise<TaskRef | null>;
  /**
   * `{ id, status }` of the task `key` points at now, or `null`. The key is
   * resolved again on every call, so after a `replace` it reports the new
   * task (§5.3).
   */
  getStatusByKey(key: string): Promise<TaskRef | null>;
  /**
   * Whole rows matching every filter given (an absent filter matches any
   * value), at most `limit` (default 100) after skipping `offset`, newest
   * first — or, with `order: "id"`, by id descending, paged by `beforeId`
   * (§5.4). Read-only; an unknown status, a negative limit or a `beforeId`
   * without `order: "id"` is an `InvalidArgument`.
   */
  list(input?: ListInput): Promise<Task[]>;
  /**
   * Row counts per queue and status, every status present (0 when empty);
   * queues without rows are left out, except the one asked for by name, which
   * is always there. Terminal rows count until purged. Read-only (§5.5).
   */
  stats(queue?: string): Promise<QueueStats>;
  /**
   * The headroom left under `maxDepth` in `queue`: `maxDepth − min(maxDepth,
   * queued rows)`, never below 0. Queued rows count whether due or not;
   * running rows do not. Read-only, reading at most `maxDepth` rows (and on
   * SQLite never queued behind writes), so the backpressure gate can ask it
   * often (§5.6).
   */
  queueDepth(queue: string, maxDepth: number): Promise<number>;

  /**
   * Cancels the task (§5.7): a queued task ends `canceled` at once (T3); a
   * running one stays `running` with its cancel flag set (T4): its worker
   * learns of it through its heartbeats (the handler's `ctx.signal` aborts),
   * and `complete`, `fail` and lease recovery all end it `canceled` (only the
   * raw `succeed` ignores the flag). Resolves with
   * the row after the write, or `null` when the task is missing or already
   * terminal (nothing written). Atomic against the task's worker: a
   * settlement racing the cancel either lands first (and the cancel answers
   * `null`) or sees the flag.
   */
  cancel(id: string): Promise<Task | null>;
  /**
   * {@link TaskStore.cancel} of the task `key` points at, resolving the key
   * and cancelling in one transaction under the key lock, so a keyed submit
   * cannot move the key in between. `null` when the key points nowhere.
   */
  cancelByKey(key: string): Promise<Task | null>;
  /**
   * Queues a `failed` or `canceled` task again (T14, §5.8), due now: clears
   * its error, lease, worker, cancel flag, completion time, progress and
   * message, and keeps its result; with `resetAttempt` its attempt count
   * starts again from 0, otherwise an exhausted task gets exactly one more
   * run. Resolves with the row after the write, or `null` (nothing written)
   * when the task is missing or in any other status — a success is never
   * retried. Atomic, like every client transition.
   */
  retry(id: string, options?: RetryOptions): Promise<Task | null>;
  /**
   * {@link TaskStore.retry} of the task `key` points at, resolved and retried
   * in one transaction under the key lock; `null` when the key points nowhere.
   */
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
  /**
   * One batch of a bulk retry: {@link TaskStore.retry}'s transition (T14) on
   * up to `limit` failed or canceled rows matching the filters, in id order
   * after `afterId`, with `resetAttempt` as `retry`'s. Returns the ids it
   * changed; atomic per row and looped over by the caller exactly as
   * {@link TaskStore.cancelBatch}.
   */
  retryBatch(input?: RetryBatchInput): Promise<string[]>;
  /**
   * Deletes finished tasks (T15, §5.9): up to `limit` (default 1000) rows that
   * are terminal — always checked, even with a `status` filter — completed
   * more than `olderThanMs` ago (default 0: any finished task) and matching
   * every filter given, oldest completion first. Their keys are freed with
   * them. Resolves with the deleted ids, in no particular order; callers
   * repeat it until a batch comes back shorter than `limit`. A task being
   * retried or cancelled at that moment is never deleted while live.
   * Extension (`PARENT_WAITING`): a child whose parent exists and is queued
   * or running is kept, so the parent's `ctx.join` still reads it; it goes
   * with the first purge after the parent is terminal.
   */
  purge(input?: PurgeInput): Promise<string[]>;

  /**
   * One claim cycle (§5.10): leases up to `limit` (default 1) due `queued`
   * tasks of `queues` (and of `names`, when given) to `workerId` for
   * `leaseMs`, highest `priority` first, then earliest `run_at_ms`, then id,
   * and resolves with their rows — now `running`, `attempt` one higher,
   * leased until now + `leaseMs`. The rows of one multi-row draw come back in
   * no particular order; concurrent claims never take the same row, and a
   * claim passes over only rows another claim takes (never rows another
   * merely read), so claims with room for every due task take them all.
   *
   * First a read-only probe, outside any transaction, answers whether
   * anything is claimable (a due queued task of these queues and names, or an
   * expired lease anywhere); if not, the cycle resolves with `[]` without
   * opening a write transaction (`probe: false` skips the probe). Otherwise
   * one write transaction recovers every expired lease in the table first
   * (T11–T13: requeued, or ended `failed` or — flagged — `canceled`), then runs
   * the draws (`draws` plans several; `flowControl` caps them), so a task
   * recovered a moment ago can be claimed in the same cycle. All of it
   * commits together or not at all.
   */
  claim(input: ClaimInput): Promise<Task[]>;
  /**
   * Extends the lease of a task this worker holds to now + `leaseMs`
   * (default 30000) and resolves with the whole row, from which the caller
   * reads the cancel flag (§5.11). An owned write: `LostLease` when the lease
   * is gone, nothing written.
   */
  heartbeat(input: HeartbeatInput): Promise<Task>;
  /**
   * Renews, in one statement, the lease of every listed task this worker
   * still holds (each row checked on its own, as {@link TaskStore.heartbeat}
   * checks one) and resolves with a `Map` from each renewed id to whether a
   * cancel was requested, in the order the ids were given (§5.12). An id
   * missing from the map has lost its lease or stopped running — not an
   * error, and nothing is written to it. No ids: an empty map and no
   * statement.
   */
  heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>>;
  /**
   * Records how far the task got: `progress` and `message`, each kept as it
   * was when `null` or absent (neither can be cleared; no range check), and
   * resolves with the row (§5.13). An owned write: `LostLease` when the lease
   * is gone, nothing written. The status does not change.
   */
  progress(input: ProgressInput): Promise<Task>;
  /**
   * Ends a held task `succeeded` with `result` (T5, §5.14): the raw
   * primitive, which ignores the cancel flag — workers settle with
   * {@link TaskStore.complete}, which honours it. Progress becomes 1, the
   * lease is cleared, `message` is replaced only when given. Resolves with the
   * row; an owned write: `LostLease` when the lease is gone, nothing written.
   */
  succeed(input: SucceedInput): Promise<Task>;
  /**
   * Settles a held task after its handler returned (§5.15), in one atomic
   * statement: `succeeded` with `result` and progress 1 (T6) — or, when a
   * cancel was requested while it ran, `canceled`, the result discarded (T7:
   * cancel wins). The lease is cleared either way. Resolves with the row; an
   * owned write: `LostLease` when the lease is gone, nothing written.
   */
  complete(input: CompleteInput): Promise<Task>;
  /**
   * Settles a held task whose attempt failed (§5.16), storing `error` (an
   * envelope, §12) and clearing the lease, in one atomic statement whose
   * branch is decided on the row as written: `canceled` when a cancel was
   * requested (T8: cancel wins); back to `queued`, due `delayMs` from now,
   * when `retryable` (default true) and attempts remain (T9: `attempt <
   * max_attempts`); otherwise `failed` for good (T10). The attempt count does
   * not change. Resolves with the row, whose `status` says which branch was
   * taken; an owned write: `LostLease` when the lease is gone, nothing
   * written.
   */
  fail(input: FailInput): Promise<Task>;

  /**
   * Waits until a task may be claimable in one of `queues`: resolves after
   * `timeoutMs`, or earlier when the backend signals a task queued there (§9),
   * or at once when `signal` aborts. Never rejects for a timeout; a store
   * without push signals simply sleeps. A wake-up is a hint to claim again,
   * not a promise that a claim will find work.
   */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * Waits until the task may have finished: resolves after `timeoutMs`, or
   * earlier when the backend signals that it reached a terminal status (§9),
   * or at once when `signal` aborts. A hint to read the task again, never
   * proof that it finished; a store without push signals simply sleeps.
   *
   * A store whose wake read the task itself (`taskDoneWakeReads`) may resolve
   * with the terminal row that read returned, read during this wait: a wait
   * by id returns it instead of reading the row again. Resolving with
   * nothing (or a row that is not terminal) means "read again", as always.
   */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void>;
  /**
   * Subscribes to the backend's push signals (§9): `queued` for a queue, `done`
   * for a task. Returns an unsubscribe function. Stores without push return a
   * no-op unsubscribe and never call `listener`.
   *
   * `reasons` names the signals the listener wants (default: both); the
   * listener hears no other. A store may listen only for what someone asked
   * for (Postgres LISTENs on a channel once a wait or a subscriber needs it),
   * so a caller that wants one kind should say so: a worker hearing every
   * settlement, or a client hearing its own submits, only costs CPU.
   */
  subscribe(listener: (signal: StoreSignal) => void, reasons?: readonly StoreSignalReason[]): () => void;
}

/** A push signal from the backend: "re-read". */
export type StoreSignal = { readonly reason: "queued"; readonly queue: string } | { readonly reason: "done"; readonly taskId: string };

/** The kinds of {@link StoreSignal}. */
export type StoreSignalReason = StoreSignal["reason"];

/**
 * Capability flags with documented defaults (not optional methods callers
 * probe): a third-party store declares what it has. A flag that is true is a
 * promise the conformance kit holds the store to (`capabilities-declared`
 * fails when the declaration and the store disagree, and the cases of the
 * capability run); a flag that is false makes the client and worker avoid the
 * feature, or refuse it with `UnsupportedBackend` when asked for it.
 */
export interface StoreCapabilities {
  /**
   * The store delivers push signals (§9) to {@link TaskStore.subscribe}'s
   * listeners and ends {@link TaskStore.claimWake} / {@link TaskStore.taskDoneWake}
   * early on them: `queued` when a task is submitted or requeued in a queue,
   * `done` when a task becomes terminal (Postgres LISTEN/NOTIFY). A worker
   * that hears them may wait for one instead of polling, so a store must say
   * true only while signals really arrive — Postgres turns it false when its
   * LISTEN connection is refused or found deaf. @default false
   */
  readonly pushWakeups: boolean;
  /**
   * The store is a {@link TransactionalTaskStore}: `completeIn` runs the
   * caller's function and the completion in one transaction that commits
   * both or neither (`ctx.succeedIn`), and `withTransaction(trx)` gives a
   * store whose writes join the caller's open transaction
   * (`cairnq.withTransaction`). @default false
   */
  readonly transactionalComplete: boolean;
  /**
   * Every instant the store writes (`created_at_ms`, `run_at_ms`, leases,
   * `completed_at_ms`) comes from the database server's clock, so processes on
   * hosts whose clocks differ agree on when a lease expires or a task is due
   * (§2.1). When false the writing process's clock is used, which is right
   * for one host (SQLite). @default false
   */
  readonly databaseClock: boolean;
  /**
   * `claim` enforces `ClaimInput.flowControl` — per task name, at most `globalConcurrency` tasks
   * `running` and at most `rateLimit.max` claims in any `rateLimit.perMs` window, across every process
   * claiming from the database — exactly, inside the claim transaction (see `flow-control.ts`) — and is
   * a `FlowReadStore` (`rateWindows`, for `explain`). A store without it must not be given limits; the
   * worker refuses them. Optional so stores written before the flag keep compiling. @default false
   */
  readonly flowControl?: boolean;
  /**
   * The store is a {@link ScheduleTaskStore}: `submitScheduleSlots` submits
   * each slot of a schedule exactly once however many processes offer it (for
   * `worker.schedule`). Optional so stores written before the flag keep
   * compiling. @default false
   */
  readonly schedules?: boolean;
  /**
   * The store is a {@link RefCompleteTaskStore}: `completeRef` writes exactly
   * what `complete` writes and answers only `{ id, status }`, which is all a
   * worker settling its own task reads. Optional so stores written before the
   * flag keep compiling. @default false
   */
  readonly completeRef?: boolean;
  /**
   * `claim` honours `ClaimInput.reprobe`: after its draws it probes once more
   * in the same transaction and reports whether anything was left to claim,
   * so a worker that hears push signals can wait for one rather than open
   * another claim transaction at once. Optional so stores written before the
   * flag keep compiling. @default false
   */
  readonly claimReprobe?: boolean;
  /**
   * Without push signals, {@link TaskStore.claimWake} still ends early —
   * about a millisecond after a commit leaves a task queued on one of its
   * queues, counting commits made since the caller's previous wait (SQLite
   * watches its database on this host). A worker whose claim's `reprobe`
   * found nothing left may then wait in `claimWake` instead of opening
   * another claim transaction right after its task, as it would for a push
   * signal. A store must say true only while its waits really end that way
   * (never for plain sleeps). Optional so stores written before the flag keep
   * compiling. @default false
   */
  readonly claimWakeOnQueued?: boolean;
  /**
   * Without push signals, {@link TaskStore.taskDoneWake} still ends early —
   * soon after its task is terminal, including when it already was as the
   * wait began: the store looks at the task itself within about a
   * millisecond (MySQL checks the row; SQLite reads it after each commit it
   * sees). A wait may then take a status the caller has just read as its
   * first poll (`call()` takes its submit's row and sleeps at once, without a
   * status read right after the submit), as it does with push signals. A store must say true only while its done waits
   * really read the task (never for plain sleeps). Optional so stores written
   * before the flag keep compiling. @default false
   */
  readonly taskDoneWakeReads?: boolean;
  /**
   * The store records `SubmitInput.group`, applies `SubmitInput.debounce`
   * (see `debounce.ts`), and `claim` enforces the group
   * limits of `ClaimInput.flowControl` (`groupConcurrency`,
   * `groupRateLimit`) per name and group, exactly, rotating across the
   * groups with due work (see `groups.ts`); it is also a `GroupReadStore`
   * (`taskGroup`, `groupStats`). A store without it must not be
   * given group limits; the worker refuses them, and a submit with a group
   * is an `UnsupportedBackend` there. Optional so stores written before the
   * flag keep compiling. @default false
   */
  readonly groups?: boolean;
  /**
   * The store is a {@link QueueHealthTaskStore}: `queueHealth` reads counts
   * by queue and status and the oldest due queued task of each queue in one
   * aggregate statement (what the Prometheus endpoint serves). Optional so
   * stores written before the flag keep compiling. @default false
   */
  readonly queueHealth?: boolean;
  /**
   * The store is a {@link TaskStepStore}: a journal of durable steps per
   * task (recorded under the attempt fence), parking, messages and child
   * tasks — what `ctx.step`, `ctx.sleep`, `ctx.waitFor`, `ctx.spawn`,
   * `ctx.join` and `cairnq.send` need (see `steps.ts`). Optional so stores
   * written before the flag keep compiling. @default false
   */
  readonly durableSteps?: boolean;
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
  /**
   * The task's group, for per-group limits and fair rotation (an extension,
   * see `groups.ts`; validated like `key`). Only stores whose
   * `capabilities.groups` is true record it. @default null
   */
  group?: string | null;
  /**
   * Coalesce submits under `key` (an extension, see `debounce.ts`): while the
   * key's task is `queued`, a submit updates its payload and moves its run
   * time to now + `delayMs`, never past `maxDelayMs` after its first submit,
   * and returns it. Needs `key`; excludes `conflict` and `runAtDelayMs`.
   * @default null
   */
  debounce?: DebounceOptions | null;
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
  /** Due this long from now: an integer from 0 to `MAX_DELAY_MS` (100 years). @default 0 */
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
  /** Only rows completed more than this long ago: from 0 to `MAX_DELAY_MS` (100 years). @default 0 */
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
  /** The lease runs this long from now: an integer from 1 to `MAX_DELAY_MS`. @default 30000 */
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
  /** The lease runs this long from now: an integer from 1 to `MAX_DELAY_MS`. @default 30000 */
  leaseMs?: number;
}

export interface HeartbeatBatchInput {
  taskIds: readonly string[];
  workerId: string;
  /** The lease runs this long from now: an integer from 1 to `MAX_DELAY_MS`. @default 30000 */
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
  /** Requeue delay: an integer from 0 to `MAX_DELAY_MS` (100 years). @default 0 */
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
