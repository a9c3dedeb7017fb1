import { InvalidArgument } from "@cairnq/protocol";
import type { TaskStore } from "@cairnq/protocol";
import type { QueryRunner, QueryThunk, Row, SchemaManager, Wakeups } from "@cairnq/store-kysely";
import { BaseStoreExecutor, KyselyStore, TransactionViewDialect, transactionViewGate } from "@cairnq/store-kysely";
import type { AnyKysely } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";
import type { QueryResult, Transaction } from "kysely";
import { outsideTransaction, PlannedRunner, startClock } from "./mysql-executor.js";
import { MYSQL_KEY_LOCK } from "./mysql-key-lock.js";
import type { MySQLStoreDialect } from "./mysql-store-dialect.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's table types are its own.
type AnyTransaction = Transaction<any>;

/** Every statement on the caller's open transaction, planned as on the store's own connections. */
class MySQLTransactionExecutor extends BaseStoreExecutor {
  readonly #runner: PlannedRunner;

  constructor(trx: AnyTransaction) {
    super();
    this.#runner = new PlannedRunner(trx);
  }

  read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#alone(query());
  }

  write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#alone(query());
  }

  /** One operation's statements: the transaction clock starts when the operation does. */
  async writeTransaction<T>(_db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    await startClock(this.#runner);
    return fn(this.#runner);
  }

  #alone(query: CompiledQuery<Row>): Promise<QueryResult<Row>> {
    return this.#runner.executeQuery(CompiledQuery.raw(outsideTransaction(query.sql), [...query.parameters]));
  }
}

/**
 * The dialect of a transaction view: the store's syntax, clock, key lock and wake-ups; statements on the caller's
 * transaction, each on its own (no write combining). Connecting connects the store, then checks the transaction's
 * session `sql_mode`.
 */
class MySQLTransactionDialect extends TransactionViewDialect {
  override readonly keyLock = MYSQL_KEY_LOCK;
  override readonly executor: MySQLTransactionExecutor;
  /** The store's: waits check committed rows on the store's pool, as the capabilities the view copies promise (`claimWakeOnQueued`). */
  override readonly wakeups: Wakeups;
  readonly schema: SchemaManager;

  constructor(parent: MySQLStoreDialect, store: TaskStore, trx: AnyTransaction) {
    super(parent);
    this.wakeups = parent.wakeups;
    this.executor = new MySQLTransactionExecutor(trx);
    this.schema = {
      connect: async () => {
        await store.connect();
        await checkSqlMode(trx);
      },
      close: () => Promise.resolve(),
    };
  }
}

/** Transactions whose session `sql_mode` was checked: a transaction checks once, however many views it gets. */
const checked = new WeakSet<object>();

/**
 * Refuses a transaction whose session has `NO_BACKSLASH_ESCAPES`: mysql2 escapes the values it binds
 * with backslashes, which that mode keeps, so every JSON value holding a quote would be written as
 * invalid JSON. The store's own pool removes the mode on each connection; the caller's session is
 * theirs to change.
 */
async function checkSqlMode(trx: AnyTransaction): Promise<void> {
  if (checked.has(trx)) return;
  const row = (await trx.executeQuery(CompiledQuery.raw("SELECT @@SESSION.sql_mode AS mode"))).rows[0] as { mode?: unknown } | undefined;
  const modes = typeof row?.mode === "string" ? row.mode.split(",") : [];
  if (modes.includes("NO_BACKSLASH_ESCAPES")) {
    throw new InvalidArgument(
      "trx",
      "the transaction given to withTransaction is on a connection whose sql_mode has NO_BACKSLASH_ESCAPES, under which the values " +
        "mysql2 binds (escaped with backslashes) are stored with their backslashes, so task payloads would be written as invalid JSON; " +
        "remove NO_BACKSLASH_ESCAPES from that connection's sql_mode (in your pool's connection setup), as the store's own pool does " +
        "on each of its connections",
    );
  }
  checked.add(trx);
}

/**
 * A `TaskStore` whose every statement runs on the caller's open Kysely
 * transaction: what `MySQLStore.withTransaction` returns. `close()` closes
 * only the view.
 */
export class MySQLTransactionStore extends KyselyStore {
  constructor(store: TaskStore, dialect: MySQLStoreDialect, trx: AnyTransaction) {
    if (typeof trx !== "object" || trx === null || (trx as { isTransaction?: unknown }).isTransaction !== true) {
      throw new InvalidArgument(
        "trx",
        "withTransaction needs an open Kysely transaction (the `trx` of db.transaction().execute(async (trx) => …)); " +
          "statements on a plain Kysely instance would each run on their own connection, outside your transaction",
      );
    }
    super(trx, new MySQLTransactionDialect(dialect, store, trx), { parent: store });
    // Checks once, never waits: a wait would hold the caller's transaction open (see transactionViewGate).
    this.queueDepthGate = transactionViewGate(store.queueDepthGate);
  }
}
