/**
 * `cairnq` — a durable task runtime for TypeScript services. Re-exports every
 * public name of `@cairnq/protocol`, `@cairnq/client`, `@cairnq/worker`,
 * `@cairnq/retention` and both stores, and adds factories:
 * `CairnQ.sqlite(path)`, `Worker.sqlite(path)`, `CairnQ.postgres(dsn)`,
 * `Worker.postgres(dsn)`. A store's driver loads only when its store opens.
 *
 * @packageDocumentation
 */
export * from "@cairnq/protocol";
export * from "@cairnq/client";
export * from "@cairnq/worker";
export * from "@cairnq/retention";
export * from "@cairnq/store-sqlite";
export * from "@cairnq/store-postgres";
export { BackpressureGate } from "@cairnq/client";
export { CairnQ, Worker } from "./factories.js";
export type { PostgresCairnQOptions, PostgresFactoryStoreOptions, PostgresWorkerOptions, SQLiteCairnQOptions, SQLiteWorkerOptions } from "./factories.js";
