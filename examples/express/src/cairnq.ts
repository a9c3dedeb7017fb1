/**
 * Where the queue lives. Both processes (API and worker) call these, so they
 * always agree on the database:
 *
 * - `DATABASE_URL` set → Postgres (API and workers may run on many hosts);
 * - otherwise → the SQLite file `CAIRNQ_SQLITE_PATH` (default `./cairnq.db`),
 *   which every process on this host opens by path.
 */
import type { WorkerOptions } from "cairnq";
import { CairnQ, Worker } from "cairnq";

function sqlitePath(): string {
  return process.env.CAIRNQ_SQLITE_PATH ?? "./cairnq.db";
}

/**
 * Postgres only: `CAIRNQ_PG_SCHEMA` names the schema CairnQ's tables live in
 * (created on first connect). Unset, the connection's `search_path` decides.
 */
function postgresOptions(): { schema?: string } {
  const schema = process.env.CAIRNQ_PG_SCHEMA;
  return schema ? { schema } : {};
}

/** One line for the startup log: which database this process uses (without credentials). */
export function describeDatabase(): string {
  const url = process.env.DATABASE_URL;
  if (!url) return `SQLite file ${sqlitePath()}`;
  const { host, pathname } = new URL(url);
  const { schema } = postgresOptions();
  return `Postgres ${host}${pathname}${schema ? ` (schema ${schema})` : ""}`;
}

/** The API's client. `close()` closes the store it opens. */
export function openClient(): CairnQ {
  const url = process.env.DATABASE_URL;
  if (url) return CairnQ.postgres(url, postgresOptions());
  return CairnQ.sqlite(sqlitePath());
}

/**
 * The worker. `close()` (and `serve()` on SIGINT/SIGTERM) closes the store it
 * opens. Errors it survives go to `options.onError` / `options.logger`.
 */
export function openWorker(options: Omit<WorkerOptions, "closeStore"> = {}): Worker {
  const url = process.env.DATABASE_URL;
  if (url) return Worker.postgres(url, { ...postgresOptions(), ...options });
  return Worker.sqlite(sqlitePath(), options);
}
