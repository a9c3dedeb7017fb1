import type { QueryResult } from "kysely";
import type { AnyKysely, QueryRunner, QueryThunk, Row, StoreExecutor } from "@cairnq/store-kysely";
import { retryBusy } from "./busy.js";
import type { SQLiteConnection } from "./sqlite-connection.js";

/**
 * How the SQLite store runs statements (§13): writes and write transactions
 * through the file's in-process write queue (group commit, busy retry),
 * reads on the reader connection with busy retry and never through the
 * queue — so idle workers' probes never take the write lock.
 *
 * The `db` argument is ignored: statements run on the connection's own
 * writer and reader, which is the Kysely instance `SQLiteStore` passes.
 */
export class SQLiteExecutor implements StoreExecutor {
  constructor(private readonly connection: SQLiteConnection) {}

  read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    const c = this.connection;
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
}
