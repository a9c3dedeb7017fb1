/**
 * `@cairnq/store-postgres` — the CairnQ `TaskStore` on Postgres (`pg`
 * through Kysely), a dialect of `@cairnq/store-kysely`: the database clock,
 * `FOR UPDATE SKIP LOCKED` claims, advisory key locks, LISTEN/NOTIFY
 * wakeups, the `schema` option and installation guard, and transactional
 * `completeIn` / `withTransaction`.
 *
 * @example
 * ```ts
 * import { PostgresStore } from "@cairnq/store-postgres";
 *
 * const store = new PostgresStore("postgres://app@db.internal/app", { schema: "jobs", max: 10 });
 * ```
 *
 * @packageDocumentation
 */
export { PostgresStore } from "./postgres-store.js";
export { POSTGRES_STORE_OPTION_KEYS } from "./postgres-store.js";
export type { PostgresStoreOptions } from "./postgres-store.js";
export type { PostgresTransactionStore } from "./postgres-transaction-store.js";
export type { AnyTransaction } from "./postgres-executor.js";
export type { PostgresConnectionOptions, PostgresErrorHook, PostgresErrorInfo, PostgresPool, PostgresTarget, PostgresTimeouts } from "./postgres-connection.js";
export { PostgresStoreDialect } from "./postgres-store-dialect.js";
export type { ListenClient, ListenConnector, ListenState } from "./postgres-wakeups.js";
