import { TERMINAL_STATUSES } from "@cairnq/protocol";
import type { DialectCapabilities, ExtensionTable, WriteBatching, WriteCombinerOptions } from "@cairnq/store-kysely";
import { BaseStoreDialect, CombiningWrites, decodeTask, DEFAULT_DIALECT_CAPABILITIES, PROBE_TEMPLATE, SingleWrites, SqlClock, StatementCompiler, TASKS_TABLE } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";
import type { MySQLTarget } from "./mysql-connection.js";
import { MySQLConnection } from "./mysql-connection.js";
import { StatementTooLarge } from "./mysql-errors.js";
import { MySQLExecutor, STATEMENT_NOW, TRANSACTION_NOW } from "./mysql-executor.js";
import { MYSQL_KEY_LOCK } from "./mysql-key-lock.js";
import { MYSQL_EXTENSION_DDL, MySQLSchemaManager } from "./mysql-schema.js";
import { MySQLSyntax } from "./mysql-syntax.js";
import type { MySQLWakeupsOptions, WakeupChecks } from "./mysql-wakeups.js";
import { MySQLWakeups } from "./mysql-wakeups.js";

/**
 * Settlements a claim carries (`settleWithClaims`) go as their own single-row statements up to this
 * many of a kind, as one multi-row statement beyond. The multi-row form is a multi-table `UPDATE` over
 * `JSON_TABLE` (its rows buffered in a temporary table) and a second join that reads the rows back by the
 * ids it captured; the single-row form updates one row by key and returns its captured columns. Measured
 * on MariaDB 10.11 inside a transaction, the whole settlement per claim (alternating, 600 rounds each,
 * median, multi-row → single-row statements): 2 rows 1,069 → 477 µs, 4 rows 1,054 → 656 µs, 8 rows
 * 806 → 1,066 µs (one row was its own statement already: 295 µs) — a single-row statement costs ~100 µs,
 * the multi-row one ~800 µs whatever its rows up to a few dozen.
 */
const SETTLE_ALONE_UP_TO = 4;

/**
 * The most rows one write of a purge or bulk batch changes, and one draw of a claim takes (`DialectCapabilities.maxRowsPerWrite`):
 * a larger `limit` runs as several writes. MySQL has no `RETURNING` on `UPDATE` and MariaDB none on
 * a multi-table `DELETE`, so the plan gathers the changed ids in `@cq_ids`, one `CONCAT` per row
 * (`mysql-statement-plan.ts`), each copying the whole string: one write's time grows with the square
 * of its rows (a purge as one write, MariaDB 10.11: 1,000 rows 26 ms, 10,000 204 ms, 40,000 1.6 s),
 * and past `max_allowed_packet` (16 MiB: about 490k ids) `CONCAT` gives `NULL`, so the purge deleted
 * nothing and returned `[]`. 40,000 rows through writes of at most 1,000 / 2,000 / 5,000 / 10,000 /
 * 20,000 rows (on a shared 2-core server, so slower than alone): purge 4.98 / 3.70 / 3.08 / 3.83 /
 * 5.94 s, `cancelBatch` 5.96 / 3.12 / 3.54 / 5.45 / 10.76 s — below 2,000 each write's own round
 * trips and transaction dominate, above 10,000 the copies. 5,000 ids are about 170 KB of text, far
 * under the default `max_allowed_packet` (MariaDB 16 MiB, MySQL 8 64 MiB, MySQL 5.7 4 MiB).
 */
const MAX_ROWS_PER_WRITE = 5_000;

/**
 * The database clock of §2.1 on MySQL/MariaDB: epoch milliseconds of
 * `UTC_TIMESTAMP(6)` (the statement's start, the same for every read in one
 * statement), independent of the session's time zone (a
 * `UNIX_TIMESTAMP(NOW())` would read an hour wrong around a DST change in a
 * zone that has one). MySQL has no transaction-start clock, so the
 * transaction clock is the statement clock of the transaction's first
 * statement that reads it, kept in the session variable `@cq_tx_now` (which
 * the executor clears when a transaction begins); outside a transaction it
 * is the statement clock (see `TRANSACTION_NOW`).
 */
export const MYSQL_CLOCK: SqlClock = new SqlClock({ statement: STATEMENT_NOW, transaction: TRANSACTION_NOW });

/** Options of {@link MySQLStoreDialect}. */
export interface MySQLStoreDialectOptions {
  /** Pool size when the store builds the pool. @default 10 */
  readonly max?: number;
  /** How waits check for their change (see {@link MySQLWakeups}). @default the defaults of `MySQLWakeupsOptions` */
  readonly wakeups?: MySQLWakeupsOptions;
  /**
   * Write combining: concurrent submits, completes and other owned writes of one kind go to the
   * server as ONE multi-row statement (`CombiningWrites`, over `JSON_TABLE`), with these bounds;
   * `false` sends every write on its own.
   * @default {} (the combiner's defaults: 128 rows, 1 MiB per statement)
   */
  readonly combine?: false | WriteCombinerOptions;
}

/**
 * MySQL's catalog read for `StoreDialect.extensionCatalog`: the tables (`information_schema.TABLES`)
 * and indexes (`information_schema.STATISTICS`) among `names` in the connection's current database,
 * in column `name`.
 */
export function mysqlCatalogQuery(syntax: MySQLSyntax, names: readonly string[]): CompiledQuery {
  const list = names.map((name) => syntax.literal(name)).join(", ");
  return CompiledQuery.raw(
    `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${list}) ` +
      `UNION SELECT INDEX_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME IN (${list})`,
  );
}

/**
 * Whether a multi-row statement's error means the server applied none of it, so its rows may be
 * re-sent in halves (`CombiningWritesOptions.splittable`): an error the server answered with (an
 * `errno`: a data error in one row, a constraint, a lock wait timeout; InnoDB rolls the statement
 * back, and the executor the transaction a plan opened) on a connection that is still good. A lost
 * connection (mysql2 marks it `fatal`) leaves the outcome unknown: never re-sent. A statement the store
 * refused before sending ({@link StatementTooLarge}) applied nothing either: its rows go again on their
 * own, so only the write too large for the server fails.
 */
export function rejectedWhole(error: unknown): boolean {
  if (error instanceof StatementTooLarge) return true;
  if (typeof error !== "object" || error === null) return false;
  const { errno, fatal } = error as { errno?: unknown; fatal?: unknown };
  return typeof errno === "number" && fatal !== true;
}

/**
 * The MySQL/MariaDB dialect of the shared core: {@link MySQLSyntax}, the
 * database clock, the planning executor, row key locks, `SKIP LOCKED`, and no
 * push channel: waits check for their change at growing intervals
 * ({@link MySQLWakeups}; see `docs/protocol.md`, "MySQL/MariaDB mapping"),
 * so a claim wait ends soon after a commit queues a task
 * (`claimWakeOnQueued`).
 *
 * @example
 * const dialect = new MySQLStoreDialect("mysql://root@127.0.0.1:3306/app");
 * const store = new KyselyStore(dialect.connection.db, dialect);
 */
export class MySQLStoreDialect extends BaseStoreDialect {
  readonly name = "mysql";
  readonly syntax = new MySQLSyntax();
  override readonly clock = MYSQL_CLOCK;
  override readonly capabilities: DialectCapabilities = Object.freeze({
    ...DEFAULT_DIALECT_CAPABILITIES,
    skipLocked: true,
    databaseClock: true,
    transactionalComplete: true,
    claimWakeOnQueued: true,
    taskDoneWakeReads: true,
    // CREATE TABLE / CREATE INDEX commit the open transaction: a view has the store create the extension tables.
    ddlCommits: true,
    // A purge or bulk batch gathers its ids in a session variable, each append a copy (MAX_ROWS_PER_WRITE).
    maxRowsPerWrite: MAX_ROWS_PER_WRITE,
  });
  override readonly executor: MySQLExecutor;
  override readonly keyLock = MYSQL_KEY_LOCK;
  readonly schema: MySQLSchemaManager;
  readonly connection: MySQLConnection;
  override readonly wakeups: MySQLWakeups;
  /** Write combining ({@link CombiningWrites}), or every write its own statement with `combine: false`. */
  override readonly writes: WriteBatching;

  constructor(target: MySQLTarget, options: MySQLStoreDialectOptions = {}) {
    super();
    this.connection = new MySQLConnection(target, options.max);
    this.executor = new MySQLExecutor(this.connection.multipleStatements);
    this.schema = new MySQLSchemaManager({ syntax: this.syntax, clock: this.clock });
    this.wakeups = new MySQLWakeups(this.#wakeupChecks(), options.wakeups);
    this.writes = options.combine === false ? new SingleWrites() : new CombiningWrites({ ...options.combine, splittable: rejectedWhole, settleWithClaims: true, settleAloneUpTo: SETTLE_ALONE_UP_TO });
  }

  /**
   * The wake-ups' reads, on the store's pool: the protocol's claim probe (`PROBE_TEMPLATE`, any name)
   * and the rows of the terminal ones among task ids (`TERMINAL_STATUSES`; a task that is gone never wakes its waiter early).
   */
  #wakeupChecks(): WakeupChecks {
    const compiler = new StatementCompiler(this.syntax, this.clock, this.capabilities.skipLocked);
    const terminal = TERMINAL_STATUSES.map((s) => this.syntax.literal(s)).join(", ");
    return {
      claimable: async (queues) => {
        const params = { queues, names: null };
        const { rows } = await this.executor.read(this.connection.db, () => compiler.statement(PROBE_TEMPLATE, params).query(params));
        const found = rows[0]?.found;
        return found === true || Number(found) === 1;
      },
      settled: async (taskIds) => {
        // The whole row: the waiter's wait loop returns it instead of reading it again (one round trip fewer per call()).
        const sql = `SELECT * FROM ${TASKS_TABLE} WHERE id IN (${taskIds.map(() => "?").join(", ")}) AND status IN (${terminal})`;
        const { rows } = await this.executor.read(this.connection.db, () => CompiledQuery.raw(sql, [...taskIds]));
        return rows.map(decodeTask);
      },
    };
  }

  /** MySQL's ER_NO_SUCH_TABLE (errno 1146, SQLSTATE 42S02). */
  override missingTable(err: unknown): boolean {
    return typeof err === "object" && err !== null && (err as { errno?: unknown }).errno === 1146;
  }

  /** MySQL's types: keys need a length, so the extension tables use `VARBINARY`. */
  override extensionDdl(table: ExtensionTable): readonly string[] {
    return MYSQL_EXTENSION_DDL[table];
  }

  /** The tables and indexes among `names` in the current database (`information_schema`: no table lock, no implicit commit). */
  override extensionCatalog(names: readonly string[]): CompiledQuery {
    return mysqlCatalogQuery(this.syntax, names);
  }
}
