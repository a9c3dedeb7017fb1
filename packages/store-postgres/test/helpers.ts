import pg from "pg";
import { afterAll, afterEach } from "vitest";
import { PgAdmin, killChildren, pgDsn, randomSchemaName, fixtureSpawner } from "@cairnq/test-support";
import type { PostgresStoreOptions, PostgresTarget } from "../src/index.js";
import { PostgresStore } from "../src/index.js";

export { pgDsn } from "@cairnq/test-support";

/** The file's admin connection for setup, inspection and cleanup (closed after the file's tests). */
const pgAdmin = new PgAdmin();

/** The admin connection (opened on first use; fails loudly when the server does not answer). */
export function admin(): Promise<pg.Client> {
  return pgAdmin.client();
}

/** Runs one statement on the admin connection. */
export function q<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
  return pgAdmin.q<R>(text, values);
}

const schemas = new Set<string>();

/** A fresh schema name (not created), dropped after the test. */
export function schemaName(prefix = "cq_pg"): string {
  const name = randomSchemaName(prefix);
  schemas.add(name);
  return name;
}

/** Creates a fresh schema, dropped after the test. */
export async function freshSchema(prefix?: string): Promise<string> {
  const name = schemaName(prefix);
  await q(`CREATE SCHEMA "${name}"`);
  return name;
}

/** Drops a schema and everything in it. */
export async function dropSchema(name: string): Promise<void> {
  await pgAdmin.dropSchema(name);
  schemas.delete(name);
}

const stores: PostgresStore[] = [];
const pools: pg.Pool[] = [];
const clients: pg.Client[] = [];

/** A store closed after the test; with no target, a connection string and a fresh schema. */
export function openStore(target?: PostgresTarget, options: PostgresStoreOptions = {}): PostgresStore {
  const store = target === undefined ? new PostgresStore(pgDsn(), { schema: schemaName(), ...options }) : new PostgresStore(target, options);
  stores.push(store);
  return store;
}

/** A `pg.Pool` whose connections resolve to `schema` (ended after the test). */
export function poolFor(schema: string, config: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: pgDsn(), options: `-c search_path="${schema}"`, max: 4, ...config });
  pool.on("error", () => {});
  pools.push(pool);
  return pool;
}

/** A connected plain client (ended after the test). */
export async function client(config: pg.ClientConfig = {}): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: pgDsn(), ...config });
  c.on("error", () => {});
  await c.connect();
  clients.push(c);
  return c;
}

/** Polls `check` every 10 ms until it returns true or `timeoutMs` passes; returns the last answer. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Starts `node` on one of this package's fixtures (`fixtureSpawner` of @cairnq/test-support); killed after the test. */
export const spawnFixture = fixtureSpawner(new URL(".", import.meta.url));

export { exited, nextLine } from "@cairnq/test-support";

afterEach(async () => {
  killChildren();
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
  await Promise.all(pools.splice(0).map((pool) => pool.end().catch(() => {})));
  for (const name of [...schemas]) await dropSchema(name);
});

afterAll(() => pgAdmin.close());
