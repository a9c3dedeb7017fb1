import { InvalidArgument } from "@cairnq/protocol";
import type { TaskStore } from "@cairnq/protocol";
import type { SchemaManager, StatementKeyLock } from "@cairnq/store-kysely";
import { KyselyStore, TransactionViewDialect, transactionViewGate } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";
import type { AnyTransaction } from "./postgres-executor.js";
import { PostgresTransactionExecutor } from "./postgres-executor.js";
import { BLOCKING_KEY_LOCK } from "./postgres-key-lock.js";
import type { PostgresStoreDialect } from "./postgres-store-dialect.js";
import type { PostgresWakeups } from "./postgres-wakeups.js";

/**
 * The dialect of a transaction view: the store's syntax, clock and wakeups,
 * the key lock waited for in place; statements on the caller's transaction; connecting means
 * connecting the store (migrations and guards run on the store's own
 * connections, never inside the caller's transaction), then checking that the
 * transaction's `search_path` resolves CairnQ's tables to the store's schema.
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
    this.schema = {
      connect: async () => {
        await store.connect();
        await checkSameSchema(trx, parent.schema.installedSchema);
      },
      close: () => Promise.resolve(),
    };
  }
}

/**
 * Where CairnQ's (unqualified) tables resolve on the caller's connection: its `search_path` decides, and
 * `to_regclass` resolves the name as the statements will.
 */
const RESOLVED_SCHEMA_SQL =
  "SELECT current_schema()::text AS current_schema, (SELECT n.nspname::text FROM pg_catalog.pg_class AS c " +
  "JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('cairnq_tasks')) AS tasks_schema";

/** Transactions already found on the store's schema: a transaction checks once, however many views it gets. */
const checked = new WeakMap<object, string>();

/**
 * Refuses a transaction whose `search_path` resolves CairnQ's tables to another schema than the
 * store's (another installation, or none): its tasks would be written where no worker of this store looks.
 */
async function checkSameSchema(trx: AnyTransaction, expected: string | null): Promise<void> {
  if (expected === null || checked.get(trx) === expected) return;
  const row = (await trx.executeQuery(CompiledQuery.raw(RESOLVED_SCHEMA_SQL))).rows[0] as { current_schema?: unknown; tasks_schema?: unknown } | undefined;
  const resolved = typeof row?.tasks_schema === "string" ? row.tasks_schema : null;
  if (resolved === expected) {
    checked.set(trx, expected);
    return;
  }
  const current = typeof row?.current_schema === "string" ? `current_schema "${row.current_schema}"` : "no existing schema";
  throw new InvalidArgument(
    "trx",
    `the transaction given to withTransaction resolves CairnQ's tables to ${resolved === null ? "no schema (none on its search_path holds them)" : `schema "${resolved}"`} ` +
      `(its search_path gives ${current}), not to this store's schema "${expected}", so tasks would be written where no worker of this store looks; ` +
      `set your Kysely's search_path to "${expected}" (e.g. pg.Pool({ options: '-c search_path="${expected}"' })), or use the store's own store.db.transaction()`,
  );
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
    super(trx, new PostgresTransactionDialect(dialect, store, trx), { parent: store });
    // Checks once, never waits: a wait would hold the caller's transaction open (see transactionViewGate).
    this.queueDepthGate = transactionViewGate(store.queueDepthGate);
  }
}
