/**
 * `@cairnq/store-kysely` — the shared core of CairnQ's SQL stores: every
 * protocol v1 operation written once over Kysely, as statements compiled from
 * the protocol's rules, plus the {@link StoreDialect} collaborators a backend
 * supplies. `@cairnq/store-sqlite` and `@cairnq/store-postgres` are dialects
 * of this core; a MySQL or libSQL adapter can be one too.
 *
 * @packageDocumentation
 */
export * from "./capabilities.js";
export * from "./clock.js";
export * from "./compiler.js";
export * from "./dialect.js";
export * from "./executor.js";
export * from "./key-lock.js";
export * from "./kysely-store.js";
export * from "./migrations.js";
export * from "./postgres-syntax.js";
export * from "./rows.js";
export * from "./schema-manager.js";
export * from "./sql-syntax.js";
export * from "./sqlite-syntax.js";
export * from "./statements.js";
export * from "./wakeups.js";
export * from "./write-combiner.js";
