// A *target* is one fresh database the bench measures against, as plain data
// so it can be handed to a worker child process:
//   { backend: "sqlite", path }            a database file
//   { backend: "sqlite", path, driver }    … on one SQLite driver: "node:sqlite", "bun:sqlite", "better-sqlite3",
//                                          or { betterSqlite3: modulePath } (a copy built for this Node, see
//                                          scripts/runtimes.mjs ensureBetterSqlite3For)
//   { backend: "postgres", dsn, schema }   a schema of its own in a Postgres database
//   { backend: "postgres", dsn, options }  a database of its own (`schema` unset), with store options
//                                          (the pooler figures: `preparedStatements`, `listen`)
//   { backend: "mysql", dsn }              a MySQL/MariaDB database of its own
// Every workload is written once over these three openers; the backend is
// only ever an argument.
import { createRequire } from "node:module";
import * as cairnq from "cairnq";
import { betterSqlite3Driver } from "@cairnq/store-sqlite";

const { CairnQ, Worker, SQLiteStore } = cairnq;

/** The SQLite store options a target asks for: its driver, if it names one. */
function sqliteOptions(target) {
  const driver = target.driver;
  if (driver === undefined) return {};
  if (typeof driver === "object") return { driver: betterSqlite3Driver(createRequire(import.meta.url)(driver.betterSqlite3), driver.betterSqlite3) };
  return { driver };
}

/**
 * The busy retries so far of the write queue under a SQLite client, worker or store (turns that hit
 * SQLITE_BUSY and slept the backoff); null on Postgres. Read from the store's dialect: a bench counter,
 * not an API.
 */
export function busyRetriesOf(store) {
  return store?.dialect?.connection?.queue?.stats?.busyRetries ?? null;
}

/** Whether the built umbrella has the Postgres factories yet (the store is written in parallel). */
export function hasPostgres() {
  return typeof CairnQ.postgres === "function" && typeof Worker.postgres === "function" && typeof cairnq.PostgresStore === "function";
}

/** A client (`CairnQ`) on the target; `close()` closes its store. */
export function openClient(target, options = {}) {
  switch (target.backend) {
    case "sqlite":
      return CairnQ.sqlite(target.path, { ...sqliteOptions(target), ...options });
    case "postgres":
      return CairnQ.postgres(target.dsn, { schema: target.schema, ...target.options, ...options });
    case "mysql":
      return CairnQ.mysql(target.dsn, options);
    default:
      throw new Error(`unknown backend ${target.backend}`);
  }
}

/** A worker on the target; `close()` closes the store it built. */
export function openWorker(target, options = {}) {
  switch (target.backend) {
    case "sqlite":
      return Worker.sqlite(target.path, { ...sqliteOptions(target), ...options });
    case "postgres":
      return Worker.postgres(target.dsn, { schema: target.schema, ...target.options, ...options });
    case "mysql":
      return Worker.mysql(target.dsn, options);
    default:
      throw new Error(`unknown backend ${target.backend}`);
  }
}

/** A bare `TaskStore` on the target (the claim measurement drives the protocol directly). */
export function openStore(target) {
  switch (target.backend) {
    case "sqlite":
      return new SQLiteStore(target.path, sqliteOptions(target));
    case "postgres":
      return new cairnq.PostgresStore(target.dsn, { schema: target.schema, ...target.options });
    case "mysql":
      return new cairnq.MySQLStore(target.dsn);
    default:
      throw new Error(`unknown backend ${target.backend}`);
  }
}

export { newTaskId, newWorkerId } from "@cairnq/protocol/adapter";
