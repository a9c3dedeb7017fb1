/**
 * `--db`: a SQLite file or a `postgres://` URL, opened as a CairnQ client.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { CairnQ } from "@cairnq/client";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { UsageError } from "./usage-error.js";

/** What `--db`, `--schema` and `CAIRNQ_DB` say, resolved. */
export interface DatabaseTarget {
  readonly kind: "sqlite" | "postgres";
  /** The file path (SQLite) or the connection string (Postgres). */
  readonly target: string;
  /** The Postgres schema, if given. */
  readonly schema: string | null;
  /** For messages: the file, or the host and database without credentials. */
  readonly description: string;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** Resolves `--db` (or `CAIRNQ_DB`) and `--schema`; a usage error says what to type when they are missing or do not fit. */
export function resolveDatabase(db: string | undefined, schema: string | undefined, env: Readonly<Record<string, string | undefined>>): DatabaseTarget {
  const given = db ?? env.CAIRNQ_DB;
  if (given === undefined || given.trim() === "") {
    throw new UsageError(
      "no database given: pass --db <file.db | postgres://user@host/db> (for example --db ./cairnq.db), or set CAIRNQ_DB",
    );
  }
  if (POSTGRES_URL.test(given)) {
    let url: URL;
    try {
      url = new URL(given);
    } catch {
      throw new UsageError(`--db ${JSON.stringify(given)} is not a valid URL; write it as postgres://user:password@host:5432/database`);
    }
    const where = `${url.host}${url.pathname}`;
    return { kind: "postgres", target: given, schema: schema ?? null, description: `Postgres ${where}${schema ? ` (schema ${schema})` : ""}` };
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
  return new CairnQ(
    new PostgresStore(target.target, {
      ...(target.schema === null ? {} : { schema: target.schema }),
      max: 4,
      ...(options.listen ? {} : { listen: false as const }),
    }),
  );
}
