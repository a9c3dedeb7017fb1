import type { ClaimInput, Logger, OwnedInput, StoreCapabilities, Task, TaskStore, TransactionalTaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { checkOptions, fallbackLogger, keepAlive, requireHook } from "@cairnq/runtime";
import type { QueryRunner, WriteCombinerOptions } from "@cairnq/store-kysely";
import { checkCombineOption, KyselyStore } from "@cairnq/store-kysely";
import type { PostgresErrorHook, PostgresTarget, PostgresTimeouts } from "./postgres-connection.js";
import type { AnyTransaction } from "./postgres-executor.js";
import { PostgresStoreDialect } from "./postgres-store-dialect.js";
import { PostgresTransactionStore } from "./postgres-transaction-store.js";
import type { ListenConnector, ListenState } from "./postgres-wakeups.js";

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /**
   * The Postgres schema CairnQ's tables live in (§10). CairnQ's SQL never
   * names a schema: `search_path` decides.
   *
   * - With a connection string: must match `^[A-Za-z_][A-Za-z0-9_$]*$`; the
   *   store runs `create schema if not exists "<schema>"` and sets
   *   `search_path` to it on every pooled connection.
   * - With your `pg.Pool` or Kysely instance: only checked — the
   *   connection's `current_schema()` must be this schema, else
   *   `SchemaMismatch`. Set `search_path` yourself.
   * - Unset: nothing is touched; connecting fails with `SchemaMismatch` when
   *   CairnQ is installed in other schemas but not in `current_schema()`
   *   (it would create a second, invisible installation).
   * - Always: at most 63 bytes and no `pg_` prefix, else `InvalidArgument`.
   * @default undefined (use `search_path` as it is)
   */
  schema?: string;
  /**
   * Pool size when the store builds the pool from a connection string; an
   * integer ≥ 1. Rejected with a pool or Kysely instance (size those where
   * you create them).
   * @default 10
   */
  max?: number;
  /**
   * Where the dedicated LISTEN connection for push wakeups (§9) comes from:
   * a connection string, a function returning a connected `pg.Client`
   * (throw `ListenUnavailable` from it to poll for good), or `false` for no
   * LISTEN (wakeups are plain sleeps; `capabilities.pushWakeups` is false).
   * Anything else (`true`, `null`, a number, a non-postgres URL) is refused
   * with `InvalidArgument`.
   * Give it when the pool goes through a transaction-mode pooler (LISTEN
   * needs a session: a direct or session-mode connection string), or with a
   * Kysely instance, whose connection settings the store cannot see.
   *
   * On connect and after every reconnect the store proves the LISTEN hears:
   * it NOTIFYs itself through the pool and waits `timeouts.listenCheckTimeoutMs`.
   * A LISTEN that does not hear (e.g. through a transaction-mode pooler) is
   * given up: the store polls, `listenState` is `deaf`,
   * `capabilities.pushWakeups` turns false, and it is said once through
   * `onError` and `logger`.
   *
   * Opening it is bounded: the connect by `timeouts.connectTimeoutMs`, each
   * LISTEN statement by `timeouts.listenCheckTimeoutMs`; a connection that
   * stalls is destroyed, reported and retried with backoff while the store
   * polls. An attempt that fails is said once through `logger` (until it
   * listens again) besides `onError`. A function that resolves to anything
   * but a client is an `InvalidArgument`, once, and the store polls for good.
   * @default the connection string, or the pool's own client config; none for a Kysely instance
   */
  listen?: false | string | ListenConnector;
  /**
   * Receives errors the store survived without a caller to reject: a pooled
   * connection whose backend died while idle (`source: "pool"`), the LISTEN
   * connection failing or a push-signal subscriber throwing
   * (`source: "listen"`). For logging; the store recovers by itself.
   * @default ignores them
   */
  onError?: PostgresErrorHook;
  /**
   * Structural logger (`console`, pino, …) for the store's once-only
   * warnings: a LISTEN that does not hear (push wakeups given up, polling
   * instead), a LISTEN connection that cannot be opened, a pooled connection that reached a read-only server. Without
   * it and without `onError`, those warnings go to stderr; `null` silences
   * them.
   * @default stderr when `onError` is not given, else none
   */
  logger?: Logger | null;
  /**
   * Bounds on connecting, on every statement, on a transaction left idle on
   * the server, TCP keepalive, and the LISTEN liveness ping — so a server
   * restart or a connection cut without FIN/RST never hangs a call, never
   * hands a dead connection to the next call, and never leaves rows locked.
   * Only `listenPingIntervalMs` applies to your own pool or Kysely instance
   * (configure those where you create them); the others are rejected there.
   * See {@link PostgresTimeouts} for each default.
   * @default { connectTimeoutMs: 10000, queryTimeoutMs: 30000, idleInTransactionTimeoutMs: 60000, keepAliveInitialDelayMs: 10000, listenPingIntervalMs: 30000 }
   */
  timeouts?: Partial<PostgresTimeouts>;
  /**
   * Write combining: concurrent heartbeats, progress reports, settlements
   * (`succeed`, `complete`, `fail`) and unkeyed submits of this store are
   * sent as multi-row statements (`unnest` arrays, one prepared text per
   * operation), group-commit style: a write goes at the end of the current
   * event-loop turn (an unkeyed submit at once, as its own insert; a
   * settlement at the end of the current tick) when no
   * statement of its kind is waiting or in flight, otherwise with everything
   * that arrived while that statement ran. Every caller
   * still gets its own row or its own error (`LostLease` per task). Give
   * bounds (`maxRows`, `maxBytes`, `maxPendingRows`, `maxPendingBytes`) or
   * `false` for one statement per write. Keyed submits, claims, client
   * transitions and `withTransaction` views never combine.
   * @default { maxRows: 512, maxBytes: 1 MiB, maxPendingRows: 4 × maxRows, maxPendingBytes: 4 MiB }
   */
  combine?: false | WriteCombinerOptions;
  /**
   * Send CairnQ's own statements as named prepared statements, each parsed
   * and planned once per pooled connection (the application's queries on a
   * shared pool are untouched). Turn it off behind a pooler that cannot keep
   * prepared statements across transactions: PgBouncer in transaction mode
   * before 1.21 (or without `max_prepared_statements`), Supavisor in
   * transaction mode, RDS Proxy (which pins a session that prepares one).
   * Has no effect with a Kysely instance, whose pool the store cannot reach.
   * @default true
   */
  preparedStatements?: boolean;
}

/** Every key of {@link PostgresStoreOptions}, for the unknown-key check (the umbrella's factories list them too). */
export const POSTGRES_STORE_OPTION_KEYS = Object.freeze([
  "schema",
  "max",
  "listen",
  "onError",
  "timeouts",
  "combine",
  "preparedStatements",
  "logger",
] as const satisfies readonly (keyof PostgresStoreOptions)[]);

/**
 * The CairnQ `TaskStore` on Postgres: API and worker processes on many
 * hosts share one database, and the database clock is the only clock.
 *
 * Accepts a connection string (the store builds, owns and on `close()` ends
 * a `pg.Pool`), a `pg.Pool` you own, or a Kysely instance you own — the
 * store never closes what it did not create. Opens lazily: the first call
 * (or `connect()`) loads `pg`, runs the installation guard, applies the
 * protocol's migrations (each once, even when many processes start
 * together), checks the protocol version and starts LISTEN in the
 * background.
 *
 * Beyond the `TaskStore` contract: {@link PostgresStore.completeIn} settles a
 * task in the same transaction as your own writes, and
 * {@link PostgresStore.withTransaction} submits inside your transaction.
 *
 * @example
 * ```ts
 * import { PostgresStore } from "@cairnq/store-postgres";
 *
 * const store = new PostgresStore("postgres://app@localhost:5432/app", { schema: "cairnq" });
 * const task = await store.submit({ name: "email", payload: { to: "a@example.com" } });
 * const [claimed] = await store.claim({ queues: ["default"], workerId: "worker_1" });
 * await store.complete({ taskId: claimed!.id, workerId: "worker_1", result: { sent: true } });
 * await store.close();
 * ```
 */
export class PostgresStore extends KyselyStore implements TransactionalTaskStore<AnyTransaction> {
  declare readonly dialect: PostgresStoreDialect;

  /**
   * @param target - A connection string (`postgres://…`), a `pg.Pool` you own, or a Kysely instance you own (then `listen` enables push wakeups).
   * @param options - See {@link PostgresStoreOptions}.
   */
  constructor(target: PostgresTarget, input: PostgresStoreOptions = {}) {
    // `schmea: "jobs"` silently ignored would put the tables into whatever search_path says.
    const options = checkOptions(input, "new PostgresStore(target, options)", POSTGRES_STORE_OPTION_KEYS) as PostgresStoreOptions;
    if (options.combine !== undefined && options.combine !== false) checkCombineOption(options.combine);
    if (options.preparedStatements !== undefined && typeof options.preparedStatements !== "boolean") {
      throw new InvalidArgument("preparedStatements", `preparedStatements must be true or false, got ${JSON.stringify(options.preparedStatements)}`);
    }
    if (options.logger !== undefined && options.logger !== null && typeof options.logger !== "object") {
      throw new InvalidArgument("logger", "logger must be an object with debug/info/warn/error(message, fields) methods, such as console, or null to silence the store");
    }
    // A hook that is not a function would leave every LISTEN and connection failure reported nowhere.
    requireHook(options.onError, "onError", "(err, { source }) => void");
    const logger = fallbackLogger(options.logger, options.onError);
    const dialect = new PostgresStoreDialect(target, {
      schema: options.schema ?? null,
      max: options.max,
      listen: options.listen,
      onError: options.onError,
      timeouts: options.timeouts,
      ...(logger === undefined ? {} : { logger }),
      ...(options.combine === undefined ? {} : { combine: options.combine }),
      ...(options.preparedStatements === undefined ? {} : { preparedStatements: options.preparedStatements }),
    });
    super(dialect.connection.db, dialect, { destroyOnClose: dialect.connection.owned });
    // The core copies its capabilities once; push wakeups change with the LISTEN connection (a deaf or refused one is none).
    const wakeups = dialect.wakeups;
    const copied = this.capabilities;
    (this as { capabilities: StoreCapabilities }).capabilities = Object.freeze({
      ...copied,
      get pushWakeups(): boolean {
        return wakeups.pushing;
      },
    });
  }

  /**
   * Waits for in-flight calls, stops LISTEN, and ends the pool if the store
   * built it (never a pool or Kysely instance you passed in). Idempotent.
   */
  override async close(): Promise<void> {
    // Idle pooled connections and the LISTEN connection are unref'd so they never hold a process open; while
    // they say goodbye, this timer does, or a top-level `await store.close()` would end the process mid-close.
    const hold = keepAlive();
    // No LISTEN reconnect while close waits for the calls in flight, and no attempt in flight left to wait for after
    // them: on a dead path each would add up to connectTimeoutMs to close() (and to a worker's stop()).
    this.dialect.wakeups.windDown();
    try {
      await super.close();
    } finally {
      hold.release();
    }
  }

  /** The `schema` option, or `null` when `search_path` decides unchecked. */
  get schema(): string | null {
    return this.dialect.connection.schema;
  }

  /** Where the LISTEN connection stands (§9): `listening` once push wakeups work. */
  get listenState(): ListenState {
    return this.dialect.wakeups.state;
  }

  /**
   * The claim cycle (§5.10), registering `queues` as wakeable first so a
   * `queued` signal arriving before the next `claimWake` is not lost.
   */
  override claim(input: ClaimInput): Promise<Task[]> {
    const queues = (input as Partial<ClaimInput> | null | undefined)?.queues;
    if (Array.isArray(queues)) this.dialect.wakeups.register(queues);
    return super.claim(input);
  }

  /**
   * `complete_in` (§5.15): in one transaction on one connection, runs `fn`
   * with that transaction, then `complete` with its return value as the last
   * statement. When the task is no longer this worker's (or the attempt
   * differs), `LostLease` is thrown and `fn`'s writes roll back with it;
   * when `fn` throws, everything rolls back and the task stays running.
   * Workers expose it to handlers as `ctx.succeedIn(fn)`.
   *
   * `fn`'s return value is the task's result (JSON); encoding it fails with
   * `SerializationError`, which also rolls back.
   *
   * @example
   * ```ts
   * const { task } = await store.completeIn({ taskId, workerId, attempt }, async (trx) => {
   *   await trx.insertInto("invoices").values({ id: invoiceId, total }).execute();
   *   return { invoiceId };
   * });
   * ```
   */
  completeIn<R>(input: OwnedInput, fn: (trx: AnyTransaction) => Promise<R>): Promise<{ task: Task; result: R }> {
    // The default executor's transaction body receives Kysely's `Transaction`.
    return this.completeInTransaction(input, fn as (tx: QueryRunner) => Promise<R>);
  }

  /**
   * A `TaskStore` view whose statements run on your open Kysely
   * transaction: a task submitted through it exists if and only if your
   * transaction commits. A keyed submit takes the key's advisory lock inside
   * your transaction and holds it until you commit or roll back, so a
   * concurrent submit of the same key waits for your outcome.
   *
   * `trx` must be on the same database, with `search_path` resolving to
   * this store's installation (with a connection string, use `store.db`).
   * The store connects (migrations, guards) on its own connections first.
   * The view shares the store's backpressure gate as installed when the view
   * was made; with a gate, a submit may wait for headroom inside your
   * transaction.
   *
   * @example
   * ```ts
   * await store.db.transaction().execute(async (trx) => {
   *   await trx.insertInto("orders").values(order).execute();
   *   await store.withTransaction(trx).submit({ name: "ship-order", payload: { orderId: order.id }, key: `ship:${order.id}` });
   * });
   * ```
   */
  withTransaction(trx: AnyTransaction): TaskStore {
    return new PostgresTransactionStore(this, this.dialect, trx);
  }
}
