import { CompiledQuery } from "kysely";
import { SchemaMismatch, TERMINAL_STATUSES } from "@cairnq/protocol";
import type { AnyKysely, SchemaFlavor, StoreClock, StoreExecutor, SqlSyntax } from "@cairnq/store-kysely";
import { buildMigrations, ledgerDdl, MigratingSchemaManager } from "@cairnq/store-kysely";
import type { PostgresConnection } from "./postgres-connection.js";
import type { PostgresWakeups } from "./postgres-wakeups.js";
import { DONE_CHANNEL, QUEUED_CHANNEL } from "./postgres-wakeups.js";

const TERMINAL = TERMINAL_STATUSES.map((status) => `'${status}'`).join(", ");

/**
 * `0003_notify.sql` (§3.8): the trigger function and the trigger, re-runnable
 * (create-or-replace, then drop-if-exists and create). Entry into `queued`
 * (insert, requeue, retry, recovery) notifies `cairnq_queued` with the queue;
 * entry into a terminal status notifies `cairnq_done` with the task id. The
 * WHEN clause filters every update that leaves the row `running` (claim,
 * cancel of a running task), and heartbeat/progress never assign `status`,
 * so `UPDATE OF status` does not fire for them.
 */
export const NOTIFY_STATEMENTS: readonly string[] = [
  `CREATE OR REPLACE FUNCTION cairnq_notify() RETURNS trigger LANGUAGE plpgsql AS $cairnq$
BEGIN
  IF NEW.status = 'queued' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
    PERFORM pg_notify('${QUEUED_CHANNEL}', NEW.queue);
  ELSIF TG_OP = 'UPDATE' AND NEW.status IN (${TERMINAL}) AND OLD.status NOT IN (${TERMINAL}) THEN
    PERFORM pg_notify('${DONE_CHANNEL}', NEW.id);
  END IF;
  RETURN NULL;
END;
$cairnq$`,
  "DROP TRIGGER IF EXISTS cairnq_tasks_notify ON cairnq_tasks",
  "CREATE TRIGGER cairnq_tasks_notify AFTER INSERT OR UPDATE OF status ON cairnq_tasks FOR EACH ROW " +
    "WHEN (NEW.status IS DISTINCT FROM 'running') EXECUTE FUNCTION cairnq_notify()",
];

/**
 * Postgres's schema flavor (§3.1 Postgres column): `text`, 32-bit `integer`
 * for attempt/max_attempts/priority, `bigint` for `*_ms`, `double
 * precision`, `jsonb` (no JSON CHECK: the type validates itself), metadata
 * default `'{}'::jsonb`, and the notify trigger as `0003_notify.sql`.
 */
export const POSTGRES_SCHEMA: SchemaFlavor = Object.freeze({
  types: Object.freeze({ text: "text", int32: "integer", int64: "bigint", float: "double precision", json: "jsonb" }),
  jsonCheck: (): null => null,
  emptyJsonObject: "'{}'::jsonb",
  notify: NOTIFY_STATEMENTS,
  quoteId: (name: string): string => `"${name}"`,
});

/** The Postgres migrations of protocol v1: 0001 … 0010, 0003 included (§3.6). */
export const POSTGRES_MIGRATIONS = buildMigrations(POSTGRES_SCHEMA);

/** Run first in every migration transaction, so that check and apply share one lock (§3.7). */
export const LOCK_LEDGER = "LOCK TABLE cairnq_migrations IN EXCLUSIVE MODE";

/**
 * §5.17 `installations`: one row per schema holding a regular table named
 * `cairnq_tasks`, each with this connection's `current_schema()`; exactly one
 * row with `schema` NULL when there is none. Scalar text columns.
 */
export const INSTALLATIONS_SQL =
  "SELECT current_schema()::text AS current_schema, i.schema FROM (SELECT 1) AS one LEFT JOIN (" +
  "SELECT n.nspname::text AS schema FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace " +
  "WHERE c.relname = 'cairnq_tasks' AND c.relkind = 'r') AS i ON TRUE ORDER BY i.schema";

/** What {@link readInstallations} returns. */
export interface Installations {
  /** This connection's `current_schema()`: the first schema of `search_path` that exists, or `null`. */
  readonly currentSchema: string | null;
  /** Schemas holding `cairnq_tasks`, in order. */
  readonly schemas: readonly string[];
}

/** Reads §5.17 `installations`. */
export async function readInstallations(db: AnyKysely, executor: StoreExecutor): Promise<Installations> {
  const rows = (await executor.read(db, () => CompiledQuery.raw(INSTALLATIONS_SQL))).rows;
  const current = rows[0]?.current_schema;
  return {
    currentSchema: typeof current === "string" ? current : null,
    schemas: rows.map((row) => row.schema).filter((schema): schema is string => typeof schema === "string"),
  };
}

/**
 * The installation guard (§10), before migrations: with `schema`, the
 * connection must resolve there; without it, connecting must not create a
 * second installation beside an existing one that this connection cannot see.
 *
 * @throws SchemaMismatch naming the schema option, `current_schema` and the installations found.
 */
export function checkInstallation(schema: string | null, found: Installations): void {
  const { currentSchema, schemas } = found;
  const fields = { schema, currentSchema, installations: schemas };
  if (schema !== null) {
    if (currentSchema === schema) return;
    throw new SchemaMismatch(
      `the schema option is "${schema}" but this connection resolves to ${currentSchema === null ? "no schema (no schema on its search_path exists)" : `schema "${currentSchema}"`}; ` +
        `CairnQ's SQL never names a schema, so it would use the wrong one. Set the pool's or Kysely's search_path to "${schema}" ` +
        `(e.g. pg.Pool({ options: '-c search_path=${schema}' })), or pass a connection string so CairnQ sets it`,
      fields,
    );
  }
  if (currentSchema === null || schemas.length === 0 || schemas.includes(currentSchema)) return;
  const where = schemas.map((s) => `"${s}"`).join(", ");
  throw new SchemaMismatch(
    `CairnQ is installed in schema ${where} but this connection's current_schema is "${currentSchema}", where it is not; ` +
      `connecting would create a second installation that workers on ${where} never see. ` +
      `Pass { schema: "${schemas[0] as string}" } (or set search_path to it) to use the existing installation, ` +
      `or pass { schema: "${currentSchema}" } to install here on purpose`,
    fields,
  );
}

/**
 * Errors of a concurrent `CREATE … IF NOT EXISTS` that lost a race: the object exists now. A table's row type
 * can lose the race on its own, reported as `type "…" already exists` (42710, duplicate_object).
 */
const LOST_CREATE_RACE = new Set(["23505", "42710", "42P06", "42P07"]);
const CREATE_ATTEMPTS = 3;

/**
 * Postgres's connect sequence, in the order of §3.9: with a connection
 * string and `schema`, `create schema if not exists` (`search_path` is
 * already set on every pooled connection); the installation guard; the
 * migrations — each in its own transaction that first takes `LOCK TABLE
 * cairnq_migrations IN EXCLUSIVE MODE`, so concurrent cold starts apply each
 * once —; the protocol-version guard; then LISTEN starts in the background.
 */
export class PostgresSchemaManager extends MigratingSchemaManager {
  #installedSchema: string | null = null;

  constructor(
    private readonly connection: PostgresConnection,
    private readonly wakeups: PostgresWakeups,
    syntax: SqlSyntax,
    clock: StoreClock,
  ) {
    super({ syntax, clock, migrations: POSTGRES_MIGRATIONS, ledgerDdl: ledgerDdl(POSTGRES_SCHEMA), lockLedger: LOCK_LEDGER });
  }

  protected override async beforeMigrations(db: AnyKysely, executor: StoreExecutor): Promise<void> {
    this.connection.guard();
    const schema = this.connection.schema;
    if (this.connection.managesSchema && schema !== null) {
      await createIfAbsent(db, executor, `CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    }
    const found = await readInstallations(db, executor);
    checkInstallation(schema, found);
    this.#installedSchema = found.currentSchema;
    // The runner creates the ledger too (§3.7 step 1); creating it here first absorbs the one race it cannot:
    // two cold starts running CREATE TABLE IF NOT EXISTS at once, where the loser fails on the catalog's unique index.
    await createIfAbsent(db, executor, this.options.ledgerDdl);
  }

  /**
   * The schema this store's tables live in (the connection's `current_schema()`, which the
   * installation guard checked), known once connected; `null` before.
   */
  get installedSchema(): string | null {
    return this.#installedSchema;
  }

  protected override afterGuards(): Promise<void> {
    this.wakeups.start();
    return Promise.resolve();
  }

  override async close(): Promise<void> {
    await this.wakeups.close();
    this.connection.release();
  }
}

/** Runs a `CREATE … IF NOT EXISTS`, retrying when a concurrent creator won the race (the retry sees the object and does nothing). */
async function createIfAbsent(db: AnyKysely, executor: StoreExecutor, ddl: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await executor.write(db, () => CompiledQuery.raw(ddl));
      return;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (attempt >= CREATE_ATTEMPTS || typeof code !== "string" || !LOST_CREATE_RACE.has(code)) throw error;
    }
  }
}
