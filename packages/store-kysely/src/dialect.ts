import type { DialectCapabilities } from "./capabilities.js";
import type { ExtensionTable } from "./extension-tables.js";
import { EXTENSION_DDL } from "./extension-tables.js";
import type { CompiledQuery } from "kysely";
import { defaultExtensionCatalog } from "./extension-catalog.js";
import { missingTable } from "./missing-table.js";
import { DEFAULT_DIALECT_CAPABILITIES } from "./capabilities.js";
import type { StoreClock } from "./clock.js";
import { ProcessClock } from "./clock.js";
import type { StoreExecutor } from "./executor.js";
import { KyselyExecutor } from "./executor.js";
import type { KeyLock } from "./key-lock.js";
import { NO_KEY_LOCK } from "./key-lock.js";
import type { SchemaManager } from "./schema-manager.js";
import type { SqlSyntax } from "./sql-syntax.js";
import type { Wakeups } from "./wakeups.js";
import { SleepWakeups } from "./wakeups.js";
import type { WriteBatching } from "./write-batching.js";
import { SingleWrites } from "./write-batching.js";

/**
 * Everything a backend supplies to run the shared store core: a small set of
 * single-purpose collaborators, each an interface in its own file.
 *
 * Terminology:
 * - **syntax**: compile-time SQL bits (placeholders, casts, lists, literals);
 * - **clock**: where `now` comes from (a bound process-clock reading or a
 *   database expression, per rule clock — §2.1);
 * - **executor**: how statements run (reads, autocommit writes, write
 *   transactions; SQLite adds group commit and busy retry);
 * - **writes**: how concurrent writes of one kind (unkeyed submits, owned
 *   writes, `completeRef`) reach the database — each its own statement, or
 *   sharing multi-row statements or a group commit;
 * - **keyLock**: the lock keyed transactions take first (§5.0);
 * - **schema**: connect-time setup, migrations and guards (§3.7, §3.9, §11);
 * - **wakeups**: push signals, or plain sleeps (§9);
 * - **capabilities**: flags with documented defaults;
 * - **extensionDdl**: the DDL of the extension tables, where `text` keys do not fit;
 * - **extensionCatalog**: the catalog read that tells whether that DDL has anything left to do.
 *
 * Extend {@link BaseStoreDialect} rather than implementing this directly, so
 * a dialect keeps working when a collaborator or flag is added.
 */
export interface StoreDialect {
  /** The backend's name in messages, e.g. `"sqlite"`. */
  readonly name: string;
  readonly capabilities: DialectCapabilities;
  readonly syntax: SqlSyntax;
  readonly clock: StoreClock;
  readonly executor: StoreExecutor;
  readonly keyLock: KeyLock;
  readonly schema: SchemaManager;
  readonly wakeups: Wakeups;
  readonly writes: WriteBatching;
  /**
   * Called once with the text of every statement the store compiles (a bounded set: templates ×
   * shapes), e.g. to run them as named prepared statements.
   */
  statementCompiled(sql: string): void;
  /**
   * The DDL that creates extension table `table` on first use (re-runnable, `IF NOT EXISTS`).
   * Optional so dialects written before it keep compiling; absent, {@link EXTENSION_DDL} (one text
   * for SQLite and Postgres). A backend whose text columns cannot be keys as `text` (MySQL: a key
   * needs a length) supplies its own types here.
   */
  extensionDdl?(table: ExtensionTable): readonly string[];
  /**
   * The catalog read `ensure` runs before an extension feature's DDL, as a plain read (no transaction of its own): one row
   * per object among `names` (tables and indexes, as the feature's DDL names them) that exists where
   * the store's unqualified names resolve, its name in column `name`. When every object the DDL
   * creates is there and none it drops is, the DDL (its write transaction, key lock and table locks)
   * is skipped. Optional so dialects written before it keep compiling; absent,
   * {@link defaultExtensionCatalog}. A read that fails sends `ensure` down the DDL path (on a transaction view
   * it runs on the caller's transaction, so it must not fail there on a database where an error aborts it).
   */
  extensionCatalog?(names: readonly string[]): CompiledQuery;
  /**
   * Whether `err` says a table does not exist: reads of an extension table that was never created
   * answer "nothing" (`cairnq get` reads every task's step journal). Optional so dialects written
   * before it keep compiling; absent, SQLite's "no such table" and Postgres's SQLSTATE 42P01.
   */
  missingTable?(err: unknown): boolean;
}

/**
 * A {@link StoreDialect} with defaults for everything but the name, the
 * syntax and the schema manager: {@link DEFAULT_DIALECT_CAPABILITIES}, the process
 * clock, the plain Kysely executor, no key lock, plain sleeps, every write its
 * own statement, no hook on compiled statements. Override a field to replace
 * a collaborator.
 *
 * @example
 * class LibsqlDialect extends BaseStoreDialect {
 *   readonly name = "libsql";
 *   readonly syntax = new SqliteSyntax();
 *   readonly schema = new MigratingSchemaManager({ ... });
 * }
 */
export abstract class BaseStoreDialect implements StoreDialect {
  abstract readonly name: string;
  abstract readonly syntax: SqlSyntax;
  abstract readonly schema: SchemaManager;
  /** @default DEFAULT_DIALECT_CAPABILITIES */
  readonly capabilities: DialectCapabilities = DEFAULT_DIALECT_CAPABILITIES;
  /** @default new ProcessClock() */
  readonly clock: StoreClock = new ProcessClock();
  /** @default new KyselyExecutor() */
  readonly executor: StoreExecutor = new KyselyExecutor();
  /** @default NO_KEY_LOCK */
  readonly keyLock: KeyLock = NO_KEY_LOCK;
  /** @default new SleepWakeups() */
  readonly wakeups: Wakeups = new SleepWakeups();
  /** @default new SingleWrites() (every write its own statement) */
  readonly writes: WriteBatching = new SingleWrites();

  /** @default does nothing */
  statementCompiled(_sql: string): void {}

  /** @default SQLite's "no such table" message or Postgres's SQLSTATE 42P01 */
  missingTable(err: unknown): boolean {
    return missingTable(err);
  }

  /** @default EXTENSION_DDL[table] */
  extensionDdl(table: ExtensionTable): readonly string[] {
    return EXTENSION_DDL[table];
  }

  /** @default defaultExtensionCatalog(this.syntax, names): `pg_catalog` for a `PostgresSyntax`, else `sqlite_master` */
  extensionCatalog(names: readonly string[]): CompiledQuery {
    return defaultExtensionCatalog(this.syntax, names);
  }
}

/**
 * The base of a transaction view's dialect — the dialect of a store whose
 * statements all run on the caller's open transaction (what a backend's
 * `withTransaction` returns): the parent dialect's name, syntax and clock, and
 * its capabilities with `transactionalComplete` off. A subclass supplies the
 * executor on the caller's transaction and the schema manager, and overrides
 * the key lock or wake-ups where the view needs other ones.
 *
 * @example
 * class LibsqlTransactionDialect extends TransactionViewDialect {
 *   override readonly executor: StoreExecutor;
 *   readonly schema: SchemaManager;
 *   constructor(parent: LibsqlDialect, store: TaskStore, trx: QueryRunner) {
 *     super(parent);
 *     this.executor = new LibsqlTransactionExecutor(trx);
 *     this.schema = { connect: () => store.connect(), close: () => Promise.resolve() };
 *   }
 * }
 */
export abstract class TransactionViewDialect extends BaseStoreDialect {
  readonly name: string;
  readonly syntax: SqlSyntax;
  override readonly clock: StoreClock;
  override readonly capabilities: DialectCapabilities;
  readonly #parent: StoreDialect;

  /** @param parent - The dialect of the store the view belongs to. */
  constructor(parent: StoreDialect) {
    super();
    this.#parent = parent;
    this.name = parent.name;
    this.syntax = parent.syntax;
    this.clock = parent.clock;
    // A view has no completeIn: it already runs inside the caller's transaction.
    this.capabilities = Object.freeze({ ...parent.capabilities, transactionalComplete: false });
  }

  /** The parent dialect's answer. */
  override missingTable(err: unknown): boolean {
    return this.#parent.missingTable?.(err) ?? missingTable(err);
  }

  /** The parent dialect's extension DDL. */
  override extensionDdl(table: ExtensionTable): readonly string[] {
    return this.#parent.extensionDdl?.(table) ?? EXTENSION_DDL[table];
  }

  /** The parent dialect's catalog read. */
  override extensionCatalog(names: readonly string[]): CompiledQuery {
    return this.#parent.extensionCatalog?.(names) ?? defaultExtensionCatalog(this.syntax, names);
  }
}
