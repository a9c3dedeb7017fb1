import type { SqliteDatabase } from "kysely";
import { CachingDatabase } from "../statement-cache.js";
import { loadSQLiteDriver } from "./load-driver.js";
import type { SQLiteDriver, SQLiteDriverName } from "./sqlite-driver.js";

/** Options of {@link openSQLiteDatabase}. */
export interface OpenSQLiteDatabaseOptions {
  /** The driver, as `SQLiteStoreOptions.driver`. @default the first that loads */
  driver?: SQLiteDriverName | SQLiteDriver;
  /** SQLite's `busy_timeout` on this connection, in ms. @default 5000 */
  busyTimeoutMs?: number;
}

/**
 * A database for Kysely's `SqliteDialect` on any of the store's SQLite
 * drivers: your application's own Kysely instance on the store's file, for
 * `store.transaction(db, fn)` and `withTransaction`, without depending on
 * better-sqlite3 (Kysely's dialect takes a better-sqlite3-shaped database;
 * `node:sqlite` and `bun:sqlite` are not). Opens the file at once.
 *
 * @example
 * ```ts
 * const appDb = new Kysely<App>({ dialect: new SqliteDialect({ database: openSQLiteDatabase("cairnq.db", { driver: "node:sqlite" }) }) });
 * await store.transaction(appDb, async (trx) => {
 *   await trx.insertInto("orders").values(order).execute();
 *   await store.withTransaction(trx).submit({ name: "ship-order", payload: { orderId: order.id } });
 * });
 * ```
 */
export function openSQLiteDatabase(path: string, options: OpenSQLiteDatabaseOptions = {}): SqliteDatabase {
  const driver = typeof options.driver === "object" ? options.driver : loadSQLiteDriver(options.driver);
  const database = new CachingDatabase();
  database.attach(driver.openConnection(path, options.busyTimeoutMs ?? 5000));
  return database;
}
