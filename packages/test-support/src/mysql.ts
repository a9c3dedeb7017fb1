/**
 * The MySQL side of the tests: the test database from `CAIRNQ_TEST_MYSQL_DSN`
 * (the root `pnpm test` provides a private one, see scripts/mysql-env.mjs),
 * and an admin connection that makes and drops databases beside it. Never
 * skips: without a DSN it fails saying what to do.
 */
import { createConnection } from "mysql2/promise";
import type { Connection } from "mysql2/promise";

/**
 * The test server's DSN from `CAIRNQ_TEST_MYSQL_DSN` (the test command sets it to a private database);
 * a missing one fails loudly instead of skipping.
 */
export function mysqlDsn(): string {
  const dsn = process.env.CAIRNQ_TEST_MYSQL_DSN;
  if (dsn === undefined || dsn === "") {
    throw new Error("CAIRNQ_TEST_MYSQL_DSN is not set: run the tests through `pnpm test` (which starts MariaDB), or export mysql://root@127.0.0.1:3306/<database>");
  }
  return dsn;
}

/** The DSN `dsn` with its database replaced by `database`. */
export function withDatabase(dsn: string, database: string): string {
  const url = new URL(dsn);
  url.pathname = `/${database}`;
  return url.toString();
}

/** The tables a reused database keeps: the ledger and the protocol meta rows, which migrations wrote. */
const KEPT = new Set(["cairnq_migrations", "cairnq_meta", "cairnq_ext_key_locks"]);

/** Creates and drops per-case databases named after the DSN's own (`<db>_<case id>`). */
export class MySQLAdmin {
  #connection: Promise<Connection> | null = null;
  readonly #base: string;

  constructor(private readonly dsn: string) {
    this.#base = decodeURIComponent(new URL(dsn).pathname.slice(1)) || "cairnq_test";
  }

  #conn(): Promise<Connection> {
    this.#connection ??= createConnection({ uri: this.dsn });
    return this.#connection;
  }

  #name(id: string): string {
    return `${this.#base}_${id.replace(/[^A-Za-z0-9_]/g, "_")}`.slice(0, 64);
  }

  /** A fresh database for `id`; its DSN. */
  async createDatabase(id: string): Promise<string> {
    const name = this.#name(id);
    const conn = await this.#conn();
    await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    return withDatabase(this.dsn, name);
  }

  async dropDatabase(id: string): Promise<void> {
    const conn = await this.#conn();
    await conn.query(`DROP DATABASE IF EXISTS \`${this.#name(id)}\``);
  }

  /**
   * Empties every CairnQ table of database `id` (made by {@link MySQLAdmin.createDatabase}), keeping
   * the schema: a migrated database reused by the next case costs a few deletes, where a new one
   * costs its migrations' DDL (a third of the kit's time on MariaDB).
   */
  async emptyDatabase(id: string): Promise<void> {
    const conn = await this.#conn();
    const name = this.#name(id);
    const [rows] = await conn.query("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = ? AND table_name LIKE 'cairnq\\_%'", [name]);
    const tables = (rows as { t: string }[]).map((r) => r.t).filter((t) => !KEPT.has(t));
    // Children first: the extension tables and the key rows reference cairnq_tasks.
    tables.sort((a, b) => Number(a === "cairnq_tasks") - Number(b === "cairnq_tasks"));
    for (const table of tables) await conn.query(`DELETE FROM \`${name}\`.\`${table}\``);
  }

  async close(): Promise<void> {
    if (this.#connection !== null) await (await this.#connection).end();
  }
}
