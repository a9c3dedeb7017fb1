import { InvalidArgument, requireInt } from "@cairnq/protocol";
import { KyselyStore } from "@cairnq/store-kysely";
import { SQLiteDialect } from "./sqlite-dialect.js";

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
   * milliseconds. For tests that move time instead of sleeping.
   * @default Date.now
   */
  clock?: () => number;
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
export class SQLiteStore extends KyselyStore {
  /**
   * @param path - The database file (created with its directory if missing), or `:memory:` for a private in-memory database.
   * @param options - See {@link SQLiteStoreOptions}.
   */
  constructor(path: string, options: SQLiteStoreOptions = {}) {
    if (typeof path !== "string") throw new InvalidArgument("path", `path must be a string (a file path or ":memory:"), got ${typeof path}`);
    const busyTimeoutMs = options.busyTimeoutMs === undefined ? 5000 : requireInt(options.busyTimeoutMs, "busyTimeoutMs", 0, 2_147_483_647);
    const dialect = new SQLiteDialect(path, { busyTimeoutMs, clock: options.clock });
    super(dialect.connection.db, dialect);
  }

  /** The database file as resolved (or `:memory:`). */
  get path(): string {
    return (this.dialect as SQLiteDialect).connection.file;
  }
}
