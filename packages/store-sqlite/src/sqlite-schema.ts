import type { AnyKysely, StoreClock, StoreExecutor, SqlSyntax } from "@cairnq/store-kysely";
import { buildMigrations, ledgerDdl, MigratingSchemaManager, SQLITE_SCHEMA } from "@cairnq/store-kysely";
import type { SQLiteConnection } from "./sqlite-connection.js";
import type { SQLiteWakeups } from "./sqlite-wakeups.js";

/** The SQLite migrations of protocol v1: 0001 … 0010 without the Postgres-only 0003 (§3.6). */
export const SQLITE_MIGRATIONS = buildMigrations(SQLITE_SCHEMA);

/**
 * SQLite's connect sequence, in the order of §3.9: open (parent directory,
 * `busy_timeout` = budget, WAL, `synchronous`, `foreign_keys`), migrations —
 * each in its own `BEGIN IMMEDIATE` through the write queue —,
 * `busy_timeout = 0`, statistics, then the protocol-version guard. A failed
 * connect closes what it opened; `close` stops the wake-ups before closing
 * the connections they read.
 */
export class SQLiteSchemaManager extends MigratingSchemaManager {
  constructor(
    private readonly connection: SQLiteConnection,
    syntax: SqlSyntax,
    clock: StoreClock,
    private readonly wakeups?: Pick<SQLiteWakeups, "close">,
  ) {
    super({ syntax, clock, migrations: SQLITE_MIGRATIONS, ledgerDdl: ledgerDdl(SQLITE_SCHEMA) });
  }

  override async connect(db: AnyKysely, executor: StoreExecutor): Promise<void> {
    try {
      await super.connect(db, executor);
    } catch (err) {
      this.connection.closeHandles();
      throw err;
    }
  }

  protected override async beforeMigrations(): Promise<void> {
    await this.connection.open();
  }

  protected override async afterMigrations(): Promise<void> {
    this.connection.disableBusyWait();
    await this.connection.refreshStatistics();
  }

  override async close(): Promise<void> {
    this.wakeups?.close();
    await this.connection.close();
  }
}
