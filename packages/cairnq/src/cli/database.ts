/**
 * `--db`: a SQLite file, a `postgres://` URL or a `mysql://` URL, opened as a CairnQ client; a URL of
 * another scheme is refused (not taken for a file name), and so is a MySQL URL that names no database.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { CairnQ } from "@cairnq/client";
import { MySQLStore } from "@cairnq/store-mysql";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import type pg from "pg";
import { UsageError } from "./usage-error.js";

/** What `--db`, `--schema` and `CAIRNQ_DB` say, resolved. */
export interface DatabaseTarget {
  readonly kind: "sqlite" | "postgres" | "mysql";
  /** The file path (SQLite) or the connection string (Postgres, MySQL). */
  readonly target: string;
  /** The Postgres schema, if given. */
  readonly schema: string | null;
  /** For messages: the file, or the host and database without credentials. */
  readonly description: string;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//i;
const MYSQL_URL = /^(mysql|mariadb):\/\//i;
/** Anything written as `<scheme>://…`: a URL, never a SQLite file name. */
const ANY_URL = /^[a-z][a-z0-9+.-]*:\/\//i;
/** The `--db` URL schemes the CLI opens, for the message that refuses another one. */
const SCHEMES = "postgres://, postgresql://, mysql:// or mariadb://";

/** `given` as a URL; a usage error that shows `example` when it is not one. */
function parseDbUrl(given: string, example: string): URL {
  try {
    return new URL(given);
  } catch {
    throw new UsageError(`--db ${JSON.stringify(given)} is not a valid URL; write it as ${example}`);
  }
}

/** Resolves `--db` (or `CAIRNQ_DB`) and `--schema`; a usage error says what to type when they are missing or do not fit. */
export function resolveDatabase(db: string | undefined, schema: string | undefined, env: Readonly<Record<string, string | undefined>>): DatabaseTarget {
  const given = db ?? env.CAIRNQ_DB;
  if (given === undefined || given.trim() === "") {
    throw new UsageError(
      "no database given: pass --db <file.db | postgres://user@host/db | mysql://user@host/db> (for example --db ./cairnq.db), or set CAIRNQ_DB",
    );
  }
  if (POSTGRES_URL.test(given)) {
    const url = parseDbUrl(given, "postgres://user:password@host:5432/database");
    const where = `${url.host}${url.pathname}`;
    return { kind: "postgres", target: given, schema: schema ?? null, description: `Postgres ${where}${schema ? ` (schema ${schema})` : ""}` };
  }
  if (MYSQL_URL.test(given)) {
    const url = parseDbUrl(given, "mysql://user:password@host:3306/database");
    if (schema !== undefined) {
      throw new UsageError(`--schema applies to Postgres only; on MySQL the database in the URL is the schema (mysql://user@host:3306/<database>)`);
    }
    if (url.pathname.replace(/^\/+/, "") === "") {
      throw new UsageError(`--db ${JSON.stringify(given)} names no database; put it after the host: mysql://user@${url.host || "host:3306"}/<database>`);
    }
    return { kind: "mysql", target: given, schema: null, description: `MySQL ${url.host}${url.pathname}` };
  }
  // Resolved as a path, `file:./q.db` would name a file in a directory `file:.` that migrate creates; the
  // SQLite store refuses URI filenames for the same reason (not every driver reads them), and so does the CLI.
  if (/^file:/i.test(given)) {
    throw new UsageError(
      `--db ${JSON.stringify(given)} is a SQLite URI filename ('file:…'), which is not supported since not every driver reads them; give a plain path instead (for example --db ./cairnq.db)`,
    );
  }
  // Resolved as a path, `:memory:` would be a file of that name: a private in-memory database ends with
  // the command, so there is nothing for the CLI to open.
  if (given === ":memory:") {
    throw new UsageError(
      '--db ":memory:" names a private in-memory SQLite database, which exists only inside the process that opens it, so there is nothing for the CLI to read; give the file your workers use (for example --db ./cairnq.db)',
    );
  }
  if (ANY_URL.test(given)) {
    const scheme = given.slice(0, given.indexOf(":"));
    throw new UsageError(`--db ${JSON.stringify(given)} has the URL scheme ${scheme}://, which the CLI cannot open: pass a ${SCHEMES} URL, or a SQLite file path`);
  }
  if (schema !== undefined) {
    throw new UsageError(`--schema applies to Postgres only, and --db ${JSON.stringify(given)} is a SQLite file; drop --schema, or pass a postgres:// URL`);
  }
  const path = resolve(given);
  return { kind: "sqlite", target: path, schema: null, description: `SQLite file ${path}` };
}

/**
 * Opens a client on the target. A SQLite file that does not exist is an
 * error unless `create` (only `migrate` creates a database): a typo in
 * `--db` must not quietly make an empty one. `listen`: start Postgres
 * LISTEN for push signals (the dashboard), not worth a connection for a
 * one-shot command.
 */
export function openClient(target: DatabaseTarget, options: { create: boolean; listen: boolean }): CairnQ {
  if (target.kind === "sqlite") {
    if (!options.create && !existsSync(target.target)) {
      throw new UsageError(`no database file at ${target.target}; check --db, or create one with: cairnq migrate --db ${JSON.stringify(target.target)}`);
    }
    return new CairnQ(new SQLiteStore(target.target));
  }
  if (target.kind === "mysql") return new CairnQ(new MySQLStore(target.target, { max: 4 }));
  return new CairnQ(
    new PostgresStore(target.target, {
      ...(target.schema === null ? {} : { schema: target.schema }),
      max: 4,
      ...(options.listen ? {} : { listen: false as const }),
    }),
  );
}

/**
 * Connecting a store migrates: a typo in `--db` or `--schema` (or a URL
 * naming the wrong database, or an application's own SQLite file) would
 * quietly get an empty CairnQ installation. Every command but `migrate`
 * first checks that the database holds CairnQ's tasks table, and otherwise
 * says how to create it. A server that does not answer, or a file SQLite
 * cannot read, is left to the store, whose message says why.
 */
export async function requireInstalled(target: DatabaseTarget): Promise<void> {
  if (target.kind === "mysql") return requireInstalledMySQL(target);
  if (target.kind === "sqlite") return requireInstalledSQLite(target);
  const Client = (createRequire(import.meta.url)("pg") as typeof pg).Client;
  const client = new Client({ connectionString: target.target, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch {
    return;
  }
  try {
    const { rows } = await client.query<{ schema: string | null; installed: boolean }>(
      "SELECT s.schema, to_regclass(format('%I.cairnq_tasks', s.schema)) IS NOT NULL AS installed FROM (SELECT coalesce($1::text, current_schema()) AS schema) AS s",
      [target.schema],
    );
    const row = rows[0];
    if (row?.installed !== true) {
      const schema = target.schema ?? row?.schema ?? "public";
      throw new UsageError(
        `no CairnQ tables in schema ${JSON.stringify(schema)} (${target.description}); check --db and --schema, or create them with: cairnq migrate --db <url>${target.schema === null ? "" : ` --schema ${target.schema}`}`,
      );
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/** The minimum of a SQLite binding (better-sqlite3, `node:sqlite`) the check below uses. */
interface ReadOnlySQLite {
  prepare(sql: string): { get(): unknown };
  close(): void;
}

/**
 * `file` opened read-only (never created, never written: not even its
 * journal mode changes) with better-sqlite3, else `node:sqlite`; `null` when
 * neither loads (the store then says how to install a driver).
 */
function openReadOnly(file: string): ReadOnlySQLite | null {
  const require = createRequire(import.meta.url);
  let betterSqlite3: new (file: string, options: { readonly: boolean; fileMustExist: boolean }) => ReadOnlySQLite;
  try {
    betterSqlite3 = require("better-sqlite3") as typeof betterSqlite3;
  } catch {
    try {
      const { DatabaseSync } = require("node:sqlite") as { DatabaseSync: new (file: string, options: { readOnly: boolean }) => ReadOnlySQLite };
      return new DatabaseSync(file, { readOnly: true });
    } catch {
      return null;
    }
  }
  return new betterSqlite3(file, { readonly: true, fileMustExist: true });
}

/**
 * {@link requireInstalled} on SQLite: the file must hold `cairnq_tasks`. It is
 * read through a read-only handle, so a refused file is left byte for byte as
 * it was. A missing file is refused by {@link openClient}; one SQLite cannot
 * read (not a database, a directory) is left to the store's explanation.
 */
function requireInstalledSQLite(target: DatabaseTarget): void {
  if (!existsSync(target.target)) return;
  let installed: boolean;
  try {
    const db = openReadOnly(target.target);
    if (db === null) return;
    try {
      const row = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'cairnq_tasks'").get() as { n: number | bigint } | undefined;
      installed = Number(row?.n) === 1;
    } finally {
      db.close();
    }
  } catch {
    return;
  }
  if (!installed) {
    throw new UsageError(`no CairnQ tables in ${target.description}; check --db, or create them with: cairnq migrate --db ${JSON.stringify(target.target)}`);
  }
}

/** The minimum of `mysql2/promise` the check below uses. */
interface MySQLPromiseDriver {
  createConnection(options: { uri: string; connectTimeout: number }): Promise<{
    query(sql: string): Promise<[unknown, unknown]>;
    end(): Promise<void>;
  }>;
}

/** {@link requireInstalled} on MySQL: the URL's database must hold `cairnq_tasks`. */
async function requireInstalledMySQL(target: DatabaseTarget): Promise<void> {
  let driver: MySQLPromiseDriver;
  try {
    driver = createRequire(import.meta.url)("mysql2/promise") as MySQLPromiseDriver;
  } catch {
    return; // the store says how to install the driver
  }
  let conn: Awaited<ReturnType<MySQLPromiseDriver["createConnection"]>>;
  try {
    conn = await driver.createConnection({ uri: target.target.replace(/^mariadb:/i, "mysql:"), connectTimeout: 10_000 });
  } catch {
    return;
  }
  try {
    const [rows] = await conn.query("SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'cairnq_tasks'");
    if (Number((rows as { n: unknown }[])[0]?.n) !== 1) {
      throw new UsageError(`no CairnQ tables in ${target.description}; check --db, or create them with: cairnq migrate --db <url>`);
    }
  } finally {
    await conn.end().catch(() => {});
  }
}
