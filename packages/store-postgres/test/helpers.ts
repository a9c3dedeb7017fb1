import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, afterEach } from "vitest";
import type { PostgresStoreOptions, PostgresTarget } from "../src/index.js";
import { PostgresStore } from "../src/index.js";

/**
 * The test database, from `CAIRNQ_TEST_PG_DSN` (the root `pnpm test` sets
 * it). Postgres tests never skip: without it they fail, saying what to do.
 */
export function pgDsn(): string {
  const dsn = process.env.CAIRNQ_TEST_PG_DSN;
  if (dsn === undefined || dsn.trim() === "") {
    throw new Error(
      "CAIRNQ_TEST_PG_DSN is not set, so the Postgres tests cannot run (they never skip). " +
        "Run them through the root `pnpm test` (it provides a Postgres), or set CAIRNQ_TEST_PG_DSN=postgres://user@host:5432/db",
    );
  }
  return dsn;
}

let adminClient: Promise<pg.Client> | null = null;

/** One plain connection per test file for setup, inspection and cleanup; fails loudly when the server does not answer. */
export function admin(): Promise<pg.Client> {
  adminClient ??= (async () => {
    const dsn = pgDsn();
    const client = new pg.Client({ connectionString: dsn, connectionTimeoutMillis: 10_000 });
    client.on("error", () => {});
    try {
      await client.connect();
    } catch (err) {
      throw new Error(`CAIRNQ_TEST_PG_DSN (${redact(dsn)}) is unreachable: ${String(err)}. Start Postgres there, or run the root \`pnpm test\`, which provides one`, {
        cause: err,
      });
    }
    return client;
  })();
  return adminClient;
}

function redact(dsn: string): string {
  return dsn.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

/** Runs one statement on the admin connection. */
export async function q<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
  return (await (await admin()).query<R>(text, values)).rows;
}

const schemas = new Set<string>();

/** A fresh schema name (not created), dropped after the test. */
export function schemaName(prefix = "cq_pg"): string {
  const name = `${prefix}_${randomBytes(5).toString("hex")}`;
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
  await q(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  schemas.delete(name);
}

const stores: PostgresStore[] = [];
const pools: pg.Pool[] = [];
const clients: pg.Client[] = [];
const children: ChildProcessWithoutNullStreams[] = [];

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

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures");
const packageRoot = path.resolve(fixtures, "../..");

/** Starts `node` on a TypeScript fixture through tsx, with workspace packages mapped to their sources. */
export function spawnFixture(fixture: string, args: readonly string[]): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, ["--import", "tsx", "--import", path.join(fixtures, "register-src.mjs"), path.join(fixtures, fixture), ...args], {
    cwd: packageRoot,
    env: process.env,
  });
  children.push(child);
  return child;
}

/** Resolves with the child's next stdout line matching `predicate` (rejects when it exits first). */
export function nextLine(child: ChildProcessWithoutNullStreams, predicate: (line: string) => boolean = () => true): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    let stderr = "";
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (predicate(line)) {
          cleanup();
          resolve(line);
          return;
        }
      }
    };
    const onErr = (chunk: Buffer): void => {
      stderr += chunk.toString();
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`child exited (${code}) before the expected line; stderr: ${stderr}`));
    };
    const cleanup = (): void => {
      child.stdout.off("data", onData);
      child.stderr.off("data", onErr);
      child.off("exit", onExit);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onErr);
    child.on("exit", onExit);
  });
}

/** Resolves with the child's exit code. */
export function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
  await Promise.all(pools.splice(0).map((pool) => pool.end().catch(() => {})));
  for (const name of [...schemas]) await dropSchema(name);
});

afterAll(async () => {
  const pending = adminClient;
  adminClient = null;
  if (pending !== null) await (await pending.catch(() => null))?.end();
});
