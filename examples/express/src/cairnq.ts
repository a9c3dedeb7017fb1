/**
 * Where the queue lives. Both processes (API and worker) call these, so they
 * always agree on the database:
 *
 * - `DATABASE_URL` set → Postgres (API and workers may run on many hosts);
 * - otherwise → the SQLite file `CAIRNQ_SQLITE_PATH` (default `./cairnq.db`),
 *   which every process on this host opens by path.
 */
import { PostgresStore } from "@cairnq/store-postgres";
import type { WorkerOptions } from "cairnq";
import { CairnQ, Worker } from "cairnq";

function sqlitePath(): string {
  return process.env.CAIRNQ_SQLITE_PATH ?? "./cairnq.db";
}

/** One line for the startup log: which database this process uses (without credentials). */
export function describeDatabase(): string {
  const url = process.env.DATABASE_URL;
  if (!url) return `SQLite file ${sqlitePath()}`;
  const { host, pathname } = new URL(url);
  return `Postgres ${host}${pathname}`;
}

/** The API's client. `close()` closes the store it opens. */
export function openClient(): CairnQ {
  const url = process.env.DATABASE_URL;
  // Once the umbrella ships it, this line becomes `CairnQ.postgres(url)`.
  if (url) return new CairnQ(new PostgresStore(url));
  return CairnQ.sqlite(sqlitePath());
}

/** The worker. `close()` (and `serve()` on SIGINT/SIGTERM) closes the store it opens. */
export function openWorker(options: Omit<WorkerOptions, "closeStore"> = {}): Worker {
  const url = process.env.DATABASE_URL;
  // Once the umbrella ships it, this line becomes `Worker.postgres(url, options)`.
  if (url) return new Worker(new PostgresStore(url), { ...options, closeStore: true });
  return Worker.sqlite(sqlitePath(), options);
}
