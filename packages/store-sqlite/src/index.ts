/**
 * `@cairnq/store-sqlite` — the CairnQ `TaskStore` on SQLite (better-sqlite3
 * through Kysely), a dialect of `@cairnq/store-kysely`.
 *
 * @packageDocumentation
 */
export { DatabaseBusy } from "./busy.js";
export { SQLiteConnection, isMemoryFilename } from "./sqlite-connection.js";
export type { SQLiteDialectOptions } from "./sqlite-dialect.js";
export { SQLiteDialect } from "./sqlite-dialect.js";
export { SQLiteExecutor } from "./sqlite-executor.js";
export { SQLITE_MIGRATIONS, SQLiteSchemaManager } from "./sqlite-schema.js";
export type { SQLiteStoreOptions } from "./sqlite-store.js";
export { SQLiteStore } from "./sqlite-store.js";
export { SQLiteTransactionExecutor, SQLiteTransactionStore } from "./sqlite-transaction-store.js";
export type { SQLiteWakeupsMode, SQLiteWakeupsOptions, WakeupSource } from "./sqlite-wakeups.js";
export { SQLiteWakeups } from "./sqlite-wakeups.js";
export type { QueueConnection, WriteQueueStats } from "./write-queue.js";
export { GroupRolledBack, WriteQueue } from "./write-queue.js";
