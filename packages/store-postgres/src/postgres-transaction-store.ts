import { InvalidArgument } from "@cairnq/protocol";
import type { TaskStore } from "@cairnq/protocol";
import type { SchemaManager, StatementKeyLock } from "@cairnq/store-kysely";
import { KyselyStore, TransactionViewDialect, transactionViewGate } from "@cairnq/store-kysely";
import type { AnyTransaction } from "./postgres-executor.js";
import { PostgresTransactionExecutor } from "./postgres-executor.js";
import { BLOCKING_KEY_LOCK } from "./postgres-key-lock.js";
import type { PostgresStoreDialect } from "./postgres-store-dialect.js";
import type { PostgresWakeups } from "./postgres-wakeups.js";

/**
 * The dialect of a transaction view: the store's syntax, clock and wakeups,
 * the key lock waited for in place; statements on the caller's transaction; connecting means
 * connecting the store (migrations and guards run on the store's own
 * connections, never inside the caller's transaction).
 */
class PostgresTransactionDialect extends TransactionViewDialect {
  override readonly keyLock: StatementKeyLock;
  override readonly wakeups: PostgresWakeups;
  override readonly executor: PostgresTransactionExecutor;
  readonly schema: SchemaManager;

  constructor(parent: PostgresStoreDialect, store: TaskStore, trx: AnyTransaction) {
    super(parent);
    // The caller's transaction cannot be restarted, so the key lock is waited for inside it.
    this.keyLock = BLOCKING_KEY_LOCK;
    this.wakeups = parent.wakeups;
    this.executor = new PostgresTransactionExecutor(trx);
    this.schema = { connect: () => store.connect(), close: () => Promise.resolve() };
  }
}

/**
 * A `TaskStore` whose every statement runs on the caller's open Kysely
 * transaction: what {@link PostgresStore.withTransaction} returns. A task
 * submitted through it exists if and only if that transaction commits.
 *
 * `close()` closes only the view (the store and the transaction stay open).
 */
export class PostgresTransactionStore extends KyselyStore {
  /**
   * @param store - The store whose installation the view writes to (connected first, outside `trx`).
   * @param dialect - The store's dialect.
   * @param trx - An open Kysely transaction on the same database and `search_path`.
   */
  constructor(store: TaskStore, dialect: PostgresStoreDialect, trx: AnyTransaction) {
    if (typeof trx !== "object" || trx === null || (trx as { isTransaction?: unknown }).isTransaction !== true) {
      throw new InvalidArgument(
        "trx",
        "withTransaction needs an open Kysely transaction (the `trx` of db.transaction().execute(async (trx) => …)); " +
          "statements on a plain Kysely instance would each run on their own connection, outside your transaction",
      );
    }
    super(trx, new PostgresTransactionDialect(dialect, store, trx));
    // Checks once, never waits: a wait would hold the caller's transaction open (see transactionViewGate).
    this.queueDepthGate = transactionViewGate(store.queueDepthGate);
  }
}
