/**
 * `@cairnq/store-sqlite` — the CairnQ `TaskStore` on SQLite through Kysely, a
 * dialect of `@cairnq/store-kysely`, on better-sqlite3, Node's built-in
 * `node:sqlite` or Bun's `bun:sqlite`.
 *
 * @example
 * ```ts
 * import { SQLiteStore } from "@cairnq/store-sqlite";
 *
 * const store = new SQLiteStore("cairnq.db", { busyTimeoutMs: 5_000 });
 * ```
 *
 * @packageDocumentation
 */
export { SQLiteStore } from "./sqlite-store.js";
export { SQLITE_STORE_OPTION_KEYS } from "./sqlite-store.js";
export type { SQLiteStoreOptions } from "./sqlite-store.js";
export { SQLiteDialect } from "./sqlite-dialect.js";
export type { SQLiteDialectOptions } from "./sqlite-dialect.js";
export { DatabaseBusy } from "./busy.js";
export { GroupRolledBack } from "./write-queue.js";
export type { SQLiteTransactionStore } from "./sqlite-transaction-store.js";
export { SQLITE_DRIVER_NAMES } from "./drivers/sqlite-driver.js";
export type {
  SQLiteDriver,
  SQLiteDriverConnection,
  SQLiteDriverName,
  SQLiteDriverStatement,
  SQLiteRunResult,
  CheckpointThreadSource,
} from "./drivers/sqlite-driver.js";
export { loadSQLiteDriver } from "./drivers/load-driver.js";
export { openSQLiteDatabase } from "./drivers/open-database.js";
export type { OpenSQLiteDatabaseOptions } from "./drivers/open-database.js";
export { betterSqlite3Driver } from "./drivers/better-sqlite3-driver.js";
export type { BetterSqlite3Class } from "./drivers/better-sqlite3-driver.js";
