import type { ClaimInput, OwnedInput, StoreCapabilities, Task, TaskStore, TransactionalTaskStore } from "@cairnq/protocol";
import { checkOptions, keepAlive } from "@cairnq/runtime";
import type { QueryRunner, WriteCombinerOptions } from "@cairnq/store-kysely";
import { checkCombineOption, KyselyStore } from "@cairnq/store-kysely";
import type { Transaction } from "kysely";
import type { MySQLTarget } from "./mysql-connection.js";
import { MySQLStoreDialect } from "./mysql-store-dialect.js";
import { MySQLTransactionStore } from "./mysql-transaction-store.js";

/** A Kysely transaction of any database shape, as `completeIn` and `withTransaction` take it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's table types are its own; the store runs compiled statements only.
export type AnyMySQLTransaction = Transaction<any>;

/** Options of {@link MySQLStore}. */
export interface MySQLStoreOptions {
  /**
   * Pool size when the store builds the pool from a connection string; an
   * integer ≥ 1. Rejected with a pool or Kysely instance.
   * @default 10
   */
  max?: number;
  /**
   * Write combining: concurrent submits, completes and other writes of one kind go to the server as
   * ONE multi-row statement, within these bounds; `false` sends every write on its own. Client
   * transitions and `withTransaction` views never combine.
   * @default {} (128 rows, 1 MiB per statement)
   */
  combine?: false | WriteCombinerOptions;
}

/** Every key of {@link MySQLStoreOptions}, for the unknown-key check. */
export const MYSQL_STORE_OPTION_KEYS = Object.freeze(["max", "combine"] as const satisfies readonly (keyof MySQLStoreOptions)[]);

/**
 * The CairnQ `TaskStore` on MySQL 8 / MariaDB 10.6+ (tested on MariaDB
 * 10.11): API and worker processes on many hosts share one database, whose
 * clock is the only clock, and claims pick rows `FOR UPDATE SKIP LOCKED`.
 *
 * Accepts a connection string (the store builds, owns and on `close()` ends
 * a `mysql2` pool), a `mysql2` pool you own, or a Kysely instance you own.
 * Opens lazily: the first call (or `connect()`) loads `mysql2`, applies the
 * protocol's migrations under a named lock and checks the protocol version.
 *
 * MySQL has no push channel (`capabilities.pushWakeups` is false): a waiting
 * worker or `call()` checks for its change with one cheap read at intervals
 * growing with its wait (`MySQLWakeups`; see `docs/protocol.md`,
 * "MySQL/MariaDB mapping").
 *
 * @example
 * ```ts
 * import { MySQLStore } from "@cairnq/store-mysql";
 *
 * const store = new MySQLStore("mysql://app@localhost:3306/app");
 * const task = await store.submit({ name: "email", payload: { to: "a@example.com" } });
 * const [claimed] = await store.claim({ queues: ["default"], workerId: "worker_1" });
 * await store.complete({ taskId: claimed!.id, workerId: "worker_1", result: { sent: true } });
 * await store.close();
 * ```
 */
export class MySQLStore extends KyselyStore implements TransactionalTaskStore<AnyMySQLTransaction> {
  declare readonly dialect: MySQLStoreDialect;

  /**
   * @param target - A connection string (`mysql://…`), a `mysql2` pool you own, or a Kysely instance you own.
   * @param options - See {@link MySQLStoreOptions}.
   */
  constructor(target: MySQLTarget, input: MySQLStoreOptions = {}) {
    const options = checkOptions(input, "new MySQLStore(target, options)", MYSQL_STORE_OPTION_KEYS) as MySQLStoreOptions;
    if (options.combine !== undefined && options.combine !== false) checkCombineOption(options.combine);
    const dialect = new MySQLStoreDialect(target, {
      ...(options.max === undefined ? {} : { max: options.max }),
      ...(options.combine === undefined ? {} : { combine: options.combine }),
    });
    super(dialect.connection.db, dialect, { destroyOnClose: dialect.connection.owned });
    (this as { capabilities: StoreCapabilities }).capabilities = Object.freeze({ ...this.capabilities });
  }

  /** `claim` (§5.10), telling the wake-ups whether it took tasks (a claim wait's checks back off while claims take none). */
  override async claim(input: ClaimInput): Promise<Task[]> {
    const rows = await super.claim(input);
    this.dialect.wakeups.claimed(input.queues, rows.length > 0);
    return rows;
  }

  /** Waits for in-flight calls and ends the pool if the store built it. Idempotent. */
  override async close(): Promise<void> {
    const hold = keepAlive();
    try {
      await super.close();
    } finally {
      this.dialect.wakeups.close();
      hold.release();
    }
  }

  /**
   * `complete_in` (§5.15): runs `fn` with a Kysely transaction, then
   * `complete` with its return value as the transaction's last statement;
   * `LostLease` rolls `fn`'s writes back.
   *
   * @example
   * ```ts
   * await store.completeIn({ taskId, workerId, attempt }, async (trx) => {
   *   await trx.insertInto("invoices").values({ id: invoiceId, total }).execute();
   *   return { invoiceId };
   * });
   * ```
   */
  completeIn<R>(input: OwnedInput, fn: (trx: AnyMySQLTransaction) => Promise<R>): Promise<{ task: Task; result: R }> {
    return this.completeInTransaction(input, (tx: QueryRunner) => fn(unplanned(tx) as AnyMySQLTransaction));
  }

  /**
   * A `TaskStore` view whose statements run on your open Kysely transaction:
   * a task submitted through it exists if and only if your transaction
   * commits; a keyed submit's key lock is held until then.
   *
   * @example
   * ```ts
   * await db.transaction().execute(async (trx) => {
   *   await trx.insertInto("orders").values(order).execute();
   *   await store.withTransaction(trx).submit({ name: "ship-order", payload: { orderId: order.id } });
   * });
   * ```
   */
  withTransaction(trx: AnyMySQLTransaction): TaskStore {
    return new MySQLTransactionStore(this, this.dialect, trx);
  }
}

/** The caller's Kysely transaction behind the executor's planning runner. */
function unplanned(tx: QueryRunner): unknown {
  return (tx as { tx?: unknown }).tx ?? tx;
}
