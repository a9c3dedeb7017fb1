import type {
  FlowReadStore,
  GroupCounts,
  GroupReadStore,
  RateWindows,
  TaskGroupInfo,
  BulkBatchInput,
  ClaimInput,
  CompleteInput,
  FailInput,
  HeartbeatBatchInput,
  HeartbeatInput,
  ListInput,
  OwnedInput,
  ProgressInput,
  PurgeInput,
  QueueDepthGate,
  QueueHealth,
  QueueHealthTaskStore,
  QueueStats,
  RefCompleteTaskStore,
  RetryBatchInput,
  RetryOptions,
  ScheduleSlotsInput,
  ScheduleSlotsResult,
  ScheduleTaskStore,
  ParkOutcome,
  ParkStepInput,
  RecordStepInput,
  SendInput,
  SendOutcome,
  SpawnStepInput,
  StepRecord,
  StoreCapabilities,
  StoreSignal,
  StoreSignalReason,
  SubmitInput,
  SubmitOutcome,
  SucceedInput,
  Task,
  TaskRef,
  TaskStepStore,
  TaskStore,
} from "@cairnq/protocol";
import { ClaimCycle } from "./claim-cycle.js";
import { ClientTransitions } from "./client-transitions.js";
import { StatementCompiler } from "./compiler.js";
import type { StoreDialect } from "./dialect.js";
import { TransactionViewDialect } from "./dialect.js";
import type { AnyKysely, QueryRunner } from "./executor.js";
import { StoreExtensions } from "./extension-tables.js";
import { OwnedWrites } from "./owned-writes.js";
import { markRequeued } from "./group-requeue.js";
import { SettlementsInFlight } from "./settlements-in-flight.js";
import { readQueueHealth } from "./queue-health.js";
import { submitScheduleSlots } from "./schedule-slots.js";
import { StepJournal } from "./steps-journal.js";
import { StoreLifecycle } from "./store-lifecycle.js";
import { StoreStatements } from "./store-statements.js";
import { SubmitPath } from "./submit-path.js";
import { GroupReads } from "./group-reads.js";
import { RateWindowReads } from "./rate-window-reads.js";
import { TaskReads } from "./task-reads.js";

/** Options of {@link KyselyStore}. */
export interface KyselyStoreOptions {
  /**
   * Destroy the Kysely instance on `close()`. Set it when the store built the
   * instance; leave it unset for one the caller owns.
   * @default false
   */
  readonly destroyOnClose?: boolean;
  /**
   * For a transaction view (a store whose dialect is a `TransactionViewDialect`, what a backend's
   * `withTransaction` returns): the store it belongs to. The view then shares what that store knows of
   * the extension tables (so a `retry` through it marks a grouped task's row `requeued`), and, where the
   * dialect's DDL commits (`DialectCapabilities.ddlCommits`), has that store create them on its own
   * connections instead of running DDL on the caller's transaction. Ignored unless it is a `KyselyStore`.
   * @default undefined (none: a view without it must not need DDL where DDL commits)
   */
  readonly parent?: TaskStore;
}

/**
 * The `TaskStore` contract written once over Kysely: every protocol
 * operation as compiled conditional statements (see `statements.ts`), run
 * through a {@link StoreDialect}.
 *
 * The store never reads a row, decides in JavaScript and writes it back:
 * every transition is one `UPDATE … WHERE <guard>` whose branches read the
 * row in the database, atomic against any other writer, peers included. The
 * one read-then-decide step is the keyed submit (§5.1), inside the key-locked
 * write transaction.
 *
 * Every method validates its input first (a clear `InvalidArgument` or
 * `SerializationError`, nothing written) and connects lazily.
 *
 * This class is a facade: each group of operations lives in a module of its
 * own — `submit-path.ts`, `owned-writes.ts` (a worker's writes to the tasks
 * it holds), `task-reads.ts`, `client-transitions.ts` (cancel, retry, purge),
 * `claim-cycle.ts` — over one `store-lifecycle.ts` (lazy connect, close after
 * the calls in flight) and one `store-statements.ts`. Writes that concurrent
 * callers may share a statement for go through the dialect's
 * {@link StoreDialect.writes}.
 *
 * @example
 * const store = new KyselyStore(db, new MyDialect());
 * const task = await store.submit({ name: "email", payload: { to: "a@example.com" } });
 */
export class KyselyStore implements ScheduleTaskStore, RefCompleteTaskStore, QueueHealthTaskStore, TaskStepStore, GroupReadStore, FlowReadStore {
  /** What this backend can do beyond the contract's floor, from the dialect's flags. */
  readonly capabilities: StoreCapabilities;
  /** The backpressure gate every submit passes after validation (§5.6); installed by the client. */
  queueDepthGate: QueueDepthGate | null = null;

  /** The compiled-statement cache of this store's dialect. */
  protected readonly compiler: StatementCompiler;
  readonly #lifecycle: StoreLifecycle;
  readonly #submits: SubmitPath;
  readonly #owned: OwnedWrites;
  readonly #reads: TaskReads;
  readonly #statements: StoreStatements;
  readonly #transitions: ClientTransitions;
  readonly #claims: ClaimCycle;
  /** Extension tables and statements beyond protocol v1 (flow control, schedule slots). */
  readonly #extensions: StoreExtensions;
  readonly #groupReads: GroupReads;
  readonly #rateWindows: RateWindowReads;
  /** Durable steps: the journal, parking, messages (see `steps-journal.ts`). */
  readonly #steps: StepJournal;

  /**
   * @param db - The Kysely instance statements run on (the dialect's executor may route reads elsewhere).
   * @param dialect - What the backend supplies.
   */
  constructor(
    readonly db: AnyKysely,
    readonly dialect: StoreDialect,
    options: KyselyStoreOptions = {},
  ) {
    const caps = dialect.capabilities;
    this.capabilities = {
      pushWakeups: caps.pushWakeups,
      transactionalComplete: caps.transactionalComplete,
      databaseClock: caps.databaseClock,
      flowControl: true,
      schedules: true,
      completeRef: true,
      claimReprobe: true,
      // Read live: a dialect may say it only while its waits really end that way (SQLite, while it can watch its file).
      get claimWakeOnQueued(): boolean {
        return caps.claimWakeOnQueued ?? false;
      },
      queueHealth: true,
      durableSteps: true,
      groups: true,
    };
    // Only where a dialect declares it, so the other stores' capabilities read as before (absent = false); read live,
    // like claimWakeOnQueued (SQLite's done waits read their task only while it can watch its file).
    if (caps.taskDoneWakeReads !== undefined) {
      Object.defineProperty(this.capabilities, "taskDoneWakeReads", { enumerable: true, get: () => caps.taskDoneWakeReads === true });
    }
    this.compiler = new StatementCompiler(dialect.syntax, dialect.clock, caps.skipLocked, (sql) => dialect.statementCompiled(sql));
    const statements = new StoreStatements(db, dialect, this.compiler);
    this.#statements = statements;
    this.#lifecycle = new StoreLifecycle(db, dialect, options.destroyOnClose ?? false);
    const parent = options.parent !== undefined && #extensions in options.parent ? options.parent.#extensions : null;
    this.#extensions = new StoreExtensions(statements, dialect instanceof TransactionViewDialect ? { parent } : null);
    this.#submits = new SubmitPath(statements, this.#lifecycle, this, this.#extensions);
    // Claims that count running tasks wait for the settlements in flight where they would not see them otherwise.
    const inFlight = dialect.capabilities.claimsSeeSettlements === true ? null : new SettlementsInFlight();
    const requeued = (taskIds: readonly string[]): Promise<void> => markRequeued(this.#extensions, taskIds);
    this.#owned = new OwnedWrites(statements, this.#lifecycle, inFlight, requeued);
    this.#reads = new TaskReads(statements, this.#lifecycle);
    this.#transitions = new ClientTransitions(statements, this.#lifecycle, (parentIds) => this.#steps.wakeJoins(parentIds), requeued);
    this.#claims = new ClaimCycle(statements, this.#lifecycle, this.#extensions, inFlight);
    this.#rateWindows = new RateWindowReads(this.#extensions);
    this.#groupReads = new GroupReads(this.#extensions, this.#lifecycle);
    this.#steps = new StepJournal(this.#extensions);
  }

  // ---------------------------------------------------------------- lifecycle

  /** Opens the database: setup, migrations and guards (see the dialect's schema manager). Idempotent. */
  connect(): Promise<void> {
    return this.#lifecycle.connect();
  }

  /**
   * Waits for in-flight operations, then releases what the store opened
   * (never a Kysely instance the caller owns). Idempotent; later calls of any
   * other method reject.
   */
  close(): Promise<void> {
    return this.#lifecycle.close();
  }

  /** Runs `fn` connected, counted as in flight so `close()` waits for it: for a subclass's own operations. */
  protected run<T>(fn: () => Promise<T>): Promise<T> {
    return this.#lifecycle.run(fn);
  }

  // ------------------------------------------------------------------ submit

  /**
   * T1 (§5.1). Validates and encodes first, then passes the backpressure
   * gate, then inserts. With a key, one write transaction: key lock, read the
   * key's task, `resolveKeyConflict`, then reuse, reject (`AlreadyExists`,
   * nothing written) or cancel-and-insert with the key upserted. Keyed
   * submits of one key in flight at once on this instance take the key lock
   * in call order, so a debounce or `replace` keeps the last one issued.
   */
  async submit(input: SubmitInput): Promise<Task> {
    return (await this.#submits.submit(input)).task;
  }

  /**
   * {@link KyselyStore.submit}, also saying whether this call inserted the
   * row (`created`) or a keyed submit reused an existing task — decided in
   * the same key-locked transaction.
   */
  submitOutcome(input: SubmitInput): Promise<SubmitOutcome> {
    return this.#submits.submit(input);
  }

  // ------------------------------------------------------------------- reads

  /** The full row, or `null` (§5.2). */
  get(id: string): Promise<Task | null> {
    return this.#reads.get(id);
  }

  /** The row the key points at, or `null` (§5.2); takes no key lock. */
  getByKey(key: string): Promise<Task | null> {
    return this.#reads.getByKey(key);
  }

  /** `{ id, status }`, or `null` (§5.3). */
  getStatus(id: string): Promise<TaskRef | null> {
    return this.#reads.getStatus(id);
  }

  /** `{ id, status }` of the task the key points at now, or `null` (§5.3). */
  getStatusByKey(key: string): Promise<TaskRef | null> {
    return this.#reads.getStatusByKey(key);
  }

  /** Rows matching every given filter, newest first (§5.4). */
  list(input: ListInput = {}): Promise<Task[]> {
    return this.#reads.list(input);
  }

  /** Counts by queue and status, zero-filled; a requested queue is always present (§5.5). */
  stats(queue?: string): Promise<QueueStats> {
    return this.#reads.stats(queue);
  }

  /** Headroom `maxDepth − min(maxDepth, queued)`, reading at most `maxDepth` rows (§5.6). Read-only. */
  queueDepth(queue: string, maxDepth: number): Promise<number> {
    return this.#reads.queueDepth(queue, maxDepth);
  }

  /** Counts by queue and status and each queue's oldest due queued task, in one aggregate read (see `queue-health.ts`). */
  queueHealth(): Promise<QueueHealth> {
    return readQueueHealth(this.#statements, this.#lifecycle, () => this.dialect.clock.nowMs());
  }

  // ------------------------------------------------------- client transitions

  /** T3/T4 (§5.7): the post-update row, or `null` when terminal or missing. */
  cancel(id: string): Promise<Task | null> {
    return this.#transitions.cancel(id);
  }

  /** Key lock, resolve the key, cancel that task (§5.7); `null` for an unknown key. */
  cancelByKey(key: string): Promise<Task | null> {
    return this.#transitions.cancelByKey(key);
  }

  /** T14 (§5.8): the post-update row, or `null` unless failed or canceled. */
  retry(id: string, options?: RetryOptions): Promise<Task | null> {
    return this.#transitions.retry(id, options);
  }

  /** Key lock, resolve the key, retry that task (§5.8); `null` for an unknown key. */
  retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    return this.#transitions.retryByKey(key, options);
  }

  /**
   * One batch of a bulk cancel: `CANCEL`'s branches on up to `limit` queued
   * or running rows matching the filters, in id order after `afterId`, as
   * one statement that re-checks each row's guard as it writes it. Returns
   * the ids it changed.
   */
  cancelBatch(input?: BulkBatchInput): Promise<string[]> {
    return this.#transitions.cancelBatch(input);
  }

  /** One batch of a bulk retry: `RETRY`'s branch on failed or canceled rows; as {@link KyselyStore.cancelBatch}. */
  retryBatch(input?: RetryBatchInput): Promise<string[]> {
    return this.#transitions.retryBatch(input);
  }

  /** T15 (§5.9): deletes up to `limit` terminal rows completed before the cutoff; returns their ids. */
  purge(input?: PurgeInput): Promise<string[]> {
    return this.#transitions.purge(input);
  }

  // ------------------------------------------------------------------- claim

  /**
   * The claim cycle (§5.10): a read-only probe outside any transaction (an
   * idle worker never takes the write lock; skipped with `probe: false`), then one write transaction —
   * lease recovery over the whole table, then the draw planner's draws until
   * it returns `null`; with `reprobe`, the probe once more as the
   * transaction's last statement, its answer reported after the commit.
   */
  claim(input: ClaimInput): Promise<Task[]> {
    return this.#claims.claim(input);
  }

  // ------------------------------------------------------------------ groups

  /** The group of task `taskId` with its counts, or `null` (see `group-reads.ts`); creates the group tables if absent. */
  taskGroup(taskId: string): Promise<TaskGroupInfo | null> {
    return this.#groupReads.taskGroup(taskId);
  }

  /** Queued and running tasks of `name` per group, most queued first (see `group-reads.ts`). */
  groupStats(name: string, options?: { readonly limit?: number }): Promise<GroupCounts[]> {
    return this.#groupReads.groupStats(name, options);
  }

  /** The rate windows of `name` (and of its group `group`) under their recorded limits (see `rate-window-reads.ts`); creates nothing. */
  rateWindows(name: string, group: string | null): Promise<RateWindows> {
    return this.#lifecycle.run(() => this.#rateWindows.rateWindows(name, group));
  }

  // --------------------------------------------------------------- schedules

  /** Submits a schedule's slots after its last one, each once (see `schedule-slots.ts`); creates `cairnq_ext_schedules` on first use. */
  async submitScheduleSlots(input: ScheduleSlotsInput): Promise<ScheduleSlotsResult> {
    return this.#lifecycle.run(() => submitScheduleSlots(this.#extensions, input));
  }

  // ----------------------------------------------------------- durable steps

  /** The task's step journal in recording order (see `steps-journal.ts`); creates the extension tables on first use. */
  steps(taskId: string): Promise<StepRecord[]> {
    return this.#lifecycle.run(() => this.#steps.steps(taskId));
  }

  /** Records a step's outcome in one statement fenced by the attempt; `LostLease` when the fence fails. */
  recordStep(input: RecordStepInput): Promise<void> {
    return this.#lifecycle.run(() => this.#steps.recordStep(input));
  }

  /** Parks the task on a sleep, wait or join, or answers `ready` when the wait or join is already satisfied. */
  parkStep(input: ParkStepInput): Promise<ParkOutcome> {
    return this.#lifecycle.run(() => this.#steps.parkStep(input));
  }

  /** Submits a child once per journal key, with its entry, in one fenced transaction. */
  spawnStep(input: SpawnStepInput): Promise<string> {
    return this.#lifecycle.run(() => this.#steps.spawnStep(input));
  }

  /** Stores a message for the task and wakes it when it is parked waiting for that name. */
  send(input: SendInput): Promise<SendOutcome> {
    return this.#lifecycle.run(() => this.#steps.send(input));
  }

  /** Whether an untaken message of `name` is stored for the task (sent before `sentBeforeMs`, when given); read-only. */
  hasMessage(taskId: string, name: string, sentBeforeMs?: number): Promise<boolean> {
    return this.#lifecycle.run(() => this.#steps.hasMessage(taskId, name, sentBeforeMs));
  }

  /** Makes a parent parked on a join due now. */
  wakeJoin(parentId: string): Promise<boolean> {
    return this.#lifecycle.run(() => this.#steps.wakeJoin(parentId));
  }

  // ------------------------------------------------------------- owned writes

  /** §5.11: extends the lease; the full row, or `LostLease`. */
  heartbeat(input: HeartbeatInput): Promise<Task> {
    return this.#owned.heartbeat(input);
  }

  /**
   * §5.12: one statement renews every listed lease still owned. Returns id →
   * cancel requested, in requested-id order; a missing id lost its lease (not
   * an error). Empty `taskIds` runs no statement.
   */
  heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>> {
    return this.#owned.heartbeatBatch(input);
  }

  /** §5.13: `null` keeps the previous value; the row, or `LostLease`. */
  progress(input: ProgressInput): Promise<Task> {
    return this.#owned.progress(input);
  }

  /** T5 (§5.14), the raw primitive: ignores the cancel flag. */
  succeed(input: SucceedInput): Promise<Task> {
    return this.#owned.succeed(input);
  }

  /** T6/T7 (§5.15): succeeds, or ends canceled when a cancel was requested. */
  complete(input: CompleteInput): Promise<Task> {
    return this.#owned.complete(input);
  }

  /**
   * §5.15 exactly as {@link KyselyStore.complete} (the same statement, guard and branches; `LostLease`
   * when the guard matches nothing), answering only `{ id, status }` (`RefCompleteTaskStore`): the
   * statement returns `id, status` instead of the whole row. Where the dialect combines writes
   * (Postgres) concurrent ones share one multi-row statement: the worker's own settlements, measured on
   * the Postgres c64 drain of `bench/` (4 alternating runs each), cost the worker process 51–55 µs of
   * CPU per task instead of 57–59 µs, and its backends ~1.5 µs less.
   */
  completeRef(input: CompleteInput): Promise<TaskRef> {
    return this.#owned.completeRef(input);
  }

  /** T8/T9/T10 (§5.16): cancel wins, then requeue while attempts remain, else failed. */
  fail(input: FailInput): Promise<Task> {
    return this.#owned.fail(input);
  }

  /**
   * The body of `complete_in` (§5.15), for a subclass whose dialect has
   * `transactionalComplete` to expose as `completeIn`: runs `fn` in one write
   * transaction on the store's driver connection, then `complete` with its
   * return value as the last statement; zero rows → `LostLease` and
   * everything rolls back. Not a public method here, because a store has
   * `completeIn` exactly when it declares the capability (the conformance kit
   * checks both agree); elsewhere callers get `UnsupportedBackend` from the
   * worker.
   *
   * @param fn - Receives the transaction: a Kysely `Transaction` with the default executor.
   * @example
   * class PgStore extends KyselyStore {
   *   completeIn<R>(input: OwnedInput, fn: (tx: QueryRunner) => Promise<R>) { return this.completeInTransaction(input, fn); }
   * }
   */
  protected completeInTransaction<R>(input: OwnedInput, fn: (tx: QueryRunner) => Promise<R>): Promise<{ task: Task; result: R }> {
    return this.#owned.completeIn(input, fn);
  }

  // ----------------------------------------------------------------- wakeups

  /** Sleeps up to `timeoutMs`, ending early on a push signal for one of `queues` (§9). */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.dialect.wakeups.claimWake(queues, timeoutMs, signal);
  }

  /** Sleeps up to `timeoutMs`, ending early when the backend signals `taskId` is done (§9). */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void> {
    return this.dialect.wakeups.taskDoneWake(taskId, timeoutMs, signal);
  }

  /** Subscribes to the backend's push signals (those of `reasons`, default both); a no-op unsubscribe where there are none. */
  subscribe(listener: (signal: StoreSignal) => void, reasons?: readonly StoreSignalReason[]): () => void {
    return this.dialect.wakeups.subscribe(listener, reasons);
  }
}
