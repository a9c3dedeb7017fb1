/**
 * `@cairnq/store-kysely` — the shared core of CairnQ's SQL stores: every
 * protocol v1 operation written once over Kysely, as statements compiled from
 * the protocol's rules, plus the {@link StoreDialect} collaborators a backend
 * supplies. `@cairnq/store-sqlite` and `@cairnq/store-postgres` are dialects
 * of this core; a MySQL or libSQL adapter can be one too.
 *
 * What a dialect author needs is exported here: the store, the dialect and its
 * collaborators (syntax, clock, executor, write batching, key lock, schema
 * manager, wake-ups) with their base classes and defaults, the migration builders, row decoding,
 * and the statement compiler with the templates of the protocol's
 * transitions (to check a dialect's SQL against the in-memory evaluator).
 *
 * @packageDocumentation
 */
export { KyselyStore } from "./kysely-store.js";
export type { KyselyStoreOptions } from "./kysely-store.js";
export { BaseStoreDialect, TransactionViewDialect } from "./dialect.js";
export { transactionViewGate } from "./transaction-view-gate.js";
export { missingTable } from "./missing-table.js";
export type { StoreDialect } from "./dialect.js";
export { DEFAULT_DIALECT_CAPABILITIES } from "./capabilities.js";
export type { DialectCapabilities } from "./capabilities.js";
export { BaseSqlSyntax, claimWindow, existsClaimProbe, inSubqueryJoin, orderText, sortedPicks } from "./sql-syntax.js";
export type { ClaimProbeParts, ListPickParts, SqlSyntax } from "./sql-syntax.js";
export { SqliteSyntax } from "./sqlite-syntax.js";
export { PostgresSyntax } from "./postgres-syntax.js";
export { POSTGRES_CLOCK, ProcessClock, SqlClock } from "./clock.js";
export type { StoreClock } from "./clock.js";
export { BaseStoreExecutor, KyselyExecutor } from "./executor.js";
export type { AnyKysely, QueryRunner, QueryThunk, Row, StoreExecutor, SyncRunner, TransactionHead } from "./executor.js";
export { SingleWrites, writeAlone } from "./write-batching.js";
export type { BatchableWrite, BatchedWriter, MergedOutcome, PlannedWrite, TakenWrites, WriteBatching, WriteLatency } from "./write-batching.js";
export { CombiningWrites } from "./combining-writes.js";
export type { CombiningWritesOptions } from "./combining-writes.js";
export { NO_KEY_LOCK, StatementKeyLock } from "./key-lock.js";
export type { KeyLock, KeyLockStatement } from "./key-lock.js";
export { MigratingSchemaManager } from "./schema-manager.js";
export type { MigratingSchemaManagerOptions, SchemaManager } from "./schema-manager.js";
export {
  buildMigrations,
  checkProtocolVersion,
  ledgerDdl,
  MIGRATION_NAMES,
  readProtocolVersion,
  runMigrations,
  SQLITE_SCHEMA,
  tasksTableDdl,
} from "./migrations.js";
export type { Migration, RunMigrationsOptions, SchemaFlavor } from "./migrations.js";
export { decodeTask, decodeTaskRef } from "./rows.js";
export { BATCH_ROWS, CompiledStatement, StatementCompiler } from "./compiler.js";
export type { Bind, CompileEnv, Fragment, StatementTemplate } from "./compiler.js";
export {
  batchInsertTemplate,
  batchRowTransitionTemplate,
  batchTransitionTemplate,
  CLAIM_INDEX_ORDER,
  deleteTemplate,
  insertTemplate,
  KEYS_TABLE,
  LIST_BY_ID_TEMPLATE,
  LIST_TEMPLATE,
  META_TABLE,
  MIGRATIONS_TABLE,
  PROBE_TEMPLATE,
  QUEUE_DEPTH_TEMPLATE,
  rowTransitionTemplate,
  setTransitionTemplate,
  STATS_TEMPLATE,
  TASKS_TABLE,
} from "./statements.js";
export { EXTENSION_DDL, RATE_CLAIMS_TABLE, RATE_LIMITS_TABLE, SCHEDULES_TABLE } from "./extension-tables.js";
export type { ExtensionTable } from "./extension-tables.js";
export { defaultExtensionCatalog, extensionObjects, objectsInPlace, postgresCatalogQuery, sqliteCatalogQuery } from "./extension-catalog.js";
export type { ExtensionObjects } from "./extension-catalog.js";
export { SleepWakeups } from "./wakeups.js";
export { checkCombineOption, WRITE_COMBINER_OPTION_KEYS, WriteCombiner } from "./write-combiner.js";
export type { CombinedWrite, FlushAt, FlushRunner, WriteCombinerOptions } from "./write-combiner.js";
export type { Wakeups } from "./wakeups.js";
export { redactConnectionString } from "./redact-connection-string.js";
