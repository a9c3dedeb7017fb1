/**
 * The schema of protocol v1 (§3) as migrations, and the runner that applies
 * them (§3.7).
 *
 * The DDL is written once for every dialect: a {@link SchemaFlavor} supplies
 * the column types, JSON checks and dialect-only migrations (0003 is
 * Postgres-only). Ledger names are byte-identical to §3.6, because peers test
 * "applied" by exact string match.
 */
import { CompiledQuery } from "kysely";
import { PROTOCOL_VERSION, ProtocolVersionMismatch, STATUSES, TERMINAL_STATUSES } from "@cairnq/protocol";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_QUEUE, x } from "@cairnq/protocol/adapter";
import type { StoreClock } from "./clock.js";
import type { StatementTemplate } from "./compiler.js";
import { StatementCompiler } from "./compiler.js";
import type { AnyKysely, StoreExecutor } from "./executor.js";
import type { SqlSyntax } from "./sql-syntax.js";
import { META_TABLE, MIGRATIONS_TABLE } from "./statements.js";

/** One ledger entry's work: statements run in order inside its own write transaction. */
export interface Migration {
  /** The full ledger name, including `.sql` (e.g. `0001_init.sql`). */
  readonly name: string;
  readonly statements: readonly string[];
}

/** Every ledger name of protocol v1, in order (§3.6); a dialect may skip one. */
export const MIGRATION_NAMES = [
  "0001_init.sql",
  "0002_purge_index.sql",
  "0003_notify.sql",
  "0004_lease_index.sql",
  "0005_clear_terminal_lease.sql",
  "0006_claim_name_index.sql",
  "0007_purge_status_index.sql",
  "0008_claim_due_index.sql",
  "0009_purge_queue_index.sql",
  "0010_drop_status_index.sql",
] as const;

/*
 * Primary keys are declared exactly `<col> text PRIMARY KEY`, without an
 * explicit NOT NULL (§3.1): other v1 implementations' SQLite databases report
 * `notnull = 0` for them, and a schema diff between two v1 databases must be
 * empty. (Postgres makes a primary key NOT NULL either way.) Databases created
 * by earlier builds, which said `NOT NULL PRIMARY KEY`, are left as they are:
 * the difference changes no behaviour (stores never write a null key), and a
 * migration to rewrite them would be a ledger name no peer knows (§11).
 */

/** What differs between dialects in the DDL of §3. */
export interface SchemaFlavor {
  /** Column types: `int32` for attempt/max_attempts/priority, `int64` for `*_ms`. */
  readonly types: {
    readonly text: string;
    readonly int32: string;
    readonly int64: string;
    readonly float: string;
    readonly json: string;
  };
  /** The CHECK of a JSON column, or `null` when the type validates itself (`jsonb`). */
  jsonCheck(column: string, nullable: boolean): string | null;
  /** The default of `metadata`: `'{}'` (Postgres `'{}'::jsonb`). */
  readonly emptyJsonObject: string;
  /** The statements of `0003_notify.sql`, or `null` to skip it (SQLite has no push channel). */
  readonly notify: readonly string[] | null;
  /** Quotes the `key` column name. */
  quoteId(name: string): string;
}

/**
 * SQLite's schema flavor (§3.1 SQLite column): `text`/`integer`/`real`, JSON
 * as text checked by `json_valid`, no 0003. Also fits libSQL.
 */
export const SQLITE_SCHEMA: SchemaFlavor = Object.freeze({
  types: Object.freeze({ text: "text", int32: "integer", int64: "integer", float: "real", json: "text" }),
  jsonCheck: (column: string, nullable: boolean): string =>
    nullable ? `CHECK (${column} IS NULL OR json_valid(${column}))` : `CHECK (json_valid(${column}))`,
  emptyJsonObject: "'{}'",
  notify: null,
  quoteId: (name: string): string => `"${name}"`,
});

function quoteList(values: readonly string[]): string {
  return values.map((v) => `'${v}'`).join(", ");
}

/** `CREATE TABLE IF NOT EXISTS cairnq_migrations …` (§3.4), run outside any transaction (§3.7 step 1). */
export function ledgerDdl(flavor: SchemaFlavor): string {
  return `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (name ${flavor.types.text} PRIMARY KEY, applied_at_ms ${flavor.types.int64} NOT NULL)`;
}

/** The task table of §3.1, columns in order, with the status CHECK built from `STATUSES`. */
export function tasksTableDdl(flavor: SchemaFlavor): string {
  const t = flavor.types;
  const json = (column: string, nullable: boolean): string => {
    const check = flavor.jsonCheck(column, nullable);
    return check === null ? "" : ` ${check}`;
  };
  const columns = [
    `id ${t.text} PRIMARY KEY`,
    `name ${t.text} NOT NULL`,
    // The defaults are the protocol's own (§3.1), as the status list is; changing one is a protocol change with a migration of its own.
    `queue ${t.text} NOT NULL DEFAULT ${quoteList([DEFAULT_QUEUE])}`,
    `status ${t.text} NOT NULL CHECK (status IN (${quoteList(STATUSES)}))`,
    `payload ${t.json} NOT NULL${json("payload", false)}`,
    `result ${t.json}${json("result", true)}`,
    `error ${t.json}${json("error", true)}`,
    `metadata ${t.json} NOT NULL DEFAULT ${flavor.emptyJsonObject}${json("metadata", false)}`,
    `progress ${t.float}`,
    `message ${t.text}`,
    `attempt ${t.int32} NOT NULL DEFAULT 0`,
    `max_attempts ${t.int32} NOT NULL DEFAULT ${DEFAULT_MAX_ATTEMPTS}`,
    `priority ${t.int32} NOT NULL DEFAULT ${DEFAULT_PRIORITY}`,
    `worker_id ${t.text}`,
    `lease_until_ms ${t.int64}`,
    `run_at_ms ${t.int64} NOT NULL`,
    `cancel_requested_at_ms ${t.int64}`,
    `parent_id ${t.text}`,
    `root_id ${t.text}`,
    `correlation_id ${t.text}`,
    `created_at_ms ${t.int64} NOT NULL`,
    `updated_at_ms ${t.int64} NOT NULL`,
    `completed_at_ms ${t.int64}`,
  ];
  return `CREATE TABLE IF NOT EXISTS cairnq_tasks (${columns.join(", ")})`;
}

function schemaVersion(flavor: SchemaFlavor, version: number): string {
  return `UPDATE ${META_TABLE} SET value = '${version}' WHERE ${flavor.quoteId("key")} = 'schema_version'`;
}

function index(name: string, columns: string, predicate?: string, ifNotExists = true): string {
  return `CREATE INDEX ${ifNotExists ? "IF NOT EXISTS " : ""}cairnq_tasks_${name} ON cairnq_tasks (${columns})${predicate === undefined ? "" : ` WHERE ${predicate}`}`;
}

/**
 * The migrations of protocol v1 for one dialect (§3.6), in ledger order.
 * Every creation is "if not exists" except 0008's drop-and-create, so a
 * database whose objects were built by hand (or by a peer without our
 * ledger) migrates cleanly.
 *
 * @example
 * const migrations = buildMigrations(SQLITE_SCHEMA); // 9 entries: 0003 is Postgres-only
 */
export function buildMigrations(flavor: SchemaFlavor): Migration[] {
  const t = flavor.types;
  const key = flavor.quoteId("key");
  const all: (Migration | null)[] = [
    {
      name: "0001_init.sql",
      statements: [
        tasksTableDdl(flavor),
        `CREATE TABLE IF NOT EXISTS cairnq_task_keys (${key} ${t.text} PRIMARY KEY, ` +
          `task_id ${t.text} NOT NULL REFERENCES cairnq_tasks(id) ON DELETE CASCADE, ` +
          `created_at_ms ${t.int64} NOT NULL, updated_at_ms ${t.int64} NOT NULL)`,
        `CREATE TABLE IF NOT EXISTS ${META_TABLE} (${key} ${t.text} PRIMARY KEY, value ${t.text} NOT NULL)`,
        index("claim_idx", "queue, status, priority DESC, created_at_ms"),
        index("status_idx", "status"),
        index("name_idx", "name"),
        index("root_idx", "root_id"),
        index("correlation_idx", "correlation_id"),
        `INSERT INTO ${META_TABLE} (${key}, value) VALUES ('protocol_version', '${PROTOCOL_VERSION}') ON CONFLICT (${key}) DO NOTHING`,
        `INSERT INTO ${META_TABLE} (${key}, value) VALUES ('schema_version', '1') ON CONFLICT (${key}) DO NOTHING`,
      ],
    },
    { name: "0002_purge_index.sql", statements: [index("completed_idx", "completed_at_ms"), schemaVersion(flavor, 2)] },
    flavor.notify === null ? null : { name: "0003_notify.sql", statements: flavor.notify },
    {
      name: "0004_lease_index.sql",
      statements: [index("lease_idx", "lease_until_ms", "status = 'running' AND lease_until_ms IS NOT NULL"), schemaVersion(flavor, 4)],
    },
    {
      name: "0005_clear_terminal_lease.sql",
      statements: [
        `UPDATE cairnq_tasks SET lease_until_ms = NULL WHERE status <> 'running' AND lease_until_ms IS NOT NULL`,
        schemaVersion(flavor, 5),
      ],
    },
    {
      name: "0006_claim_name_index.sql",
      statements: [index("claim_name_idx", "queue, status, name, priority DESC, created_at_ms"), schemaVersion(flavor, 6)],
    },
    { name: "0007_purge_status_index.sql", statements: [index("status_completed_idx", "status, completed_at_ms"), schemaVersion(flavor, 7)] },
    {
      name: "0008_claim_due_index.sql",
      statements: [
        "DROP INDEX IF EXISTS cairnq_tasks_claim_idx",
        index("claim_idx", "queue, status, priority DESC, run_at_ms, id", undefined, false),
        "DROP INDEX IF EXISTS cairnq_tasks_claim_name_idx",
        index("claim_name_idx", "queue, status, name, priority DESC, run_at_ms, id", undefined, false),
        schemaVersion(flavor, 8),
      ],
    },
    {
      name: "0009_purge_queue_index.sql",
      statements: [
        index("queue_completed_idx", "queue, completed_at_ms", `status IN (${quoteList(TERMINAL_STATUSES)})`),
        schemaVersion(flavor, 9),
      ],
    },
    { name: "0010_drop_status_index.sql", statements: ["DROP INDEX IF EXISTS cairnq_tasks_status_idx", schemaVersion(flavor, 10)] },
  ];
  return all.filter((m): m is Migration => m !== null);
}

const LEDGER_NAME = x.param("name", "text");

const LEDGER_HAS: StatementTemplate = {
  params: [LEDGER_NAME],
  clock: null,
  build: (c) => `SELECT 1 AS applied FROM ${MIGRATIONS_TABLE} WHERE name = ${c.slot(LEDGER_NAME)}`,
};

/** The ledger insert; `applied_at_ms` is the SDK clock on SQLite, `now()` on Postgres (§3.7). */
const LEDGER_INSERT: StatementTemplate = {
  params: [LEDGER_NAME],
  clock: "transaction",
  build: (c) => `INSERT INTO ${MIGRATIONS_TABLE} (name, applied_at_ms) VALUES (${c.slot(LEDGER_NAME)}, ${c.now()})`,
};

/** What {@link runMigrations} needs. */
export interface RunMigrationsOptions {
  readonly db: AnyKysely;
  readonly executor: StoreExecutor;
  readonly syntax: SqlSyntax;
  readonly clock: StoreClock;
  readonly migrations: readonly Migration[];
  /** {@link ledgerDdl} of the dialect. */
  readonly ledgerDdl: string;
  /**
   * A statement run first in every migration transaction so that check and
   * apply share one lock (Postgres: `LOCK TABLE cairnq_migrations IN
   * EXCLUSIVE MODE`); `null` when the transaction itself is exclusive
   * (SQLite `BEGIN IMMEDIATE`). @default null
   */
  readonly lockLedger?: string | null;
}

/**
 * Applies migrations as §3.7 prescribes: create the ledger outside a
 * transaction, then each migration in its own write transaction — skip it if
 * the ledger has its name, else run its statements and record it. Concurrent
 * cold starts therefore apply each migration exactly once. Any error rolls
 * that migration back and fails the connect.
 *
 * First, one plain read of the ledger: when it already names every migration
 * (the common connect: a worker's restart, a CLI command), nothing is written —
 * no write transaction per migration, no ledger lock. Without it, a fleet of
 * workers starting together queued on Postgres's `LOCK TABLE cairnq_migrations
 * IN EXCLUSIVE MODE` once per migration, and on SQLite a connect failed with
 * `DatabaseBusy` while another connection held a write transaction past the
 * busy timeout. A ledger that is missing, unreadable or short of any name takes
 * the path above, so what is written, and the exactly-once rule, are §3.7's.
 *
 * @returns The names this call applied (empty when the database was current).
 */
export async function runMigrations(options: RunMigrationsOptions): Promise<string[]> {
  const { db, executor, migrations } = options;
  if (await ledgerComplete(db, executor, migrations)) return [];
  const compiler = new StatementCompiler(options.syntax, options.clock);
  await executor.write(db, () => CompiledQuery.raw(options.ledgerDdl));
  const applied: string[] = [];
  for (const migration of migrations) {
    const params = { name: migration.name };
    const ran = await executor.writeTransaction(db, async (tx) => {
      if (options.lockLedger !== undefined && options.lockLedger !== null) {
        await tx.executeQuery(CompiledQuery.raw(options.lockLedger));
      }
      const found = await tx.executeQuery(compiler.statement(LEDGER_HAS, params).query(params));
      if (found.rows.length > 0) return false;
      for (const statement of migration.statements) await tx.executeQuery(CompiledQuery.raw(statement));
      await tx.executeQuery(compiler.statement(LEDGER_INSERT, params).query(params));
      return true;
    });
    if (ran) applied.push(migration.name);
  }
  return applied;
}

/** Whether the ledger names every one of `migrations` (false when it cannot be read: absent, say). */
async function ledgerComplete(db: AnyKysely, executor: StoreExecutor, migrations: readonly Migration[]): Promise<boolean> {
  try {
    const { rows } = await executor.read(db, () => CompiledQuery.raw(`SELECT name FROM ${MIGRATIONS_TABLE}`));
    const names = new Set(rows.map((row) => String(row.name)));
    return migrations.every((migration) => names.has(migration.name));
  } catch {
    return false;
  }
}

/**
 * The stored `protocol_version` (§5.17): the meta value as a number, `0` when
 * the row is absent, `NaN` when it is not an integer.
 */
export async function readProtocolVersion(db: AnyKysely, executor: StoreExecutor, syntax: SqlSyntax): Promise<number> {
  return versionOf(await readProtocolVersionText(db, executor, syntax));
}

/** The `protocol_version` meta value as stored, or null without the row. */
async function readProtocolVersionText(db: AnyKysely, executor: StoreExecutor, syntax: SqlSyntax): Promise<string | null> {
  const result = await executor.read(db, () =>
    CompiledQuery.raw(`SELECT value FROM ${META_TABLE} WHERE ${syntax.quoteId("key")} = 'protocol_version'`),
  );
  const row = result.rows[0];
  return row === undefined ? null : String(row.value);
}

/** A stored version as a number: 0 without the row, NaN for a value that is not an integer. */
function versionOf(text: string | null): number {
  if (text === null) return 0;
  return /^\d+$/.test(text) ? Number(text) : Number.NaN;
}

/**
 * The protocol-version guard (§11): refuses any database whose version is not exactly {@link PROTOCOL_VERSION},
 * naming a stored value that is not an integer as the database holds it.
 */
export async function checkProtocolVersion(db: AnyKysely, executor: StoreExecutor, syntax: SqlSyntax): Promise<void> {
  const text = await readProtocolVersionText(db, executor, syntax);
  const stored = versionOf(text);
  if (stored !== PROTOCOL_VERSION) {
    throw new ProtocolVersionMismatch(stored, PROTOCOL_VERSION, Number.isNaN(stored) && text !== null ? { storedText: text } : undefined);
  }
}
