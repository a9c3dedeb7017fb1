/**
 * The Postgres side of the multi-process tests: the test database from
 * `CAIRNQ_TEST_PG_DSN` (the root `pnpm test` provides one), a fresh schema
 * per test (dropped afterwards), and one plain admin connection per test file
 * for setup, inspection (`pg_stat_activity`) and `pg_terminate_backend`.
 *
 * These tests never skip: without a DSN, or with one that does not answer,
 * they fail saying what to do.
 */
import { PgAdmin, pgDsn, randomSchemaName } from "@cairnq/test-support";

export { pgDsn } from "@cairnq/test-support";

/** The file's admin connection, opened on first use (close it with {@link closeAdmin}). */
const pgAdmin = new PgAdmin();

/** Runs one statement on the admin connection. */
export function q<R extends Record<string, unknown> = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
  return pgAdmin.q<R>(text, values);
}

export function closeAdmin(): Promise<void> {
  return pgAdmin.close();
}

/**
 * A fresh schema name (not created: the first store to connect with the
 * `schema` option creates it, as in production). Checks the server answers
 * first, so a missing database fails here with the reason.
 */
export async function freshSchemaName(prefix: string): Promise<string> {
  await pgAdmin.client();
  return randomSchemaName(prefix);
}

/** Drops a test schema and everything in it; fails if it is still there afterwards. */
export function dropSchema(schema: string): Promise<void> {
  return pgAdmin.dropSchema(schema);
}

/**
 * The fixture argument for a fresh schema: `postgres:<dsn>#schema=<name>`.
 * The fragment never reaches pg: fixtures/backend.mjs takes it off and passes
 * `schema` to `CairnQ.postgres` / `Worker.postgres`.
 */
export function fixtureArg(schema: string): string {
  return `postgres:${pgDsn()}#schema=${schema}`;
}

/**
 * The `application_name` fixtures/backend.mjs gives every connection of a
 * fixture process (pool and LISTEN alike, through the connection string):
 * how a test finds one process's backends in `pg_stat_activity`.
 */
export function fixtureApplicationName(pid: number): string {
  return `cairnq-fixture-${pid}`;
}

/** One backend of a fixture process, as `pg_stat_activity` shows it. */
export interface Backend {
  pid: number;
  state: string | null;
  query: string;
  /** True for the store's dedicated LISTEN connection (its last statement is a LISTEN, or the UNLISTEN of its check channel). */
  listen: boolean;
}

/** Every backend of the fixture process `pid` on the test database. */
export async function backendsOf(pid: number): Promise<Backend[]> {
  const rows = await q<{ pid: number; state: string | null; query: string | null }>(
    "SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() ORDER BY pid",
    [fixtureApplicationName(pid)],
  );
  return rows.map((row) => ({ pid: row.pid, state: row.state, query: row.query ?? "", listen: /^\s*(UN)?LISTEN cairnq_/i.test(row.query ?? "") }));
}

/** `pg_terminate_backend` on each pid; returns the pids the server terminated (one that ended meanwhile is left out). */
export async function terminate(pids: readonly number[]): Promise<number[]> {
  if (pids.length === 0) return [];
  const rows = await q<{ pid: number; ok: boolean }>("SELECT pid, pg_terminate_backend(pid) AS ok FROM unnest($1::int[]) AS pid", [pids]);
  return rows.filter((row) => row.ok).map((row) => row.pid);
}
