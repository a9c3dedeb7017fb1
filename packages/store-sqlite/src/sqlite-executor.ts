import type { QueryResult } from "kysely";
import type { AnyKysely, QueryRunner, QueryThunk, Row } from "@cairnq/store-kysely";
import { BaseStoreExecutor } from "@cairnq/store-kysely";
import { isBusyError, retryBusy } from "./busy.js";
import type { SQLiteConnection } from "./sqlite-connection.js";

/**
 * How the SQLite store runs statements (§13): writes and write transactions
 * through the file's in-process write queue (group commit, busy retry),
 * reads on the reader connection with busy retry and never through the
 * queue — so idle workers' probes never take the write lock.
 *
 * The `db` argument is ignored: statements run on the connection's own
 * writer and reader, which is the Kysely instance `SQLiteStore` passes.
 *
 * A read on a file database runs straight on the reader's better-sqlite3
 * handle (synchronous, the statement cache's `execute`); only when it
 * reports busy does it go the retrying way. The claim cycle's transaction
 * runs its statements straight on the writer too
 * ({@link SQLiteExecutor.writeTransactionAfter}, under the base class's
 * `writeTransactionWith`). Batchable writes reach the queue through the
 * dialect's `GroupCommitWrites`, not through this executor.
 */
export class SQLiteExecutor extends BaseStoreExecutor {
  constructor(private readonly connection: SQLiteConnection) {
    super();
  }

  async read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    const c = this.connection;
    try {
      const result = c.executeRead(query());
      if (result !== null) return result;
    } catch (err) {
      if (!isBusyError(err)) throw err;
      // Busy (rare on a WAL reader): the awaited backoff below, from a fresh attempt.
    }
    return retryBusy(() => c.readDb.executeQuery(query()), c.file, c.busyTimeoutMs);
  }

  write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    const c = this.connection;
    const result = c.queue.statement(c, query);
    c.maybeRefreshStatistics();
    return result;
  }

  writeTransaction<T>(_db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    const c = this.connection;
    const result = c.queue.transaction(c, fn);
    c.maybeRefreshStatistics();
    return result;
  }

  /**
   * The claim cycle's transaction: `first` (lease recovery) right after
   * `BEGIN IMMEDIATE`, then `fn` on a runner that executes straight on the
   * writer — the store core passes only its own draws here, never user code.
   */
  override writeTransactionAfter<T>(_db: AnyKysely, first: QueryThunk, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    const c = this.connection;
    // Its draws only move tasks from queued to running, which no waiter waits for: a wake signal only when lease recovery changed rows.
    const result = c.queue.transaction(c, fn, { first, direct: true, quietUnlessFirstChanges: true });
    c.maybeRefreshStatistics();
    return result;
  }
}
