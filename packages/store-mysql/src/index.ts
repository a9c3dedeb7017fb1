/**
 * `@cairnq/store-mysql` — the CairnQ `TaskStore` on MySQL/MariaDB, built
 * only on what `@cairnq/store-kysely` publishes: a dialect (syntax, clock,
 * executor, key lock, schema) of the shared core.
 *
 * @packageDocumentation
 */
export { MySQLStore, MYSQL_STORE_OPTION_KEYS } from "./mysql-store.js";
export type { AnyMySQLTransaction, MySQLStoreOptions } from "./mysql-store.js";
export { MySQLStoreDialect, MYSQL_CLOCK } from "./mysql-store-dialect.js";
export type { MySQLStoreDialectOptions } from "./mysql-store-dialect.js";
export { StatementTooLarge } from "./mysql-errors.js";
export { MYSQL_URL_PARAMETERS } from "./mysql-connection-string.js";
export { MySQLSyntax } from "./mysql-syntax.js";
export type { MySQLTarget } from "./mysql-connection.js";
export type { MySQLPool, MySQLPoolConnection } from "./mysql-driver.js";
export { MYSQL_MIGRATIONS, MYSQL_EXTENSION_DDL, MYSQL_TYPES } from "./mysql-schema.js";
export { MySQLWakeups } from "./mysql-wakeups.js";
export type { MySQLWakeupsOptions, WakeupChecks } from "./mysql-wakeups.js";
