import type { DialectCapabilities, StoreClock } from "@cairnq/store-kysely";
import { BaseStoreDialect, DEFAULT_DIALECT_CAPABILITIES, ProcessClock } from "@cairnq/store-kysely";
import type { SQLiteDriver, SQLiteDriverName } from "./drivers/sqlite-driver.js";
import { GroupCommitWrites } from "./group-commit-writes.js";
import { SQLiteConnection } from "./sqlite-connection.js";
import { SQLiteExecutor } from "./sqlite-executor.js";
import { SQLiteSchemaManager } from "./sqlite-schema.js";
import { SQLiteStoreSyntax } from "./sqlite-store-syntax.js";
import { SQLiteWakeups } from "./sqlite-wakeups.js";

/** Options of {@link SQLiteDialect}. */
export interface SQLiteDialectOptions {
  /** Busy budget (§13). */
  readonly busyTimeoutMs: number;
  /** The process clock. @default Date.now */
  readonly clock?: () => number;
  /** The SQLite driver. @default the first available of better-sqlite3, node:sqlite, bun:sqlite */
  readonly driver?: SQLiteDriverName | SQLiteDriver;
}

/**
 * The SQLite dialect of the shared core: `?n` placeholders and `json_each`
 * lists, the process clock bound once per statement, the write queue with
 * group commit, merged runs of adjacent writes and busy retry, a reader connection, no key lock (`BEGIN
 * IMMEDIATE` serializes writers), no `SKIP LOCKED`, and same-host wake-ups
 * ({@link SQLiteWakeups}: the database's directory watched while someone
 * waits, an accelerator only — `capabilities.pushWakeups` stays false, as
 * nothing says which queue or task a commit touched).
 *
 * @example
 * const dialect = new SQLiteDialect("./data/cairnq.db", { busyTimeoutMs: 5000 });
 * const store = new KyselyStore(dialect.connection.db, dialect);
 */
export class SQLiteDialect extends BaseStoreDialect {
  readonly name = "sqlite";
  readonly syntax = new SQLiteStoreSyntax();
  /**
   * `completeIn` (`ctx.succeedIn`) runs the caller's function in a write transaction on the store's writer;
   * `claimWakeOnQueued` and `taskDoneWakeReads` while the wake-ups can watch the database file (not in memory,
   * not after a broken watch).
   */
  override readonly capabilities: DialectCapabilities;
  override readonly clock: StoreClock;
  /** The store's connections. */
  readonly connection: SQLiteConnection;
  override readonly executor: SQLiteExecutor;
  /** Batchable writes join the write queue's group commit, adjacent ones of a kind merged. */
  override readonly writes: GroupCommitWrites;
  readonly schema: SQLiteSchemaManager;
  override readonly wakeups: SQLiteWakeups;

  constructor(filename: string, options: SQLiteDialectOptions) {
    super();
    this.clock = new ProcessClock(options.clock);
    this.connection = new SQLiteConnection(filename, options.busyTimeoutMs, options.driver);
    this.executor = new SQLiteExecutor(this.connection);
    this.writes = new GroupCommitWrites(this.connection);
    const wakeups = new SQLiteWakeups(this.connection);
    this.wakeups = wakeups;
    this.capabilities = Object.freeze({
      ...DEFAULT_DIALECT_CAPABILITIES,
      transactionalComplete: true,
      // The write queue runs a claim's transaction after the settlements queued before it (the fused claim).
      claimsSeeSettlements: true,
      get claimWakeOnQueued(): boolean {
        return wakeups.watchable;
      },
      // A done wait reads its task on the commits it sees, and at once when it cannot tell what they did.
      get taskDoneWakeReads(): boolean {
        return wakeups.watchable;
      },
    });
    this.schema = new SQLiteSchemaManager(this.connection, this.syntax, this.clock, this.wakeups);
  }
}
