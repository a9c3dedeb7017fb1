import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import { CairnQError, InvalidArgument } from "@cairnq/protocol";
import type { TaskStore } from "@cairnq/protocol";
import type { AnyKysely, QueryRunner, QueryThunk, Row, SchemaManager, Wakeups } from "@cairnq/store-kysely";
import { BaseStoreExecutor, KyselyStore, TransactionViewDialect, transactionViewGate } from "@cairnq/store-kysely";
import type { SQLiteDialect } from "./sqlite-dialect.js";

/**
 * How the statements of a {@link SQLiteStore.withTransaction} view run: every
 * read, write and "write transaction" on the caller's open transaction (their
 * connection, or the store's writer inside `ctx.succeedIn`), never through
 * the write queue — the caller's transaction already holds the database's
 * write lock, or takes it at its first write. Reads go there too, so a view
 * reads its own uncommitted writes.
 */
export class SQLiteTransactionExecutor extends BaseStoreExecutor {
  readonly #runner: QueryRunner;

  /** @param trx - The caller's open transaction. */
  constructor(trx: QueryRunner) {
    super();
    this.#runner = { executeQuery: (query) => trx.executeQuery(positional(query)) };
  }

  read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#runner.executeQuery(query());
  }

  write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#runner.executeQuery(query());
  }

  writeTransaction<T>(_db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return fn(this.#runner);
  }
}

const NUMBERED_PLACEHOLDER = /\?(\d+)/g;

/**
 * The store compiles numbered placeholders (`?1 … ?n`, a value read twice is
 * bound once), which better-sqlite3 binds only by name; the store's own
 * connections translate them, a caller's plain connection does not. Rewritten
 * to positional `?`s with the values repeated, the statement binds the same on
 * every better-sqlite3 connection. (Our statements carry no `?` in literals.)
 */
function positional<R>(query: CompiledQuery<R>): CompiledQuery<R> {
  if (query.parameters.length === 0) return query;
  const values: unknown[] = [];
  const sql = query.sql.replace(NUMBERED_PLACEHOLDER, (_match, n: string) => {
    values.push(query.parameters[Number(n) - 1]);
    return "?";
  });
  return { ...query, sql, parameters: values };
}

/**
 * The dialect of a transaction view: the store's syntax, clock and wake-ups,
 * no key lock (the caller's write transaction serializes writers, §5.0);
 * connecting connects the store, then checks that the transaction's
 * connection has the store's database file open as `main`.
 */
class SQLiteTransactionDialect extends TransactionViewDialect {
  override readonly executor: SQLiteTransactionExecutor;
  /**
   * The store's: waits read committed rows on the store's reader, as the capabilities the view copies
   * promise (`claimWakeOnQueued`, `taskDoneWakeReads`); plain sleeps would break both.
   */
  override readonly wakeups: Wakeups;
  readonly schema: SchemaManager;

  constructor(parent: SQLiteDialect, store: TaskStore, trx: QueryRunner) {
    super(parent);
    this.wakeups = parent.wakeups;
    this.executor = new SQLiteTransactionExecutor(trx);
    this.schema = {
      connect: async () => {
        await store.connect();
        await checkSameFile(trx, parent.connection.databaseFile(), parent.connection.file);
      },
      close: () => Promise.resolve(),
    };
  }
}

async function checkSameFile(trx: QueryRunner, expected: string | null, shown: string): Promise<void> {
  // An in-memory database is private to its connection: no other connection can share it.
  if (expected === null) {
    throw new CairnQError(
      `withTransaction needs a database file: '${shown}' is in memory, private to the store's own connection, ` +
        "so no transaction of yours can write to it; use a file path",
    );
  }
  const rows = (await trx.executeQuery(CompiledQuery.raw("PRAGMA database_list"))).rows as { name?: unknown; file?: unknown }[];
  const main = rows.find((row) => row.name === "main");
  if (main?.file !== expected) {
    throw new InvalidArgument(
      "trx",
      `the transaction given to withTransaction is on '${typeof main?.file === "string" ? main.file : "an unknown database"}', not on this store's file '${expected}'; ` +
        "open your Kysely instance on the same file, or tasks would be written where no worker looks",
    );
  }
}

/**
 * A `TaskStore` whose every statement runs on the caller's open SQLite
 * transaction: what {@link SQLiteStore.withTransaction} returns. A task
 * submitted through it exists if and only if that transaction commits.
 *
 * `close()` closes only the view (the store and the transaction stay open).
 */
export class SQLiteTransactionStore extends KyselyStore {
  /**
   * @param store - The store whose database file the view writes to (connected first).
   * @param dialect - The store's dialect.
   * @param trx - An open transaction on a connection to the same file (a Kysely `Transaction`, or the
   *   connection `SQLiteStore.transaction` / `ctx.succeedIn` hands you).
   */
  constructor(store: TaskStore, dialect: SQLiteDialect, trx: QueryRunner) {
    if (typeof trx !== "object" || trx === null || typeof (trx as Partial<QueryRunner>).executeQuery !== "function") {
      throw new InvalidArgument(
        "trx",
        "withTransaction needs an open transaction: the `trx` of store.transaction(db, async (trx) => …), of ctx.succeedIn(async (trx) => …), " +
          "or of your own Kysely db.transaction() begun on the same file",
      );
    }
    super(trx as AnyKysely, new SQLiteTransactionDialect(dialect, store, trx), { parent: store });
    // Checks once, never waits: a wait would hold the caller's transaction open (see transactionViewGate).
    this.queueDepthGate = transactionViewGate(store.queueDepthGate);
  }
}
