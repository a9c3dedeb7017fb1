/**
 * The Postgres test database: its DSN from `CAIRNQ_TEST_PG_DSN` (the root
 * `pnpm test` provides one), plain admin connections for setup, inspection
 * and cleanup, and fresh schemas so every test file (or test) gets its own
 * tables. Postgres tests never skip: without a DSN, or with one that does not
 * answer, they fail saying what to do.
 */
import { randomBytes } from "node:crypto";
import { redactConnectionString } from "@cairnq/store-kysely";
import pg from "pg";

/** The environment variable naming the test database. */
export const PG_DSN_VARIABLE = "CAIRNQ_TEST_PG_DSN";

/** The test database's connection string, or a loud failure naming what is missing. */
export function pgDsn(): string {
  const dsn = process.env[PG_DSN_VARIABLE];
  if (dsn === undefined || dsn.trim() === "") {
    throw new Error(
      `${PG_DSN_VARIABLE} is not set, so the Postgres tests cannot run (they never skip). ` +
        `Run them through the root \`pnpm test\` (it provides a Postgres), or set ${PG_DSN_VARIABLE}=postgres://user@host:5432/db`,
    );
  }
  return dsn;
}

/** Options of {@link connectAdmin} and {@link PgAdmin}. */
export interface AdminOptions {
  /** Shown in `pg_stat_activity`, so a test can tell its own connection from the store's. @default "cairnq-test-admin" */
  applicationName?: string;
}

/**
 * A connected plain client on the test database. Its `error` events are
 * swallowed (a test that terminates backends must not crash the runner);
 * a server that does not answer within 10 s fails with what to do.
 */
export async function connectAdmin(options: AdminOptions = {}): Promise<pg.Client> {
  const dsn = pgDsn();
  const client = new pg.Client({ connectionString: dsn, connectionTimeoutMillis: 10_000, application_name: options.applicationName ?? "cairnq-test-admin" });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (err) {
    throw new Error(
      `${PG_DSN_VARIABLE} (${redactConnectionString(dsn)}) is unreachable: ${String(err)}. Start Postgres there, or run the root \`pnpm test\`, which provides one`,
      { cause: err },
    );
  }
  return client;
}

/** A schema name no other test uses: `<prefix>_` and ten random hex digits. Not created. */
export function randomSchemaName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString("hex")}`;
}

/**
 * One admin connection, opened on first use and shared by the calls after
 * (a test file keeps one, and closes it in `afterAll`), with the fresh-schema
 * helpers on top.
 */
export class PgAdmin {
  private connecting: Promise<pg.Client> | null = null;

  constructor(private readonly options: AdminOptions = {}) {}

  /** The connection, opened on first use; a failed open is not cached, so the next call tries again. */
  client(): Promise<pg.Client> {
    this.connecting ??= connectAdmin(this.options).catch((err: unknown) => {
      this.connecting = null;
      throw err;
    });
    return this.connecting;
  }

  /** Runs one statement and returns its rows. */
  async q<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<R[]> {
    return (await (await this.client()).query<R>(text, values)).rows;
  }

  /** Creates a fresh schema (see {@link randomSchemaName}) and returns its name. */
  async createSchema(prefix: string): Promise<string> {
    const name = randomSchemaName(prefix);
    await this.q(`CREATE SCHEMA "${name}"`);
    return name;
  }

  /** Drops a schema and everything in it; fails if it is still there afterwards. */
  async dropSchema(name: string): Promise<void> {
    await this.q(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    const left = await this.q("SELECT 1 FROM pg_namespace WHERE nspname = $1", [name]);
    if (left.length > 0) throw new Error(`schema ${name} survived DROP SCHEMA`);
  }

  /** Ends the connection, if one was opened; the next call opens a new one. */
  async close(): Promise<void> {
    const pending = this.connecting;
    this.connecting = null;
    if (pending !== null) await (await pending.catch(() => null))?.end();
  }
}
