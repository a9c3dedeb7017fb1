// A *target* is one fresh database the bench measures against, as plain data
// so it can be handed to a worker child process:
//   { backend: "sqlite", path }            a database file
//   { backend: "postgres", dsn, schema }   a schema of its own in a Postgres database
//   { backend: "postgres", dsn, options }  a database of its own (`schema` unset), with store options
//                                          (the pooler figures: `preparedStatements`, `listen`)
// Every workload is written once over these three openers; the backend is
// only ever an argument.
import * as cairnq from "cairnq";

const { CairnQ, Worker, SQLiteStore } = cairnq;

/** Whether the built umbrella has the Postgres factories yet (the store is written in parallel). */
export function hasPostgres() {
  return typeof CairnQ.postgres === "function" && typeof Worker.postgres === "function" && typeof cairnq.PostgresStore === "function";
}

/** A client (`CairnQ`) on the target; `close()` closes its store. */
export function openClient(target, options = {}) {
  switch (target.backend) {
    case "sqlite":
      return CairnQ.sqlite(target.path, options);
    case "postgres":
      return CairnQ.postgres(target.dsn, { schema: target.schema, ...target.options, ...options });
    default:
      throw new Error(`unknown backend ${target.backend}`);
  }
}

/** A worker on the target; `close()` closes the store it built. */
export function openWorker(target, options = {}) {
  switch (target.backend) {
    case "sqlite":
      return Worker.sqlite(target.path, options);
    case "postgres":
      return Worker.postgres(target.dsn, { schema: target.schema, ...target.options, ...options });
    default:
      throw new Error(`unknown backend ${target.backend}`);
  }
}

/** A bare `TaskStore` on the target (the claim measurement drives the protocol directly). */
export function openStore(target) {
  switch (target.backend) {
    case "sqlite":
      return new SQLiteStore(target.path);
    case "postgres":
      return new cairnq.PostgresStore(target.dsn, { schema: target.schema, ...target.options });
    default:
      throw new Error(`unknown backend ${target.backend}`);
  }
}

export { newTaskId, newWorkerId } from "@cairnq/protocol/adapter";
