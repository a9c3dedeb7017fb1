import type { StoreClock } from "./clock.js";
import type { AnyKysely, StoreExecutor } from "./executor.js";
import type { Migration } from "./migrations.js";
import { checkProtocolVersion, runMigrations } from "./migrations.js";
import type { SqlSyntax } from "./sql-syntax.js";

/**
 * Connect-time work (§3.9, §11): connection setup, installation guards,
 * migrations, the protocol-version guard; and releasing what connect opened.
 */
export interface SchemaManager {
  /** Runs once before the store's first operation; a failure leaves nothing open and fails that operation. */
  connect(db: AnyKysely, executor: StoreExecutor): Promise<void>;
  /** Releases what `connect` opened. Called once, after in-flight operations settled. */
  close(db: AnyKysely): Promise<void>;
}

/** Options of {@link MigratingSchemaManager}. */
export interface MigratingSchemaManagerOptions {
  readonly syntax: SqlSyntax;
  readonly clock: StoreClock;
  /** The dialect's migrations, in ledger order (see `buildMigrations`). */
  readonly migrations: readonly Migration[];
  /** The ledger's `CREATE TABLE IF NOT EXISTS` (see `ledgerDdl`). */
  readonly ledgerDdl: string;
  /** A statement that locks the ledger first in each migration transaction (Postgres). @default null */
  readonly lockLedger?: string | null;
}

/**
 * The connect sequence every dialect shares — `beforeMigrations`, migrations
 * (§3.7), `afterMigrations`, the protocol-version guard (§11), `afterGuards`
 * — with no-op hooks a dialect overrides (SQLite: pragmas before, statistics
 * after; Postgres: installation guard before, LISTEN after).
 *
 * @example
 * class MySchema extends MigratingSchemaManager {
 *   protected override async beforeMigrations(db: AnyKysely): Promise<void> { ... }
 * }
 */
export class MigratingSchemaManager implements SchemaManager {
  /** Migrations the last `connect` applied (empty when the database was current). */
  applied: readonly string[] = [];

  constructor(protected readonly options: MigratingSchemaManagerOptions) {}

  async connect(db: AnyKysely, executor: StoreExecutor): Promise<void> {
    await this.beforeMigrations(db, executor);
    this.applied = await runMigrations({ db, executor, ...this.options });
    await this.afterMigrations(db, executor);
    await checkProtocolVersion(db, executor, this.options.syntax);
    await this.afterGuards(db, executor);
  }

  async close(_db: AnyKysely): Promise<void> {}

  /** Runs first: connection setup and guards that must precede migrations. */
  protected async beforeMigrations(_db: AnyKysely, _executor: StoreExecutor): Promise<void> {}

  /** Runs after migrations, before the protocol-version guard. */
  protected async afterMigrations(_db: AnyKysely, _executor: StoreExecutor): Promise<void> {}

  /** Runs last, once the database is known to speak this protocol version. */
  protected async afterGuards(_db: AnyKysely, _executor: StoreExecutor): Promise<void> {}
}
