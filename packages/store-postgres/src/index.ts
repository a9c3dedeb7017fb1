/**
 * `@cairnq/store-postgres` — the CairnQ `TaskStore` on Postgres (`pg`
 * through Kysely), a dialect of `@cairnq/store-kysely`: the database clock,
 * `FOR UPDATE SKIP LOCKED` claims, advisory key locks, LISTEN/NOTIFY
 * wakeups, the `schema` option and installation guard, and transactional
 * `completeIn` / `withTransaction`.
 *
 * @packageDocumentation
 */
export type { PostgresConnectionOptions, PostgresErrorHook, PostgresErrorInfo, PostgresPool, PostgresTarget, PostgresTimeouts } from "./postgres-connection.js";
export { DEFAULT_POSTGRES_TIMEOUTS, PostgresConnection } from "./postgres-connection.js";
export type { AnyTransaction } from "./postgres-executor.js";
export { PostgresExecutor, PostgresTransactionExecutor } from "./postgres-executor.js";
export { BLOCKING_KEY_LOCK, KEY_LOCK_SQL, KeyLockBusy, PostgresKeyLock, TRY_KEY_LOCK_SQL } from "./postgres-key-lock.js";
export type { Installations } from "./postgres-schema.js";
export {
  checkInstallation,
  INSTALLATIONS_SQL,
  LOCK_LEDGER,
  NOTIFY_STATEMENTS,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA,
  PostgresSchemaManager,
  readInstallations,
} from "./postgres-schema.js";
export { PostgresStoreDialect } from "./postgres-store-dialect.js";
export { PostgresStoreSyntax } from "./postgres-store-syntax.js";
export type { PostgresStoreOptions } from "./postgres-store.js";
export { PostgresStore } from "./postgres-store.js";
export { PostgresTransactionStore } from "./postgres-transaction-store.js";
export type { ListenClient, ListenConnector, ListenNotification, ListenState } from "./postgres-wakeups.js";
export {
  DONE_CHANNEL,
  LISTEN_BACKOFF_INITIAL_MS,
  LISTEN_BACKOFF_MAX_MS,
  LISTEN_PING_INTERVAL_MS,
  PostgresWakeups,
  QUEUED_CHANNEL,
} from "./postgres-wakeups.js";
