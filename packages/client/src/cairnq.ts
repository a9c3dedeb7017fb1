/**
 * `CairnQ`, the client: what an API process uses to submit tasks and read,
 * wait for, cancel, retry and purge them. It talks to the database only
 * through the `TaskStore` contract, so the same code runs on any store.
 */
import type { PayloadArgs, PayloadFor, ResultFor, QueueStats, RetryOptions, SubmitInput, SubmitOptions, SubmitOutcome, Task, TaskDef, TaskRef, TaskStore, TransactionalTaskStore, Logger } from "@cairnq/protocol";
import { CairnQError, TaskCanceled, TaskFailed, InvalidArgument, UnsupportedBackend } from "@cairnq/protocol";
import { logSafely, resolveGateTiming, resolveWaitOptions, requireGroupSupport, submitInputOf, typedSubmitRow } from "@cairnq/protocol/sdk";
import type { SendOutcome, StepRecord } from "@cairnq/protocol";
import type { RuntimeClock } from "@cairnq/runtime";
import { checkOptions, optionalClock, Telemetry } from "@cairnq/runtime";
import { readSteps, sendMessage } from "./steps.js";
import { BackpressureGate } from "./backpressure-gate.js";
import { bulkOptions, runBatches } from "./bulk.js";
import type { BulkOptions, CairnQOptions, CallOptions, PurgeOptions, RetryManyOptions, TaskFor, TaskListInput, TaskWaitOptions } from "./client-options.js";
import { BULK_KEYS, CALL_KEYS, CLIENT_OPTION_KEYS, PURGE_KEYS, RETRY_KEYS, RETRY_MANY_KEYS, SUBMIT_KEYS, WAIT_KEYS } from "./client-options.js";
import type { ExplainOptions, Explanation } from "./explain.js";
import { explain } from "./explain.js";
import type { RetentionHook } from "./retention-hook.js";
import { retentionHook } from "./retention-hook.js";
import { submitOutcomeTraced, submitTraced } from "./submit-telemetry.js";
import { optionalTaskDef, resolveTask, typedRow, waitTyped } from "./typed-task.js";
import { cutShortByClose, waitForTask } from "./wait.js";
import type { StopWatching, WatchOptions, WatchSignal } from "./watch.js";
import { watchStore } from "./watch.js";

const STORE_METHODS = ["connect", "close", "submit", "get", "getByKey", "getStatus", "getStatusByKey", "taskDoneWake", "subscribe"] as const;

/**
 * The CairnQ client: submits tasks into the store and reads, waits for,
 * cancels, retries and purges them. It never runs handlers (that is
 * `Worker`), holds no connection of its own and keeps no state beyond the
 * backpressure grant, so any number of clients may share a database.
 *
 * Every method connects lazily; `connect()` only makes the first call's cost
 * (migrations, version guard) explicit. A `retention` hook starts with the
 * client and `close()` stops it, then closes the store.
 *
 * @example
 * ```ts
 * import { CairnQ } from "@cairnq/client";
 * import { defineTask } from "@cairnq/protocol";
 * import { SQLiteStore } from "@cairnq/store-sqlite";
 *
 * const summarize = defineTask<{ url: string }, { summary: string }>("summarize", { queue: "llm" });
 * const client = new CairnQ(new SQLiteStore("cairnq.db"), { maxQueueDepth: 10_000 });
 *
 * const task = await client.submit(summarize, { url: "https://example.com" }, { key: "example.com" });
 * const done = await client.wait(task.id, { timeoutMs: 60_000 }); // the terminal row, any status
 * const { summary } = await client.call(summarize, { url: "https://example.org" }); // result, or throws
 * await client.close();
 * ```
 */
export class CairnQ {
  /** The store every operation goes through. */
  readonly store: TaskStore;

  readonly #gate: BackpressureGate | null;
  readonly #retention: RetentionHook | null;
  readonly #logger: Logger | undefined;
  readonly #clock: RuntimeClock;
  /** Producer spans and the sent counter, or `null` with `tracing` and `metrics` off (nothing loaded then). */
  #telemetry: Telemetry | null;
  #closing: Promise<void> | null = null;
  #inTransaction = false;

  /**
   * @param store - Any `TaskStore` (`SQLiteStore`, `PostgresStore`, a third-party adapter).
   * @param options - See {@link CairnQOptions}.
   * @throws InvalidArgument when `store` is not a store or an option is invalid; nothing is installed or started then.
   * @example
   * ```ts
   * const client = new CairnQ(store, { maxQueueDepth: { emails: 5000 }, maxQueueWaitMs: 30_000 });
   * ```
   */
  constructor(store: TaskStore, options: CairnQOptions = {}) {
    const missing =
      typeof store === "object" && store !== null ? STORE_METHODS.filter((m) => typeof (store as unknown as Record<string, unknown>)[m] !== "function") : STORE_METHODS;
    if (missing.length > 0) {
      throw new InvalidArgument(
        "store",
        `new CairnQ(store) needs a TaskStore (e.g. new SQLiteStore("cairnq.db")); the value given lacks ${missing.join(", ")}`,
      );
    }
    const opts = checkOptions(options, "new CairnQ(store, options)", CLIENT_OPTION_KEYS) as CairnQOptions;
    this.store = store;
    // `null` is silence, as it is for the worker, the stores and the dashboard, so one options bag (`CairnQ.postgres(dsn, { logger: null })`) silences them all.
    this.#logger = opts.logger ?? undefined;
    if (opts.logger !== undefined && opts.logger !== null && typeof opts.logger !== "object") {
      throw new InvalidArgument("logger", "logger must be an object with debug/info/warn/error(message, fields) methods, such as console, or null to silence the client");
    }
    const clock = optionalClock(opts.clock, "clock");
    this.#clock = clock;
    this.#telemetry = Telemetry.of(opts, { requiredBy: "@cairnq/client", from: import.meta.url, what: "new CairnQ(store, options)" });
    this.#retention = retentionHook(store, opts.retention);

    const timing = resolveGateTiming(opts);
    if (opts.maxQueueDepth === undefined) {
      this.#gate = null;
    } else {
      const gate = new BackpressureGate(
        { maxQueueDepth: opts.maxQueueDepth, ...timing, logger: this.#logger, owner: "client" },
        { sleep: (ms, signal) => clock.sleep(ms, { signal }), now: () => clock.monotonicMs() },
      );
      this.#gate = gate.gatesAnything ? gate : null;
    }

    // Retention starts here rather than on connect: a handle that is constructed owns the sweeper
    // for its whole life, so rows age out even in a process that never calls connect() (every
    // method connects lazily) or has not used the client yet, and close() is the one place it
    // stops. Started after every check and before the gate is installed, so a constructor that
    // throws leaves nothing running and nothing installed.
    this.#retention?.start();

    if (this.#gate !== null) {
      if (store.queueDepthGate !== null && store.queueDepthGate !== undefined) {
        logSafely(this.#logger, "warn", "replacing the queue-depth gate already installed on this store; the last client's maxQueueDepth applies", {});
      }
      store.queueDepthGate = this.#gate;
    }
  }

  /**
   * A client bound to your open database transaction `trx` (a Kysely
   * transaction on the same database): its `submit`, `submitOutcome`,
   * `cancel`, `retry` (and by-key, bulk) writes, and its reads, run inside
   * `trx`, so a task exists if and only if your transaction commits — the
   * transactional outbox without an outbox table. Needs a store with
   * `capabilities.transactionalComplete` (SQLite, Postgres, MySQL).
   *
   * On Postgres `trx` is the `trx` of `db.transaction().execute(async (trx) => …)`
   * on a Kysely instance over the same database and schema. On SQLite use
   * `store.transaction(yourDb, async (trx) => …)`, which begins with
   * `BEGIN IMMEDIATE` without stalling the store's own writes (see the
   * store-sqlite README).
   *
   * The bound client cannot `wait`, `call` or `watch`: nobody else sees the
   * task until you commit. It shares this client's backpressure gate;
   * `close()` on it closes only the binding.
   *
   * @throws UnsupportedBackend when the store has no transaction support.
   * @throws CairnQError when this client is already bound to a transaction (use it directly).
   * @example
   * ```ts
   * await pgDb.transaction().execute(async (trx) => {
   *   const order = await trx.insertInto("orders").values(input).returningAll().executeTakeFirstOrThrow();
   *   await client.withTransaction(trx).submit("ship-order", { orderId: order.id }, { key: `ship:${order.id}` });
   * });
   * ```
   */
  withTransaction(trx: unknown): CairnQ {
    if (this.#inTransaction) {
      // Checked first: a bound client's store is a transaction view, whose capabilities say it binds nothing more.
      throw new CairnQError(
        "withTransaction cannot run on a client already bound to a transaction (this client came from withTransaction): " +
          "use it directly, its writes already run in that transaction; to bind another transaction, call withTransaction on the unbound client",
      );
    }
    const store = this.store as TaskStore & Partial<TransactionalTaskStore>;
    if (!this.store.capabilities.transactionalComplete || typeof store.withTransaction !== "function") {
      const name = (this.store as { constructor?: { name?: unknown } }).constructor?.name;
      throw new UnsupportedBackend("withTransaction", typeof name === "string" && name !== "" && name !== "Object" ? name : "this", {
        message: `withTransaction needs a store that writes in your transaction (capabilities.transactionalComplete: SQLiteStore, PostgresStore, MySQLStore); this ${String(name)} has none`,
      });
    }
    const bound = new CairnQ(store.withTransaction(trx), { logger: this.#logger, clock: this.#clock });
    bound.#inTransaction = true;
    bound.#telemetry = this.#telemetry;
    return bound;
  }

  #refuseInTransaction(method: string): void {
    if (this.#inTransaction) {
      throw new CairnQError(
        `${method} cannot run on a client bound to a transaction: nobody else sees its tasks until you commit, so nothing could finish; ` +
          `${method} with the unbound client after the commit`,
      );
    }
  }

  /**
   * Opens the store (migrations, version guard). Optional — every method connects lazily — but it surfaces a bad
   * database at startup rather than on the first request. Idempotent.
   *
   * @example
   * ```ts
   * await client.connect(); // fail fast at boot
   * ```
   */
  async connect(): Promise<void> {
    await this.store.connect();
  }

  /**
   * Stops the client: wakes submits waiting on the backpressure gate (they
   * reject, nothing enqueued) and uninstalls the gate, awaits the retention
   * hook's `stop()` (a sweep in flight finishes first), then closes the
   * store. Idempotent; concurrent calls share one close.
   *
   * A pending `call`, `wait` or `waitByKey` ends, as soon as the store
   * closes, with `WaitInterrupted` (`taskId`, `key`): the close cut its wait
   * short, and its task, already submitted, stays in the database for the
   * workers; wait for it again on an open client.
   *
   * @example
   * ```ts
   * process.on("SIGTERM", () => void client.close());
   * ```
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Whether `close()` has begun: a wait failing from then on was cut short by it. */
  readonly #isClosing = (): boolean => this.#closing !== null;

  async #close(): Promise<void> {
    if (this.#gate !== null) {
      this.#gate.close();
      if (this.store.queueDepthGate === this.#gate) this.store.queueDepthGate = null;
    }
    try {
      if (this.#retention !== null) await this.#retention.stop();
    } finally {
      await this.store.close();
    }
  }

  /**
   * Submits a task (T1) and returns its row, `queued` — or, with a `key`, the
   * row the conflict strategy chose (§5.1). Passes the backpressure gate
   * first when `maxQueueDepth` applies to the queue.
   *
   * A {@link TaskDef} supplies the name, types the payload and result, and
   * gives defaults for `queue`, `maxAttempts` and `priority`.
   *
   * @throws InvalidArgument / SerializationError for bad input (nothing written).
   * @throws AlreadyExists with `conflict: "reject"` when the key is taken; and, given a TaskDef, as
   *   `KeyHeldByOtherTask` when the key's task (which `reuse`/`reuse-succeeded` would return) is of
   *   another name: nothing is written, and that task rides on the error. By name, that row is returned.
   * @throws QueueFull when the queue stayed full for `maxQueueWaitMs`.
   * @example
   * ```ts
   * const task = await client.submit(sendEmail, { to: "a@example.com" }, { key: `welcome:${userId}` });
   * await client.submit("report", { month: "2024-05" }, { queue: "slow", runAtDelayMs: 60_000 });
   * ```
   */
  // One signature, not a TaskDef overload and a name overload: with overloads, a wrong payload for a TaskDef is
  // reported against the last overload ("not assignable to parameter of type 'string'") by TypeScript 7.
  // NoInfer in the return type: P and R come from a TaskDef or explicit type arguments, never from the type the
  // caller's variable expects (`const a: string = await client.call(resize, …)` would otherwise compile).
  submit<P = never, R = never, D extends TaskDef | string = string>(task: D, ...args: PayloadArgs<PayloadFor<D, NoInfer<P>>, SubmitOptions>): Promise<Task<PayloadFor<D, NoInfer<P>>, ResultFor<D, NoInfer<R>>>>;
  async submit(task: string | TaskDef, payload?: unknown, options?: SubmitOptions): Promise<Task> {
    const input = this.#submitInput(task, payload, checkOptions(options, "submit", SUBMIT_KEYS));
    return typedSubmitRow(await submitTraced(this.#telemetry, this.store, input), task, input, "submit");
  }

  /**
   * {@link CairnQ.submit}, also saying whether this call created the task
   * (`created: true`) or a keyed submit returned an existing one
   * (`created: false`) — decided in the same keyed transaction, so an API
   * can answer 201 or 200 truthfully under concurrent retries.
   *
   * @example
   * ```ts
   * const { task, created } = await client.submitOutcome("charge", { orderId }, { key: `charge:${orderId}` });
   * res.status(created ? 201 : 200).json({ id: task.id, status: task.status });
   * ```
   */
  submitOutcome<P = never, R = never, D extends TaskDef | string = string>(
    task: D,
    ...args: PayloadArgs<PayloadFor<D, NoInfer<P>>, SubmitOptions>
  ): Promise<SubmitOutcome<PayloadFor<D, NoInfer<P>>, ResultFor<D, NoInfer<R>>>>;
  async submitOutcome(task: string | TaskDef, payload?: unknown, options?: SubmitOptions): Promise<SubmitOutcome> {
    const input = this.#submitInput(task, payload, checkOptions(options, "submitOutcome", SUBMIT_KEYS));
    const outcome = await submitOutcomeTraced(this.#telemetry, this.store, input);
    typedSubmitRow(outcome.task, task, input, "submitOutcome");
    return outcome;
  }

  #submitInput(task: unknown, payload: unknown, options: SubmitOptions): SubmitInput {
    const input = submitInputOf(resolveTask(task), payload, options);
    requireGroupSupport(this.store, input);
    return input;
  }

  /**
   * The full row of task `id`, or `null`. Given the task's {@link TaskDef},
   * the row is typed from it (and a task of another name is refused).
   *
   * @throws InvalidArgument when `task` is not a TaskDef (a name string types nothing), or the row is a task of another name.
   * @example
   * ```ts
   * const row = await client.get(id, summarize); // Task<{ url: string }, { summary: string }> | null
   * ```
   */
  async get<D extends TaskDef = TaskDef>(id: string, task?: D): Promise<TaskFor<D> | null> {
    const def = optionalTaskDef(task, "get(id, task)");
    return typedRow(await this.store.get(id), def, "get") as TaskFor<D> | null;
  }

  /** The full row the key currently points at, or `null`; typed from `task` as {@link CairnQ.get} is. */
  async getByKey<D extends TaskDef = TaskDef>(key: string, task?: D): Promise<TaskFor<D> | null> {
    const def = optionalTaskDef(task, "getByKey(key, task)");
    return typedRow(await this.store.getByKey(key), def, "getByKey") as TaskFor<D> | null;
  }

  /** `{ id, status }` of task `id` (a cheap probe), or `null`. */
  getStatus(id: string): Promise<TaskRef | null> {
    return this.store.getStatus(id);
  }

  /** `{ id, status }` of the task the key points at now (after a `replace`, the new one), or `null`. */
  getStatusByKey(key: string): Promise<TaskRef | null> {
    return this.store.getStatusByKey(key);
  }

  /**
   * Says why task `id` is where it is: its `state` (`delayed`,
   * `backing-off`, `waiting`, `group-limit` (due, but its group is at
   * `groupConcurrency` or its `groupRateLimit` window is full), `rate-limit`
   * (due, but its name's `rateLimit` window is full), `unclaimed`, `running`,
   * `lease-expired`, `cancel-requested`, `succeeded`, `failed`, `canceled`,
   * and `parked` for a task parked on a durable sleep, wait or join: what it
   * waits for) and one
   * paragraph for people, with the row, its durable-steps journal (`steps`;
   * `null` on a store without them) and, for a queued task, the evidence read
   * about its queue (is anything claiming it?). `null` when there is no such task.
   * The `cairnq explain` command and the dashboard's task page show the same.
   *
   * Reads the row, and for a queued task a few bounded rows of its queue
   * (and, when it is due, its group and its rate windows, on a store that
   * has those reads).
   *
   * @example
   * ```ts
   * const why = await client.explain(id);
   * if (why?.state === "unclaimed") console.warn(why.summary); // "… Is a worker running with a handler for 'email' on queue 'mail' …?"
   * ```
   */
  explain(id: string, options?: ExplainOptions): Promise<Explanation | null> {
    return explain(this.store, id, options, this.#clock);
  }

  /**
   * Sends a message to task `taskId` under `name`: a `ctx.waitFor(name)` of
   * its handler resolves with `payload` (JSON). A task parked waiting for
   * that name is due at once and its workers are woken (NOTIFY on Postgres,
   * the file's commit on SQLite); a message sent before the wait is kept
   * until a wait of that name takes it (one message per wait, oldest first).
   * Works from any process, and inside `withTransaction` (the message
   * commits with your transaction). Resolves with `{ taskId, name, woke }`:
   * `woke` says whether the task was parked waiting for it.
   *
   * @throws InvalidArgument when no task has this id.
   * @throws UnsupportedBackend when the store has no durable steps.
   * @example
   * ```ts
   * await client.send(orderTaskId, "approval", { approvedBy: "ana" });
   * ```
   */
  send(taskId: string, name: string, payload?: unknown): Promise<SendOutcome> {
    return sendMessage(this.store, taskId, name, payload);
  }

  /**
   * The journal of task `taskId`'s durable steps, in the order they were
   * first recorded: `[{ name, kind, status, result, error, attempt, atMs,
   * wakeAtMs, waitingFor, seq }]` — `[]` for a task without steps.
   *
   * @example
   * ```ts
   * for (const s of await client.steps(id)) console.log(s.name, s.status, s.waitingFor);
   * ```
   */
  steps(taskId: string): Promise<StepRecord[]> {
    return readSteps(this.store, taskId);
  }

  /**
   * Rows matching every given filter, newest first (`created_at_ms DESC`).
   *
   * That default order is not indexed: each call sorts every matching row
   * (0.7–2.1 s on a table of a million tasks; `offset` adds the rows it
   * skips). On a large table pass `order: "id"` and page with `beforeId`
   * (or use `listPage`), which reads through the primary key at the same
   * cost on any page (1–24 ms there).
   *
   * @example
   * ```ts
   * const failed = await client.list({ queue: "emails", status: "failed", limit: 20 });
   * ```
   */
  async list<D extends TaskDef = TaskDef>(input?: TaskListInput<D>): Promise<TaskFor<D>[]> {
    if (input === undefined || input === null || typeof input !== "object" || !("task" in input)) return (await this.store.list(input)) as TaskFor<D>[];
    const { task, ...filter } = input;
    if (task === undefined) return (await this.store.list(filter)) as TaskFor<D>[];
    const { name } = resolveTask(task);
    if (filter.name !== undefined && filter.name !== name) {
      throw new InvalidArgument("task", `list was given name '${String(filter.name)}' and a TaskDef of '${name}'; give one of them`);
    }
    return (await this.store.list({ ...filter, name })) as TaskFor<D>[];
  }

  /** Row counts by queue and status, zero-filled; `queue` restricts to one queue (present even if empty). */
  stats(queue?: string): Promise<QueueStats> {
    return this.store.stats(queue);
  }

  /** Headroom of `queue` under `maxDepth`: `maxDepth − queued` (floor 0), reading at most `maxDepth` rows. */
  queueDepth(queue: string, maxDepth: number): Promise<number> {
    return this.store.queueDepth(queue, maxDepth);
  }

  /**
   * Cancels task `id`: a queued task ends `canceled` now; a running one is
   * flagged and ends `canceled` when its handler settles (cancel wins).
   *
   * @returns the updated row, or `null` when the task is terminal or missing.
   */
  cancel(id: string): Promise<Task | null> {
    return this.store.cancel(id);
  }

  /** {@link CairnQ.cancel} for the task the key points at; `null` for an unknown key. */
  cancelByKey(key: string): Promise<Task | null> {
    return this.store.cancelByKey(key);
  }

  /**
   * Requeues a `failed` or `canceled` task, clearing its error. Without
   * `resetAttempt` an exhausted task gets exactly one more attempt.
   *
   * @returns the requeued row, or `null` unless the task was failed or canceled.
   * @throws InvalidArgument for an unknown key (`{ reset: true }` would requeue without resetting the attempts).
   */
  async retry(id: string, options?: RetryOptions): Promise<Task | null> {
    checkOptions(options, "retry", RETRY_KEYS);
    return this.store.retry(id, options);
  }

  /** {@link CairnQ.retry} for the task the key points at. */
  async retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    checkOptions(options, "retryByKey", RETRY_KEYS);
    return this.store.retryByKey(key, options);
  }

  /**
   * Cancels every queued or running task matching `filter` (`list`'s filters,
   * AND-ed; `{}` = every live task): a queued task ends `canceled` now, a
   * running one is flagged and ends `canceled` when its handler settles —
   * the same transition as {@link CairnQ.cancel}, decided per row on its
   * current values, so a task that finishes meanwhile is left alone.
   *
   * Runs in batches of `batchSize` rows (one statement each, in id order), so
   * no transaction grows with the backlog. Tasks submitted while it runs may
   * or may not be included.
   *
   * @returns how many tasks were canceled or flagged.
   * @throws InvalidArgument for an unknown key (a misspelt filter would widen the operation), or a `status`
   *   other than `queued`/`running`.
   * @example
   * ```ts
   * const n = await client.cancelMany({ queue: "emails", name: "newsletter" });
   * ```
   */
  async cancelMany(filter: BulkOptions = {}): Promise<number> {
    const { batchSize, filter: rest } = bulkOptions(filter, "cancelMany", BULK_KEYS);
    return runBatches((afterId) => this.store.cancelBatch({ ...rest, limit: batchSize, afterId }), batchSize);
  }

  /**
   * Requeues every failed or canceled task matching `filter` (`list`'s
   * filters; `{}` = every failed and canceled task), clearing each error —
   * the same transition as {@link CairnQ.retry}, with its `resetAttempt`.
   * Batched as {@link CairnQ.cancelMany}.
   *
   * @returns how many tasks were requeued.
   * @throws InvalidArgument for an unknown key or a `status` other than `failed`/`canceled`.
   * @example
   * ```ts
   * const n = await client.retryMany({ status: "failed", queue: "emails", resetAttempt: true });
   * ```
   */
  async retryMany(filter: RetryManyOptions = {}): Promise<number> {
    const { batchSize, filter: rest } = bulkOptions(filter, "retryMany", RETRY_MANY_KEYS);
    return runBatches((afterId) => this.store.retryBatch({ ...rest, limit: batchSize, afterId }), batchSize);
  }

  /**
   * Deletes up to `limit` (default 1000) terminal tasks completed more than
   * `olderThanMs` ago, oldest first, freeing their keys. Loop until fewer than
   * `limit` ids come back to delete everything eligible. A finished child
   * whose parent is still queued or running (parked on `ctx.join`) is kept
   * until the parent has finished, so the join does not lose its result.
   *
   * @returns the deleted ids.
   * @throws InvalidArgument without `olderThanMs`, or for an unknown key (a misspelt filter, `queues` or `stauts`,
   *   would otherwise be dropped and every terminal task deleted).
   * @example
   * ```ts
   * const ids = await client.purge({ olderThanMs: 7 * 24 * 3600_000, status: "succeeded" });
   * ```
   */
  async purge(options: PurgeOptions): Promise<string[]> {
    const o = checkOptions(options, "purge", PURGE_KEYS);
    if (o.olderThanMs === undefined) {
      throw new InvalidArgument(
        "olderThanMs",
        "purge needs olderThanMs, e.g. purge({ olderThanMs: 86_400_000 }); pass olderThanMs: 0 to delete every terminal task",
      );
    }
    return this.store.purge(options);
  }

  /**
   * Waits until task `id` is terminal and returns its row — whatever the
   * status: check `task.status` (or use {@link CairnQ.call} to get the result
   * or an error). Polls the status (§7) at 100, 150, 225, 337, 500 ms…, waking
   * early when the store pushes a done signal.
   *
   * @throws TaskTimeout after `timeoutMs` (default 30000); its `task` and
   *   message say where the task was stuck. The task is unaffected.
   * @example
   * ```ts
   * const task = await client.wait(id, { timeoutMs: 10_000 });
   * if (task.status === "succeeded") console.log(task.result);
   * ```
   */
  async wait<D extends TaskDef = TaskDef>(id: string, options: TaskWaitOptions<D> = {}): Promise<TaskFor<D>> {
    this.#refuseInTransaction("wait");
    const { task, ...wait } = checkOptions(options, "wait", WAIT_KEYS) as TaskWaitOptions<D>;
    const def = optionalTaskDef(task, "wait(id, { task })");
    const resolved = resolveWaitOptions(wait);
    const waiting = waitTyped(this.store, { id }, resolved, this.#clock, def, "wait");
    return (await cutShortByClose(waiting, this.#isClosing, { method: "wait", taskId: id, key: null, signal: resolved.signal })) as TaskFor<D>;
  }

  /**
   * {@link CairnQ.wait} by business key. The key is re-resolved on every
   * poll, so the wait follows a `replace` to the new task, and it waits for a
   * key that has no task yet.
   *
   * @throws TaskTimeout (`key` set; `taskId` the last task seen, else the key).
   */
  async waitByKey<D extends TaskDef = TaskDef>(key: string, options: TaskWaitOptions<D> = {}): Promise<TaskFor<D>> {
    this.#refuseInTransaction("waitByKey");
    const { task, ...wait } = checkOptions(options, "waitByKey", WAIT_KEYS) as TaskWaitOptions<D>;
    const def = optionalTaskDef(task, "waitByKey(key, { task })");
    const resolved = resolveWaitOptions(wait);
    const waiting = waitTyped(this.store, { key }, resolved, this.#clock, def, "waitByKey");
    return (await cutShortByClose(waiting, this.#isClosing, { method: "waitByKey", taskId: null, key, signal: resolved.signal })) as TaskFor<D>;
  }

  /**
   * Submits a task and waits for its outcome, like a function call: resolves
   * with the result (`null` when the handler returned nothing) and rejects
   * on any other outcome. Typed by a {@link TaskDef}.
   *
   * @throws TaskFailed with the stored envelope (`code`, `message`, `retryable`, `details`) when it ended failed.
   * @throws TaskCanceled when it ended canceled.
   * @throws TaskTimeout after `waitTimeoutMs` (default 30000); the task keeps running.
   * @throws the `signal`'s reason: at once, submitting nothing, when it is already aborted; when it fires
   *   later, the task keeps running and the rejection carries no id — to keep the id, `submit` then
   *   `wait(task.id, { signal })`, or give a `key` and `getByKey` it.
   * @throws whatever {@link CairnQ.submit} throws, such as `KeyHeldByOtherTask` (nothing is awaited then).
   * @example
   * ```ts
   * try {
   *   const { summary } = await client.call(summarize, { url }, { waitTimeoutMs: 60_000 });
   * } catch (err) {
   *   if (err instanceof TaskFailed && err.code === "bad_input") return reply(400, err.message);
   *   throw err;
   * }
   * ```
   */
  // One signature for the reason given at submit.
  call<R = never, P = never, D extends TaskDef | string = string>(task: D, ...args: PayloadArgs<PayloadFor<D, NoInfer<P>>, CallOptions>): Promise<ResultFor<D, NoInfer<R>>>;
  async call(task: string | TaskDef, payload?: unknown, options?: CallOptions): Promise<unknown> {
    this.#refuseInTransaction("call");
    const opts = checkOptions(options, "call", CALL_KEYS) as CallOptions;
    const wait = resolveWaitOptions(
      { timeoutMs: opts.waitTimeoutMs, pollMs: opts.pollMs, maxPollMs: opts.maxPollMs, signal: opts.signal },
      "waitTimeoutMs",
    );
    const input = this.#submitInput(task, payload, opts);
    // An aborted signal submits nothing, as fetch sends nothing: the caller has already given up, and a task
    // submitted now would run unheard of. A signal that fires once the submit is under way ends only the wait.
    wait.signal?.throwIfAborted();
    const store = this.store;
    // With push signals the wait needs no status probe right after the submit: the submit's own row is
    // that status, as fresh as a probe would read it, so the wait goes straight to sleeping on the task's
    // done signal: one round trip fewer, which ran beside the worker's claim and competed with it for the
    // 2 cores (CPU per call of bench/'s latency pair, 4 alternating 1,000-call runs: the client process
    // 1,066 → 935 µs median, its pool backend 380 → 330 µs). The wait hears done signals only once it
    // starts, so the ones heard while the submit was in flight are kept (nothing runs between this
    // subscription's end and the wait's own): a task done that quickly gets the probe, as before.
    const push = store.capabilities.pushWakeups && typeof store.subscribe === "function";
    // A store whose done waits read the task themselves (MySQL's checks; SQLite's reads after the commits it sees) loses
    // nothing either: the wait's first sleep looks at the task within about a millisecond, so the status read right after
    // the submit is skipped too, and the row it reads once the task is terminal is what the wait returns.
    const reads = !push && store.capabilities.taskDoneWakeReads === true;
    const heard = new Set<string>();
    const stopHearing = push
      ? store.subscribe(
          (signal) => {
            if (signal.reason === "done") heard.add(signal.taskId);
          },
          ["done"],
        )
      : null;
    let submitted: Task;
    try {
      submitted = typedSubmitRow(await submitTraced(this.#telemetry, store, input), task, input, "call");
    } finally {
      stopHearing?.();
    }
    const target =
      (push && !heard.has(submitted.id)) || reads ? { id: submitted.id, known: { id: submitted.id, status: submitted.status } } : { id: submitted.id };
    const subject = { method: "call", taskId: submitted.id, key: input.key ?? null, signal: wait.signal } as const;
    const done = await cutShortByClose(waitForTask(store, target, wait, this.#clock), this.#isClosing, subject);
    switch (done.status) {
      case "succeeded":
        return done.result;
      case "failed":
        throw new TaskFailed(done.error, { taskId: done.id });
      case "canceled":
        throw new TaskCanceled(done.id);
      case "queued":
      case "running":
        // waitForTask returns terminal rows only.
        throw new Error(`unreachable: wait returned a ${done.status} task`);
    }
  }

  /**
   * Calls `onSignal` whenever something may have changed: `{ reason: "queued", queue }`
   * and `{ reason: "done", taskId }` from the store's push signals (Postgres;
   * `queued` filtered by `queues`), and `{ reason: "poll" }` every `pollMs`
   * (default 2000; the timer never holds the process open). A signal means
   * "re-read", never "this changed". Errors thrown by `onSignal` go to
   * `logger.error`.
   *
   * @returns a function that stops watching (idempotent).
   * @example
   * ```ts
   * const stop = client.watch({ queues: ["emails"] }, () => void refreshDashboard());
   * // later
   * stop();
   * ```
   */
  watch(options: WatchOptions, onSignal: (signal: WatchSignal) => void | Promise<void>): StopWatching {
    this.#refuseInTransaction("watch");
    return watchStore(this.store, options, onSignal, this.#logger);
  }
}
