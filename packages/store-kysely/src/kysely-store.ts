import type {
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
  QueueStats,
  RefCompleteTaskStore,
  RetryBatchInput,
  RetryOptions,
  ScheduleSlotsInput,
  ScheduleSlotsResult,
  ScheduleTaskStore,
  StoreCapabilities,
  StoreSignal,
  SubmitInput,
  SubmitOutcome,
  SucceedInput,
  Task,
  TaskRef,
  TaskStatus,
} from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import { AlreadyExists, CairnQError, STATUSES, UnsupportedBackend } from "@cairnq/protocol";
import {
  answerReprobe,
  CANCEL,
  CANCEL_BATCH,
  cancelBatchParams,
  COMPLETE,
  completeParams,
  DRAW,
  drawParams,
  FAIL,
  failParams,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  heartbeatBatchParams,
  heartbeatBatchResult,
  heartbeatParams,
  newTaskId,
  normalizeClaim,
  normalizeList,
  normalizeSubmit,
  probeParams,
  PROGRESS,
  progressParams,
  PURGE,
  purgeParams,
  queueDepthArgs,
  RECOVER,
  requireKey,
  requireLimitedText,
  requireName,
  resolveKeyConflict,
  RETRY,
  RETRY_BATCH,
  retryBatchParams,
  retryParams,
  SUCCEED,
  succeedParams,
} from "@cairnq/protocol/adapter";
import type { CompiledQuery, QueryResult } from "kysely";
import type { StatementTemplate } from "./compiler.js";
import { StatementCompiler } from "./compiler.js";
import type { StoreDialect } from "./dialect.js";
import type { AnyKysely, QueryRunner, Row, TransactionHead } from "./executor.js";
import { StoreExtensions } from "./extension-tables.js";
import { FlowControlStep } from "./flow-control-step.js";
import { OwnedWrite, ownedRow } from "./owned-write.js";
import { submitScheduleSlots } from "./schedule-slots.js";
import { decodeTask, decodeTaskRef } from "./rows.js";
import { SubmitWrite } from "./submit-write.js";
import type { BatchedWriter } from "./write-batching.js";
import {
  batchTransitionTemplate,
  deleteTemplate,
  GET_BY_KEY_TEMPLATE,
  GET_STATUS_BY_KEY_TEMPLATE,
  GET_STATUS_TEMPLATE,
  GET_TEMPLATE,
  KEY_TASK_ID_TEMPLATE,
  LIST_BY_ID_TEMPLATE,
  LIST_TEMPLATE,
  PROBE_TEMPLATE,
  QUEUE_DEPTH_TEMPLATE,
  rowTransitionTemplate,
  setTransitionTemplate,
  STATS_TEMPLATE,
  UPSERT_KEY_TEMPLATE,
} from "./statements.js";

/** Options of {@link KyselyStore}. */
export interface KyselyStoreOptions {
  /**
   * Destroy the Kysely instance on `close()`. Set it when the store built the
   * instance; leave it unset for one the caller owns.
   * @default false
   */
  readonly destroyOnClose?: boolean;
}

const RECOVER_TEMPLATE = setTransitionTemplate(RECOVER, ["id"]);
const DRAW_TEMPLATE = setTransitionTemplate(DRAW, "task");
const HEARTBEAT_BATCH_TEMPLATE = setTransitionTemplate(HEARTBEAT_BATCH, ["id", "cancel_requested_at_ms"]);
const PURGE_TEMPLATE = deleteTemplate(PURGE);
const CANCEL_BATCH_TEMPLATE = batchTransitionTemplate(CANCEL_BATCH);
const RETRY_BATCH_TEMPLATE = batchTransitionTemplate(RETRY_BATCH);

type State = "idle" | "open" | "closing" | "closed";

/** An id bound above every task id (`task_` + a ULID starting 0–7, §2.4). */
const ID_UPPER_BOUND = "task_8";

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
 * @example
 * const store = new KyselyStore(db, new MyDialect());
 * const task = await store.submit({ name: "email", payload: { to: "a@example.com" } });
 */
export class KyselyStore implements ScheduleTaskStore, RefCompleteTaskStore {
  /** What this backend can do beyond the contract's floor, from the dialect's flags. */
  readonly capabilities: StoreCapabilities;
  /** The backpressure gate every submit passes after validation (§5.6); installed by the client. */
  queueDepthGate: QueueDepthGate | null = null;

  /** The compiled-statement cache of this store's dialect. */
  protected readonly compiler: StatementCompiler;
  readonly #destroyOnClose: boolean;
  #state: State = "idle";
  #connecting: Promise<void> | null = null;
  /** Calls of {@link KyselyStore.run} not yet settled; `close()` waits for them (see {@link KyselyStore.#settledOne}). */
  #inFlight = 0;
  /** Wakes `close()` when the last call in flight settles; set only while it waits. */
  #whenIdle: (() => void) | null = null;
  /** The close in progress or done, which a second `close()` waits for. */
  #closing: Promise<void> | null = null;
  /** The SUBMIT insert: the unkeyed submit's batchable write, and the insert of a keyed submit's transaction. */
  readonly #insert: SubmitWrite;
  /** The unkeyed submit's write path, through the dialect's write batching. */
  readonly #unkeyed: BatchedWriter<Params, Task>;
  /** One write path per owned-write rule, through the dialect's write batching. */
  readonly #ownedWriters = new Map<RowTransition, BatchedWriter<Params, Task>>();
  /** The write path of {@link KyselyStore.completeRef}. */
  readonly #completeRef: BatchedWriter<Params, TaskRef>;
  /** Extension tables and statements beyond protocol v1 (flow control, schedule slots). */
  readonly #extensions: StoreExtensions;

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
    };
    this.compiler = new StatementCompiler(dialect.syntax, dialect.clock, caps.skipLocked, (sql) => dialect.statementCompiled(sql));
    this.#extensions = new StoreExtensions(db, dialect, this.compiler);
    this.#destroyOnClose = options.destroyOnClose ?? false;
    const writes = dialect.writes;
    this.#insert = new SubmitWrite(this.compiler);
    this.#unkeyed = writes.writer(db, dialect.executor, this.#insert);
    for (const rule of [HEARTBEAT, PROGRESS, SUCCEED, COMPLETE, FAIL]) {
      // Settlements end an attempt, on the latency path of `call()`; heartbeats and progress nobody waits for.
      const latency = rule === HEARTBEAT || rule === PROGRESS ? "background" : "settlement";
      this.#ownedWriters.set(rule, writes.writer(db, dialect.executor, OwnedWrite.task(this.compiler, rule, latency)));
    }
    this.#completeRef = writes.writer(db, dialect.executor, OwnedWrite.ref(this.compiler, COMPLETE, "settlement"));
  }

  // ---------------------------------------------------------------- lifecycle

  /** Opens the database: setup, migrations and guards (see the dialect's schema manager). Idempotent. */
  async connect(): Promise<void> {
    if (this.#state === "open") return;
    if (this.#state !== "idle") throw this.#closedError();
    this.#connecting ??= this.dialect.schema.connect(this.db, this.dialect.executor).then(
      () => {
        if (this.#state === "idle") this.#state = "open";
      },
      (err: unknown) => {
        this.#connecting = null;
        throw err;
      },
    );
    await this.#connecting;
  }

  /**
   * Waits for in-flight operations, then releases what the store opened
   * (never a Kysely instance the caller owns). Idempotent; later calls of any
   * other method reject.
   */
  async close(): Promise<void> {
    if (this.#closing !== null) {
      // A second close waits for the first, and does not repeat its error.
      await this.#closing.catch(() => {});
      return;
    }
    this.#closing = this.#close();
    await this.#closing;
  }

  async #close(): Promise<void> {
    const wasConnecting = this.#connecting;
    this.#state = "closing";
    try {
      if (wasConnecting !== null) await wasConnecting.catch(() => {});
      while (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#whenIdle = resolve));
      await this.dialect.schema.close(this.db);
      if (this.#destroyOnClose) await this.db.destroy();
    } finally {
      this.#state = "closed";
    }
  }

  #closedError(): CairnQError {
    return new CairnQError(`this ${this.dialect.name} store is closed, so the call was not run; create a new store to keep using the database`);
  }

  /**
   * Runs `fn` connected, counted as in flight so `close()` waits for it. A count and one reaction
   * per call, not a set of promises and a `finally` chain: on a Postgres c64 drain every settlement
   * passes here, and those were objects for the garbage collector per task.
   */
  protected run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#state === "closing" || this.#state === "closed") return Promise.reject(this.#closedError());
    const promise = this.#state === "open" ? fn() : this.connect().then(fn);
    this.#inFlight += 1;
    promise.then(this.#settledOne, this.#settledOne);
    return promise;
  }

  readonly #settledOne = (): void => {
    this.#inFlight -= 1;
    if (this.#inFlight > 0 || this.#whenIdle === null) return;
    const wake = this.#whenIdle;
    this.#whenIdle = null;
    wake();
  };

  // -------------------------------------------------------------- statements

  #read(template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    const statement = this.compiler.statement(template, params);
    return this.dialect.executor.read(this.db, () => statement.query(params));
  }

  #write(template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    const statement = this.compiler.statement(template, params);
    return this.dialect.executor.write(this.db, () => statement.query(params));
  }

  #exec(tx: QueryRunner, template: StatementTemplate, params: Params): Promise<QueryResult<Row>> {
    return tx.executeQuery(this.compiler.statement(template, params).query(params));
  }

  // ------------------------------------------------------------------ submit

  /**
   * T1 (§5.1). Validates and encodes first, then passes the backpressure
   * gate, then inserts. With a key, one write transaction: key lock, read the
   * key's task, `resolveKeyConflict`, then reuse, reject (`AlreadyExists`,
   * nothing written) or cancel-and-insert with the key upserted.
   */
  async submit(input: SubmitInput): Promise<Task> {
    return (await this.#submit(input)).task;
  }

  /**
   * {@link KyselyStore.submit}, also saying whether this call inserted the
   * row (`created`) or a keyed submit reused an existing task — decided in
   * the same key-locked transaction.
   */
  submitOutcome(input: SubmitInput): Promise<SubmitOutcome> {
    return this.#submit(input);
  }

  #submit(input: SubmitInput): Promise<SubmitOutcome> {
    const submit = normalizeSubmit(input, newTaskId());
    return this.run(async () => {
      if (this.queueDepthGate !== null) await this.queueDepthGate.acquire(submit.queue, this);
      const params = submit.params;
      const key = submit.key;
      if (key === null) return { task: await this.#unkeyed(params), created: true };
      return this.dialect.executor.writeTransaction(this.db, async (tx): Promise<SubmitOutcome> => {
        await this.dialect.keyLock.acquire(tx, key);
        const found = (await this.#exec(tx, GET_BY_KEY_TEMPLATE, { key })).rows[0];
        const existing = found === undefined ? null : decodeTask(found);
        const decision = resolveKeyConflict(submit.conflict, existing);
        switch (decision.kind) {
          case "reject":
            throw new AlreadyExists(key);
          case "reuse":
            return { task: existing as Task, created: false };
          case "insert": {
            if (decision.cancelExisting && existing !== null) {
              await this.#exec(tx, rowTransitionTemplate(CANCEL), { taskId: existing.id });
            }
            const inserted = await this.#insertIn(tx, params);
            await this.#exec(tx, UPSERT_KEY_TEMPLATE, { key, taskId: inserted.id });
            return { task: inserted, created: true };
          }
        }
      });
    });
  }

  /** SUBMIT inside a write transaction; the inserted row. */
  async #insertIn(tx: QueryRunner, params: Params): Promise<Task> {
    const plan = this.#insert.one(params);
    return plan.answer(await tx.executeQuery(plan.query));
  }

  // ------------------------------------------------------------------- reads

  /** The full row, or `null` (§5.2). */
  async get(id: string): Promise<Task | null> {
    const params = { taskId: requireName(id, "id") };
    return this.#readOne(GET_TEMPLATE, params, decodeTask);
  }

  /** The row the key points at, or `null` (§5.2); takes no key lock. */
  async getByKey(key: string): Promise<Task | null> {
    const params = { key: requireKey(key) };
    return this.#readOne(GET_BY_KEY_TEMPLATE, params, decodeTask);
  }

  /** `{ id, status }`, or `null` (§5.3). */
  async getStatus(id: string): Promise<TaskRef | null> {
    const params = { taskId: requireName(id, "id") };
    return this.#readOne(GET_STATUS_TEMPLATE, params, decodeTaskRef);
  }

  /** `{ id, status }` of the task the key points at now, or `null` (§5.3). */
  async getStatusByKey(key: string): Promise<TaskRef | null> {
    const params = { key: requireKey(key) };
    return this.#readOne(GET_STATUS_BY_KEY_TEMPLATE, params, decodeTaskRef);
  }

  #readOne<T>(template: StatementTemplate, params: Params, decode: (row: Row) => T): Promise<T | null> {
    return this.run(async () => {
      const row = (await this.#read(template, params)).rows[0];
      return row === undefined ? null : decode(row);
    });
  }

  /** Rows matching every given filter, newest first (§5.4). */
  async list(input: ListInput = {}): Promise<Task[]> {
    const q = normalizeList(input);
    if (q.order !== "id") return this.run(async () => (await this.#read(LIST_TEMPLATE, q as unknown as Params)).rows.map(decodeTask));
    // The first page is bounded too ("task_8" sorts after every task id, §2.4): with `id < ?` in the
    // statement SQLite reads the primary key in order instead of sorting a dense filter's matches.
    // 1M rows, 50 per page, first page, under load: status queued 803 → 13 ms, queue + status 1302 → 7.8 ms,
    // queue 147 → 1.6 ms. A name-only filter still sorts its matches (name_idx; 50k matches ≈ 0.7 s).
    const params = q.beforeId === null ? { ...q, beforeId: ID_UPPER_BOUND } : q;
    return this.run(async () => (await this.#read(LIST_BY_ID_TEMPLATE, params as unknown as Params)).rows.map(decodeTask));
  }

  /** Counts by queue and status, zero-filled; a requested queue is always present (§5.5). */
  async stats(queue?: string): Promise<QueueStats> {
    const wanted = queue === undefined ? null : requireLimitedText(queue, "queue");
    return this.run(async () => {
      const out: QueueStats = {};
      if (wanted !== null) out[wanted] = zeroCounts();
      for (const row of (await this.#read(STATS_TEMPLATE, { queue: wanted })).rows) {
        const status = row.status as TaskStatus;
        if (!STATUSES.includes(status)) continue;
        const counts = (out[String(row.queue)] ??= zeroCounts());
        counts[status] += Number(row.n);
      }
      return out;
    });
  }

  /** Headroom `maxDepth − min(maxDepth, queued)`, reading at most `maxDepth` rows (§5.6). Read-only. */
  async queueDepth(queue: string, maxDepth: number): Promise<number> {
    const args = queueDepthArgs(queue, maxDepth);
    return this.run(async () => {
      if (args.maxDepth === 0) return 0;
      const row = (await this.#read(QUEUE_DEPTH_TEMPLATE, { queue: args.queue, maxDepth: args.maxDepth })).rows[0];
      const queued = Number(row?.n ?? 0);
      return args.maxDepth - Math.min(args.maxDepth, queued);
    });
  }

  // ------------------------------------------------------- client transitions

  /** T3/T4 (§5.7): the post-update row, or `null` when terminal or missing. */
  async cancel(id: string): Promise<Task | null> {
    return this.#clientTransition(CANCEL, { taskId: requireName(id, "id") });
  }

  /** Key lock, resolve the key, cancel that task (§5.7); `null` for an unknown key. */
  async cancelByKey(key: string): Promise<Task | null> {
    return this.#byKey(requireKey(key), {}, CANCEL);
  }

  /** T14 (§5.8): the post-update row, or `null` unless failed or canceled. */
  async retry(id: string, options?: RetryOptions): Promise<Task | null> {
    return this.#clientTransition(RETRY, retryParams(requireName(id, "id"), options));
  }

  /** Key lock, resolve the key, retry that task (§5.8); `null` for an unknown key. */
  async retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    // retryParams validates the options; the task id comes from the key inside the transaction.
    return this.#byKey(requireKey(key), retryParams(key, options), RETRY);
  }

  /**
   * One batch of a bulk cancel: `CANCEL`'s branches on up to `limit` queued
   * or running rows matching the filters, in id order after `afterId`, as
   * one statement that re-checks each row's guard as it writes it. Returns
   * the ids it changed.
   */
  async cancelBatch(input?: BulkBatchInput): Promise<string[]> {
    return this.#batch(CANCEL_BATCH_TEMPLATE, cancelBatchParams(input));
  }

  /** One batch of a bulk retry: `RETRY`'s branch on failed or canceled rows; as {@link KyselyStore.cancelBatch}. */
  async retryBatch(input?: RetryBatchInput): Promise<string[]> {
    return this.#batch(RETRY_BATCH_TEMPLATE, retryBatchParams(input));
  }

  #batch(template: StatementTemplate, params: Params): Promise<string[]> {
    return this.run(async () => (await this.#write(template, params)).rows.map((row) => String(row.id)));
  }

  #clientTransition(rule: RowTransition, params: Params): Promise<Task | null> {
    return this.run(async () => {
      const row = (await this.#write(rowTransitionTemplate(rule), params)).rows[0];
      return row === undefined ? null : decodeTask(row);
    });
  }

  #byKey(key: string, extra: Params, rule: RowTransition): Promise<Task | null> {
    return this.run(() =>
      this.dialect.executor.writeTransaction(this.db, async (tx) => {
        await this.dialect.keyLock.acquire(tx, key);
        const found = (await this.#exec(tx, KEY_TASK_ID_TEMPLATE, { key })).rows[0];
        if (found === undefined) return null;
        const row = (await this.#exec(tx, rowTransitionTemplate(rule), { ...extra, taskId: String(found.task_id) })).rows[0];
        return row === undefined ? null : decodeTask(row);
      }),
    );
  }

  /** T15 (§5.9): deletes up to `limit` terminal rows completed before the cutoff; returns their ids. */
  async purge(input?: PurgeInput): Promise<string[]> {
    const params = purgeParams(input);
    return this.run(async () => (await this.#write(PURGE_TEMPLATE, params)).rows.map((row) => String(row.id)));
  }

  // ------------------------------------------------------------------- claim

  /**
   * The claim cycle (§5.10): a read-only probe outside any transaction (an
   * idle worker never takes the write lock; skipped with `probe: false`), then one write transaction —
   * lease recovery over the whole table, then the draw planner's draws until
   * it returns `null`; with `reprobe`, the probe once more as the
   * transaction's last statement, its answer reported after the commit.
   */
  async claim(input: ClaimInput): Promise<Task[]> {
    const claim = normalizeClaim(input);
    const flow = FlowControlStep.of(input, this.#extensions);
    const probed = probeParams(claim);
    return this.run(async () => {
      if (claim.probe) {
        const probe = (await this.#read(PROBE_TEMPLATE, probed)).rows[0];
        if (!truthy(probe?.found)) {
          answerReprobe(claim, false);
          return [];
        }
      }
      await flow?.prepare();
      // Lease recovery is always the transaction's first statement, before any draw.
      const recover = this.compiler.statement(RECOVER_TEMPLATE, {});
      const first = (): CompiledQuery<Row> => recover.query({});
      // Asked for, the probe runs again as the transaction's last statement: it sees the draws' rows as
      // running, so it answers whether anything was left (set on every attempt of a replayed transaction).
      const again = claim.reprobe === null ? null : this.compiler.statement(PROBE_TEMPLATE, probed);
      const probeAgain = (): CompiledQuery<Row> => (again as NonNullable<typeof again>).query(probed);
      let claimable = false;
      /** The planner's first draw from `start` on that can match a row (its index and parameters), or `null` once the planner ends. */
      const nextDraw = (draws: typeof claim.draws, claimed: readonly Task[], start: number): { index: number; params: Params; last: boolean } | null => {
        for (let index = start; ; index += 1) {
          const draw = draws(claimed, index);
          if (draw === null) return null;
          const params = drawParams(claim, draw.names, draw.limit);
          if (params !== null) return { index, params, last: draw.last === true };
        }
      };
      /** The planner's draws from `start` on, appended to `claimed`, until it returns `null`; then the probe again, if asked for. */
      const drawFrom = async (tx: QueryRunner, draws: typeof claim.draws, claimed: Task[], start: number): Promise<Task[]> => {
        for (let found = nextDraw(draws, claimed, start); found !== null; found = nextDraw(draws, claimed, found.index + 1)) {
          for (const row of (await this.#exec(tx, DRAW_TEMPLATE, found.params)).rows) claimed.push(decodeTask(row));
        }
        if (again !== null) claimable = truthy((await tx.executeQuery(probeAgain())).rows[0]?.found);
        return claimed;
      };
      /** The index the planner continues from after the head's draw; `null` when the head has none. */
      let next: number | null = null;
      // One call path on every backend: the executor's default runs the head statement by statement;
      // Postgres sends it in one round trip, SQLite runs it straight on its writer.
      const head = (): TransactionHead => {
        const recovery = first();
        // With flow control the draws depend on what the transaction reads (locks, counts): none in the head.
        if (flow !== null) return { first: recovery, statements: [], last: false };
        // Without, the first draw depends on nothing the transaction reads, so it is planned before the
        // transaction and goes with BEGIN and recovery (one round trip on Postgres); when the planner says no
        // draw follows it (`last`), the probe again (if asked for) and COMMIT go in that round trip too.
        // From index 0 on every attempt, as a planner expects of a replayed transaction.
        const found = nextDraw(claim.draws, [], 0);
        next = found === null ? null : found.index + 1;
        const tail = again === null ? [] : [probeAgain()];
        if (found === null) return { first: recovery, statements: tail, last: true };
        const drawn = this.compiler.statement(DRAW_TEMPLATE, found.params).query(found.params);
        return found.last ? { first: recovery, statements: [drawn, ...tail], last: true } : { first: recovery, statements: [drawn], last: false };
      };
      const claimed = await this.dialect.executor.writeTransactionWith(this.db, head, async (tx, results) => {
        if (flow !== null) {
          if (tx === null) throw new Error("the executor committed a claim transaction whose head was not its last part");
          const claimed = await drawFrom(tx, await flow.begin(tx, claim.draws), [], 0);
          await flow.end(tx, claimed);
          return claimed;
        }
        // Committed with the head: the planner promised no further draw, and the probe again (if any) is its last result.
        if (tx === null && again !== null) claimable = truthy(results[results.length - 1]?.rows[0]?.found);
        if (next === null) return [];
        const drawn = (results[0]?.rows ?? []).map(decodeTask);
        if (tx === null) return drawn;
        return drawFrom(tx, claim.draws, drawn, next);
      });
      answerReprobe(claim, claimable);
      return claimed;
    });
  }

  // --------------------------------------------------------------- schedules

  /** Submits a schedule's slots after its last one, each once (see `schedule-slots.ts`); creates `cairnq_ext_schedules` on first use. */
  async submitScheduleSlots(input: ScheduleSlotsInput): Promise<ScheduleSlotsResult> {
    return this.run(() => submitScheduleSlots(this.#extensions, input));
  }

  // ------------------------------------------------------------- owned writes

  /** §5.11: extends the lease; the full row, or `LostLease`. */
  async heartbeat(input: HeartbeatInput): Promise<Task> {
    return this.#owned(HEARTBEAT, heartbeatParams(input));
  }

  /**
   * §5.12: one statement renews every listed lease still owned. Returns id →
   * cancel requested, in requested-id order; a missing id lost its lease (not
   * an error). Empty `taskIds` runs no statement.
   */
  async heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>> {
    const params = heartbeatBatchParams(input);
    if (params.taskIds.length === 0) return new Map();
    return this.run(async () => heartbeatBatchResult(params.taskIds, (await this.#write(HEARTBEAT_BATCH_TEMPLATE, params)).rows));
  }

  /** §5.13: `null` keeps the previous value; the row, or `LostLease`. */
  async progress(input: ProgressInput): Promise<Task> {
    return this.#owned(PROGRESS, progressParams(input));
  }

  /** T5 (§5.14), the raw primitive: ignores the cancel flag. */
  async succeed(input: SucceedInput): Promise<Task> {
    return this.#owned(SUCCEED, succeedParams(input));
  }

  /** T6/T7 (§5.15): succeeds, or ends canceled when a cancel was requested. */
  async complete(input: CompleteInput): Promise<Task> {
    return this.#owned(COMPLETE, completeParams(input));
  }

  /**
   * §5.15 exactly as {@link KyselyStore.complete} (the same statement, guard and branches; `LostLease`
   * when the guard matches nothing), answering only `{ id, status }` (`RefCompleteTaskStore`): the
   * statement returns `id, status` instead of the whole row. Where the dialect combines writes
   * (Postgres) concurrent ones share one multi-row statement: the worker's own settlements, measured on
   * the Postgres c64 drain of `bench/` (4 alternating runs each), cost the worker process 51–55 µs of
   * CPU per task instead of 57–59 µs, and its backends ~1.5 µs less.
   */
  async completeRef(input: CompleteInput): Promise<TaskRef> {
    const params = completeParams(input);
    const write = this.#completeRef;
    return this.run(() => write(params));
  }

  /** T8/T9/T10 (§5.16): cancel wins, then requeue while attempts remain, else failed. */
  async fail(input: FailInput): Promise<Task> {
    return this.#owned(FAIL, failParams(input));
  }

  #owned(rule: RowTransition, params: Params): Promise<Task> {
    const write = this.#ownedWriters.get(rule) as BatchedWriter<Params, Task>;
    return this.run(() => write(params));
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
  protected async completeInTransaction<R>(input: OwnedInput, fn: (tx: QueryRunner) => Promise<R>): Promise<{ task: Task; result: R }> {
    if (!this.dialect.capabilities.transactionalComplete) throw new UnsupportedBackend("completeIn", this.dialect.name);
    completeParams({ ...input, result: null });
    return this.run(() =>
      this.dialect.executor.writeTransaction(this.db, async (tx) => {
        const result = await fn(tx);
        const params = completeParams({ ...input, result });
        return { task: ownedRow((await this.#exec(tx, rowTransitionTemplate(COMPLETE), params)).rows[0], String(params.taskId), decodeTask), result };
      }),
    );
  }

  // ----------------------------------------------------------------- wakeups

  /** Sleeps up to `timeoutMs`, ending early on a push signal for one of `queues` (§9). */
  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.dialect.wakeups.claimWake(queues, timeoutMs, signal);
  }

  /** Sleeps up to `timeoutMs`, ending early when the backend signals `taskId` is done (§9). */
  taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.dialect.wakeups.taskDoneWake(taskId, timeoutMs, signal);
  }

  /** Subscribes to the backend's push signals; a no-op unsubscribe where there are none. */
  subscribe(listener: (signal: StoreSignal) => void): () => void {
    return this.dialect.wakeups.subscribe(listener);
  }
}

function zeroCounts(): Record<TaskStatus, number> {
  return Object.fromEntries(STATUSES.map((status) => [status, 0])) as Record<TaskStatus, number>;
}

function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === "1" || value === "t" || value === 1n;
}
