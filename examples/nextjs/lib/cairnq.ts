/**
 * The app's CairnQ client: one per server process, created on first use.
 *
 * Why a module-level singleton rather than a client per request:
 * - A client owns its database connections (a `pg` pool on Postgres; the
 *   SQLite connections and their prepared statements) and checks the schema
 *   when it first connects. Per request, that is a new pool and a new check
 *   every time — and a leak unless every request remembers `close()`.
 * - `next start` serves every request from one long-lived Node process, so
 *   one client, shared by all route handlers, is the right number.
 * - `next dev` re-evaluates modules when files change, which would create a
 *   new client (and pool) per edit; keeping it on `globalThis` survives that.
 *
 * It is never closed explicitly: it lives as long as the server process.
 * Everything it wrote is committed when the call returns, so stopping the
 * server loses nothing.
 *
 * Import this only from server code (route handlers, server components).
 */
import { CairnQ } from "cairnq";

const globalForCairnQ = globalThis as typeof globalThis & { cairnq?: CairnQ };

/** Postgres when `DATABASE_URL` is set; otherwise the SQLite file `CAIRNQ_SQLITE_PATH` (default ./cairnq.db). */
function openClient(): CairnQ {
  const url = process.env.DATABASE_URL;
  if (url) return CairnQ.postgres(url);
  return CairnQ.sqlite(process.env.CAIRNQ_SQLITE_PATH ?? "./cairnq.db");
}

export function getCairnQ(): CairnQ {
  return (globalForCairnQ.cairnq ??= openClient());
}
