/**
 * `@cairnq/store-sqlite` — the CairnQ `TaskStore` on SQLite (better-sqlite3
 * through Kysely), a dialect of `@cairnq/store-kysely`.
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
