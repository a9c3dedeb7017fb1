import type { Kysely } from "kysely";
import { CompiledQuery } from "kysely";
import type { OwnedInput, Task, TaskStore, TransactionalTaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { describe, requireInt } from "@cairnq/protocol/adapter";
import type { AnyKysely, QueryRunner } from "@cairnq/store-kysely";
import { KyselyStore } from "@cairnq/store-kysely";
import { checkOptions, requireHook } from "@cairnq/runtime";
import { retryBusy } from "./busy.js";
import type { AppTransactionState } from "./sqlite-app-transaction.js";
import { boundTransaction } from "./sqlite-app-transaction.js";
import type { SQLiteDriver, SQLiteDriverName } from "./drivers/sqlite-driver.js";
import { SQLITE_DRIVER_NAMES } from "./drivers/sqlite-driver.js";
import { SQLiteDialect } from "./sqlite-dialect.js";
import { SQLiteTransactionStore } from "./sqlite-transaction-store.js";

/** Options of {@link SQLiteStore}. */
export interface SQLiteStoreOptions {
  /**
   * How long a statement keeps retrying while another connection holds the
   * database lock before it fails with `DatabaseBusy` (§13); also SQLite's
   * `busy_timeout` while connecting. An integer ≥ 0.
   * @default 5000
   */
  busyTimeoutMs?: number;
  /**
   * The process clock every time is derived from (§2.1), in epoch
   * milliseconds (each reading floored to whole milliseconds). For tests that move time instead of sleeping.
   * @default Date.now
   */
  clock?: () => number;
  /**
   * The SQLite driver: `"better-sqlite3"` (the native addon, fastest; an
   * optional peer dependency you install), `"node:sqlite"` (built into Node
   * 22.16 and later: nothing to compile) or `"bun:sqlite"` (built into Bun).
   * Every driver behaves the same and shares the file with the others. A
   * chosen driver that cannot load here fails the first open with a message
   * saying why. A {@link SQLiteDriver} object brings a binding of your own
   * (e.g. `betterSqlite3Driver(require("/opt/other/better-sqlite3"))`).
   * @default the first that loads of "better-sqlite3", "node:sqlite", "bun:sqlite" (under Bun: "bun:sqlite")
   */
  driver?: SQLiteDriverName | SQLiteDriver;
}

/** Every key of {@link SQLiteStoreOptions}, for the unknown-key check (the umbrella's factories list them too). */
export const SQLITE_STORE_OPTION_KEYS = Object.freeze(["busyTimeoutMs", "clock", "driver"] as const satisfies readonly (keyof SQLiteStoreOptions)[]);

/**
 * The `clock` option as the store reads it: refused unless a function (`clock: 5` failed only at `connect()`, with a
 * `TypeError` a worker retried forever), and each reading floored to whole milliseconds, as every `*_ms` column holds
 * (§2.1): `performance.timeOrigin + performance.now()` wrote fractions into the rows. A reading that is not a finite
 * number is an `InvalidArgument` of the statement that read it.
 */
function storeClock(clock: unknown): (() => number) | undefined {
  requireHook(clock, "clock", "returning epoch milliseconds (() => number, such as Date.now)");
  if (clock === undefined) return undefined;
  const read = clock as () => unknown;
  return () => {
    const value = read();
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new InvalidArgument("clock", `clock() must return a finite number of epoch milliseconds, got ${describe(value)}`);
    }
    return Math.floor(value);
  };
}
/**
 * The CairnQ `TaskStore` on SQLite: one database file (WAL) shared by API and
 * worker processes on one host.
 *
 * Opens lazily: the first call (or `connect()`) creates the file and its
 * directory, applies migrations and checks the protocol version. Writes from
 * concurrent callers are group-committed; reads use a second connection and
 * never wait for writes. Close it when done.
 *
 * @example
 * ```ts
 * import { SQLiteStore } from "@cairnq/store-sqlite";
 *
 * const store = new SQLiteStore("./data/cairnq.db");
 * const task = await store.submit({ name: "email", payload: { to: "a@example.com" } });
 * const [claimed] = await store.claim({ queues: ["default"], workerId: "worker_1" });
 * await store.complete({ taskId: claimed!.id, workerId: "worker_1", result: { sent: true } });
 * await store.close();
 * ```
 */
export class SQLiteStore extends KyselyStore implements TransactionalTaskStore<AnyKysely> {
  /**
   * @param path - The database file (created with its directory if missing), or `:memory:` for a private in-memory database.
   * @param options - See {@link SQLiteStoreOptions}.
   */
  constructor(path: string, input: SQLiteStoreOptions = {}) {
    // `busyTimeotMs: 30_000` silently ignored would fail busy writes after the 5 s default.
    const options = checkOptions(input, "new SQLiteStore(path, options)", SQLITE_STORE_OPTION_KEYS) as SQLiteStoreOptions;
    // "" would open a private temporary database that no other connection (a worker, a client) can see.
    if (typeof path !== "string" || path === "") {
      throw new InvalidArgument("path", `path must be a string (a file path or ":memory:"), got ${path === "" ? 'an empty string, which SQLite would open as a private temporary database no other connection sees' : describe(path)}`);
    }
    const busyTimeoutMs = options.busyTimeoutMs === undefined ? 5000 : requireInt(options.busyTimeoutMs, "busyTimeoutMs", 0, 2_147_483_647);
    const driver = options.driver;
    if (driver !== undefined && !(SQLITE_DRIVER_NAMES as readonly unknown[]).includes(driver) && !isDriverObject(driver)) {
      throw new InvalidArgument(
        "driver",
        `driver must be one of ${SQLITE_DRIVER_NAMES.map((name) => JSON.stringify(name)).join(", ")} (or left out to take the first available), ` +
          `or a SQLiteDriver object ({ name, openConnection, checkpointThread }); got ${describe(driver)}`,
      );
    }
    const dialect = new SQLiteDialect(path, { busyTimeoutMs, clock: storeClock(options.clock), driver });
    super(dialect.connection.db, dialect);
  }

  get #sqlite(): SQLiteDialect {
    return this.dialect as SQLiteDialect;
  }

  /** The SQLite driver the store opened the file with; null until it connected. */
  get driver(): SQLiteDriverName | null {
    return this.#sqlite.connection.driver;
  }

  /** The database file as resolved (or `:memory:`). */
  get path(): string {
    return this.#sqlite.connection.file;
  }

  /**
   * `complete_in` (§5.15) on SQLite: one `BEGIN IMMEDIATE` transaction on the
   * store's writer connection, in the write queue's turn, runs `fn` with that
   * connection (a Kysely instance over it: use its query builder or `sql`),
   * then `complete` with `fn`'s return value as the last statement. When the
   * task is no longer this worker's, `LostLease` is thrown and `fn`'s writes
   * roll back with it; when `fn` throws, everything rolls back and the task
   * stays running. Workers expose it as `ctx.succeedIn(fn)`.
   *
   * While `fn` runs it holds the database's write lock and this process's
   * write turn: keep it short, and inside it write only through `trx` —
   * to submit a task in the same transaction use `store.withTransaction(trx)`.
   * A write through any store on this file (`ctx.progress`, `client.submit`)
   * would wait for the very transaction it runs in.
   *
   * @example
   * ```ts
   * const { task } = await store.completeIn({ taskId, workerId, attempt }, async (trx) => {
   *   await trx.insertInto("invoices").values({ id: invoiceId, total }).execute();
   *   return { invoiceId };
   * });
   * ```
   */
  completeIn<R>(input: OwnedInput, fn: (trx: AnyKysely) => Promise<R>): Promise<{ task: Task; result: R }> {
    // The write queue's transaction body receives a Kysely instance bound to the writer connection.
    return this.completeInTransaction(input, fn as (tx: QueryRunner) => Promise<R>);
  }

  /**
   * A `TaskStore` view whose statements run on your open transaction on the
   * same database file: a task submitted (or cancelled, retried) through it
   * is written if and only if your transaction commits. Reads through it see
   * your transaction's own writes.
   *
   * `trx` is the connection {@link SQLiteStore.transaction} or
   * `ctx.succeedIn` hands you, or a Kysely transaction of your own on this
   * file — then begin it so that it takes the write lock at once
   * (`BEGIN IMMEDIATE`, which `transaction()` does for you): see the README
   * for why Kysely's own `db.transaction()` (a deferred `BEGIN`) can stall.
   * The first call through the view checks that `trx`'s connection has this
   * store's file open. The view shares the store's backpressure gate.
   *
   * @example
   * ```ts
   * await store.transaction(appDb, async (trx) => {
   *   await trx.insertInto("orders").values(order).execute();
   *   await store.withTransaction(trx).submit({ name: "ship-order", payload: { orderId: order.id } });
   * });
   * ```
   */
  withTransaction(trx: QueryRunner): TaskStore {
    return new SQLiteTransactionStore(this, this.#sqlite, trx);
  }

  /**
   * Runs `fn` in one `BEGIN IMMEDIATE … COMMIT` transaction on YOUR Kysely
   * instance `db` (your own connection to this store's file), rolled back when
   * `fn` throws, and returns what `fn` returns. Pass `fn`'s `trx` to
   * {@link SQLiteStore.withTransaction} (or `client.withTransaction`) to
   * write tasks in the same transaction as your own rows.
   *
   * Why not `db.transaction()`: its deferred `BEGIN` takes the write lock
   * only at the first write, and better-sqlite3 waits for a busy lock
   * synchronously — blocking the event loop, so the store's own half-done
   * group commit in this process can never finish and release it. Here the
   * transaction starts while this process's write queue holds its turn (none
   * of its writes is half done), the lock is taken at `BEGIN`, and a lock held
   * by another process is waited for on an awaited backoff (`busyTimeoutMs`,
   * then `DatabaseBusy`). Writes of this process through the store wait until
   * `fn` settles: keep it short, and inside it write only through `trx`.
   * Once the transaction has committed or rolled back, `trx` refuses every
   * statement (and `withTransaction(trx)` every call) with a `CairnQError`,
   * as Kysely's own transactions do: nothing sent late runs outside it.
   *
   * @example
   * ```ts
   * const appDb = new Kysely<App>({ dialect: new SqliteDialect({ database: new Database("app.db") }) });
   * await store.transaction(appDb, async (trx) => {
   *   await trx.insertInto("orders").values(order).execute();
   *   await client.withTransaction(trx).submit("ship-order", { orderId: order.id });
   * });
   * ```
   */
  async transaction<DB, T>(db: Kysely<DB>, fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
    if (typeof db !== "object" || db === null || typeof (db as Partial<Kysely<DB>>).connection !== "function") {
      throw new InvalidArgument("db", "transaction(db, fn) needs your Kysely instance on this store's database file as db");
    }
    if (typeof fn !== "function") throw new InvalidArgument("fn", "transaction(db, fn) needs a function to run in the transaction");
    await this.connect();
    const connection = this.#sqlite.connection;
    return connection.queue.exclusive(connection, () =>
      db.getExecutor().provideConnection(async (conn) => {
        await retryBusy(() => conn.executeQuery(CompiledQuery.raw("BEGIN IMMEDIATE")), connection.file, connection.busyTimeoutMs);
        // Ended before COMMIT / ROLLBACK is sent: a statement still queued on trx must not run after it, in autocommit.
        const state: AppTransactionState = { ended: null };
        let value: T;
        try {
          value = await fn(boundTransaction(db, conn, state));
          state.ended = "committed";
          await conn.executeQuery(CompiledQuery.raw("COMMIT"));
        } catch (err) {
          state.ended = "rolled back";
          await conn.executeQuery(CompiledQuery.raw("ROLLBACK")).catch(() => {});
          throw err;
        }
        return value;
      }),
    );
  }
}

function isDriverObject(value: unknown): value is SQLiteDriver {
  if (typeof value !== "object" || value === null) return false;
  const driver = value as Partial<SQLiteDriver>;
  return typeof driver.name === "string" && typeof driver.openConnection === "function" && driver.checkpointThread !== undefined;
}
