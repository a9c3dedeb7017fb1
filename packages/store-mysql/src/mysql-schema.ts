/**
 * Protocol v1's schema (§3) mapped onto MySQL/MariaDB, with the ledger names
 * of §3.6 (0003_notify is Postgres-only, as on SQLite), and the connect-time
 * work of the MySQL dialect.
 *
 * Types (see docs/protocol.md, "MySQL/MariaDB mapping"):
 * - identifiers and other indexed text (`id`, `name`, `queue`, `status`, keys,
 *   ids) are `VARBINARY`: exact UTF-8 bytes, compared byte by byte with no
 *   trailing-space padding, sized by the protocol's byte limits
 *   (`TEXT_LIMITS`); a key of InnoDB's index may hold 3072 bytes, which a
 *   `utf8mb4` `VARCHAR(1024)` (4096) would not fit. The executor hands them
 *   back as strings;
 * - JSON columns and `message` are `LONGTEXT` in `utf8mb4_bin` with a
 *   `json_valid` check: the stored text is the text written (MySQL's own
 *   `JSON` type would re-serialize documents);
 * - `*_ms` are `BIGINT`, `attempt`, `max_attempts`, `priority` `INT`,
 *   `progress` `DOUBLE`;
 * - partial indexes become plain ones (MySQL has no `WHERE` on an index).
 *
 * DDL commits implicitly in MySQL, so a migration's statements are not one
 * transaction: every statement is re-runnable (`IF NOT EXISTS`), and
 * concurrent cold starts serialize on the named lock `cairnq_migrations`
 * held on one connection for the whole run.
 */
import { PROTOCOL_VERSION, STATUSES } from "@cairnq/protocol";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY, DEFAULT_QUEUE } from "@cairnq/protocol/adapter";
import type { AnyKysely, ExtensionTable, Migration, StoreClock, StoreExecutor } from "@cairnq/store-kysely";
import { checkProtocolVersion, runMigrations } from "@cairnq/store-kysely";
import type { SchemaManager, SqlSyntax } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";

/** Table options of every CairnQ table: InnoDB (row locks, foreign keys), text compared as bytes. */
export const TABLE_OPTIONS = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

/** Column types of the mapping (see the file's opening block). */
export const MYSQL_TYPES = Object.freeze({
  /** Names, keys and other indexed text, up to the protocol's 1024-byte limits (`TEXT_LIMITS`). */
  text: "VARBINARY(1024)",
  /** Task ids (the store makes them: `task_` and a ULID) and every column holding one. */
  id: "VARBINARY(255)",
  /** A queue (256 bytes, `TEXT_LIMITS.queue`). */
  queue: "VARBINARY(256)",
  /** A status or another short enumerated word. */
  word: "VARBINARY(32)",
  /** JSON documents and free text, kept as written. */
  json: "LONGTEXT",
  int32: "INT",
  int64: "BIGINT",
  float: "DOUBLE",
});

const T = MYSQL_TYPES;

function quoteList(values: readonly string[]): string {
  return values.map((v) => `'${v}'`).join(", ");
}

/*
 * No json_valid CHECK: MariaDB's JSON functions refuse documents nested deeper than 32 levels, and
 * the protocol allows MAX_JSON_DEPTH (1000); every store writes JSON.stringify output of checked values.
 */
function json(column: string, nullable: boolean): string {
  return `${column} ${T.json} ${nullable ? "NULL" : "NOT NULL"}`;
}

function index(name: string, columns: string): string {
  return `CREATE INDEX IF NOT EXISTS cairnq_tasks_${name} ON cairnq_tasks (${columns})`;
}

function schemaVersion(version: number): string {
  return `UPDATE cairnq_meta SET value = '${version}' WHERE \`key\` = 'schema_version'`;
}

/** `CREATE TABLE IF NOT EXISTS cairnq_migrations …` (§3.4). */
export const MYSQL_LEDGER_DDL = `CREATE TABLE IF NOT EXISTS cairnq_migrations (name ${T.text} PRIMARY KEY, applied_at_ms ${T.int64} NOT NULL) ${TABLE_OPTIONS}`;

/** The task table of §3.1, columns in order. */
export const MYSQL_TASKS_DDL =
  `CREATE TABLE IF NOT EXISTS cairnq_tasks (` +
  [
    `id ${T.id} PRIMARY KEY`,
    `name ${T.text} NOT NULL`,
    `queue ${T.queue} NOT NULL DEFAULT '${DEFAULT_QUEUE}'`,
    `status ${T.word} NOT NULL CHECK (status IN (${quoteList(STATUSES)}))`,
    json("payload", false),
    json("result", true),
    json("error", true),
    // A BLOB/TEXT column takes an expression default only (MariaDB 10.2+, MySQL 8.0.13+).
    `${json("metadata", false).replace(" NOT NULL", " NOT NULL DEFAULT ('{}')")}`,
    `progress ${T.float}`,
    `message ${T.json}`,
    `attempt ${T.int32} NOT NULL DEFAULT 0`,
    `max_attempts ${T.int32} NOT NULL DEFAULT ${DEFAULT_MAX_ATTEMPTS}`,
    `priority ${T.int32} NOT NULL DEFAULT ${DEFAULT_PRIORITY}`,
    `worker_id ${T.text}`,
    `lease_until_ms ${T.int64}`,
    `run_at_ms ${T.int64} NOT NULL`,
    `cancel_requested_at_ms ${T.int64}`,
    `parent_id ${T.text}`,
    `root_id ${T.text}`,
    `correlation_id ${T.text}`,
    `created_at_ms ${T.int64} NOT NULL`,
    `updated_at_ms ${T.int64} NOT NULL`,
    `completed_at_ms ${T.int64}`,
  ].join(", ") +
  `) ${TABLE_OPTIONS}`;

/**
 * The migrations of protocol v1 on MySQL (§3.6), in ledger order, ending in
 * the same indexes as on the other backends (partial ones as plain indexes).
 */
export const MYSQL_MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    name: "0001_init.sql",
    statements: [
      MYSQL_TASKS_DDL,
      `CREATE TABLE IF NOT EXISTS cairnq_task_keys (\`key\` ${T.text} PRIMARY KEY, task_id ${T.id} NOT NULL, ` +
        `created_at_ms ${T.int64} NOT NULL, updated_at_ms ${T.int64} NOT NULL, ` +
        `CONSTRAINT cairnq_task_keys_task_fk FOREIGN KEY (task_id) REFERENCES cairnq_tasks (id) ON DELETE CASCADE) ${TABLE_OPTIONS}`,
      `CREATE TABLE IF NOT EXISTS cairnq_meta (\`key\` ${T.text} PRIMARY KEY, value ${T.json} NOT NULL) ${TABLE_OPTIONS}`,
      index("name_idx", "name"),
      index("root_idx", "root_id"),
      index("correlation_idx", "correlation_id"),
      `INSERT IGNORE INTO cairnq_meta (\`key\`, value) VALUES ('protocol_version', '${PROTOCOL_VERSION}')`,
      `INSERT IGNORE INTO cairnq_meta (\`key\`, value) VALUES ('schema_version', '1')`,
    ],
  },
  { name: "0002_purge_index.sql", statements: [index("completed_idx", "completed_at_ms"), schemaVersion(2)] },
  { name: "0004_lease_index.sql", statements: [index("lease_idx", "status, lease_until_ms"), schemaVersion(4)] },
  {
    name: "0005_clear_terminal_lease.sql",
    statements: [`UPDATE cairnq_tasks SET lease_until_ms = NULL WHERE status <> 'running' AND lease_until_ms IS NOT NULL`, schemaVersion(5)],
  },
  { name: "0006_claim_name_index.sql", statements: [schemaVersion(6)] },
  { name: "0007_purge_status_index.sql", statements: [index("status_completed_idx", "status, completed_at_ms"), schemaVersion(7)] },
  {
    name: "0008_claim_due_index.sql",
    statements: [
      index("claim_idx", "queue, status, priority DESC, run_at_ms, id"),
      index("claim_name_idx", "queue, status, name, priority DESC, run_at_ms, id"),
      schemaVersion(8),
    ],
  },
  { name: "0009_purge_queue_index.sql", statements: [index("queue_completed_idx", "queue, status, completed_at_ms"), schemaVersion(9)] },
  { name: "0010_drop_status_index.sql", statements: [schemaVersion(10)] },
]);

/** The extension tables of `@cairnq/store-kysely` with MySQL's types (same names, columns and keys). */
export const MYSQL_EXTENSION_DDL: Readonly<Record<ExtensionTable, readonly string[]>> = {
  cairnq_ext_schedules: [
    `CREATE TABLE IF NOT EXISTS cairnq_ext_schedules (name ${T.text} PRIMARY KEY, last_slot_ms BIGINT NOT NULL, created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL) ${TABLE_OPTIONS}`,
  ],
  cairnq_ext_rate_claims: [
    `CREATE TABLE IF NOT EXISTS cairnq_ext_rate_claims (name ${T.text} NOT NULL, claimed_at_ms BIGINT NOT NULL, task_id ${T.id} NOT NULL) ${TABLE_OPTIONS}`,
    `CREATE INDEX IF NOT EXISTS cairnq_ext_rate_claims_name_idx ON cairnq_ext_rate_claims (name, claimed_at_ms)`,
  ],
  cairnq_ext_rate_limits: [
    `CREATE TABLE IF NOT EXISTS cairnq_ext_rate_limits (name ${T.text} NOT NULL, scope ${T.word} NOT NULL, max_claims BIGINT NOT NULL, per_ms BIGINT NOT NULL, PRIMARY KEY (name, scope)) ${TABLE_OPTIONS}`,
  ],
  "cairnq_ext_groups*": [
    `CREATE TABLE IF NOT EXISTS cairnq_ext_task_groups (task_id ${T.id} PRIMARY KEY, name ${T.text} NOT NULL, group_key ${T.text} NOT NULL, priority INT NOT NULL, state ${T.word} NOT NULL, ` +
      `CONSTRAINT cairnq_ext_task_groups_task_fk FOREIGN KEY (task_id) REFERENCES cairnq_tasks (id) ON DELETE CASCADE) ${TABLE_OPTIONS}`,
    `CREATE INDEX IF NOT EXISTS cairnq_ext_task_groups_walk_idx ON cairnq_ext_task_groups (name, state, group_key, priority DESC, task_id)`,
    `CREATE TABLE IF NOT EXISTS cairnq_ext_groups (name ${T.text} NOT NULL, group_key ${T.text} NOT NULL, served_seq BIGINT NOT NULL, active INT NOT NULL, touched BIGINT NOT NULL, concurrency_limit BIGINT, PRIMARY KEY (name, group_key)) ${TABLE_OPTIONS}`,
    `CREATE INDEX IF NOT EXISTS cairnq_ext_groups_served_idx ON cairnq_ext_groups (name, active, served_seq, group_key)`,
    `CREATE TABLE IF NOT EXISTS cairnq_ext_group_rate_claims (name ${T.text} NOT NULL, group_key ${T.text} NOT NULL, claimed_at_ms BIGINT NOT NULL, task_id ${T.id} NOT NULL) ${TABLE_OPTIONS}`,
    `CREATE INDEX IF NOT EXISTS cairnq_ext_group_rate_claims_group_idx ON cairnq_ext_group_rate_claims (name, group_key, claimed_at_ms)`,
    `CREATE INDEX IF NOT EXISTS cairnq_ext_group_rate_claims_name_idx ON cairnq_ext_group_rate_claims (name, claimed_at_ms)`,
  ],
  cairnq_ext_steps: [
    `CREATE TABLE IF NOT EXISTS cairnq_ext_steps (task_id ${T.id} NOT NULL, name ${T.text} NOT NULL, seq BIGINT NOT NULL, kind ${T.word} NOT NULL, status ${T.word} NOT NULL, ` +
      `result LONGTEXT, error LONGTEXT, attempt BIGINT NOT NULL, at_ms BIGINT NOT NULL, wake_at_ms BIGINT, waiting_for ${T.text}, PRIMARY KEY (task_id, name), ` +
      `CONSTRAINT cairnq_ext_steps_task_fk FOREIGN KEY (task_id) REFERENCES cairnq_tasks (id) ON DELETE CASCADE) ${TABLE_OPTIONS}`,
  ],
  cairnq_ext_messages: [
    `CREATE TABLE IF NOT EXISTS cairnq_ext_messages (task_id ${T.id} NOT NULL, name ${T.text} NOT NULL, seq BIGINT NOT NULL, payload LONGTEXT NOT NULL, at_ms BIGINT NOT NULL, consumed_by ${T.text}, ` +
      `PRIMARY KEY (task_id, name, seq), CONSTRAINT cairnq_ext_messages_task_fk FOREIGN KEY (task_id) REFERENCES cairnq_tasks (id) ON DELETE CASCADE) ${TABLE_OPTIONS}`,
  ],
};

/** The key-lock rows (see `mysql-key-lock.ts`): one row per lock slot, never deleted. */
export const KEY_LOCKS_DDL = `CREATE TABLE IF NOT EXISTS cairnq_ext_key_locks (slot INT PRIMARY KEY) ${TABLE_OPTIONS}`;

/** What {@link MySQLSchemaManager} needs. */
export interface MySQLSchemaOptions {
  readonly syntax: SqlSyntax;
  readonly clock: StoreClock;
}

/**
 * Connect-time work: unless the ledger already lists every migration, under
 * the named lock `cairnq_migrations` (on one connection, released at the
 * end), the ledger, the migrations (§3.7), the key-lock table; then the
 * protocol-version guard (§11).
 */
export class MySQLSchemaManager implements SchemaManager {
  /** Migrations the last `connect` applied. */
  applied: readonly string[] = [];

  constructor(private readonly options: MySQLSchemaOptions) {}

  async connect(db: AnyKysely, executor: StoreExecutor): Promise<void> {
    if (!(await this.#current(db))) await this.#migrate(db, executor);
    await checkProtocolVersion(db, executor, this.options.syntax);
  }

  /**
   * Whether the ledger already holds every migration: one read instead of the named lock, a
   * transaction per migration and the DDL checks, for the common connect (a CLI command, a worker
   * restart) of an installed database. A missing ledger or any missing name takes the locked path.
   */
  async #current(db: AnyKysely): Promise<boolean> {
    try {
      const { rows } = await db.executeQuery(CompiledQuery.raw("SELECT name FROM cairnq_migrations"));
      const names = new Set(rows.map((row) => String((row as { name: unknown }).name)));
      if (!MYSQL_MIGRATIONS.every((m) => names.has(m.name))) return false;
      this.applied = [];
      return true;
    } catch {
      return false;
    }
  }

  async #migrate(db: AnyKysely, executor: StoreExecutor): Promise<void> {
    await db.connection().execute(async (conn) => {
      const locked = await conn.executeQuery(CompiledQuery.raw("SELECT GET_LOCK('cairnq_migrations', 60) AS locked"));
      if (Number((locked.rows[0] as Record<string, unknown> | undefined)?.locked) !== 1) {
        throw new Error("could not take the named lock cairnq_migrations within 60 s: another process is migrating this database, or holds the lock");
      }
      try {
        this.applied = await runMigrations({
          db: conn,
          executor,
          syntax: this.options.syntax,
          clock: this.options.clock,
          migrations: MYSQL_MIGRATIONS,
          ledgerDdl: MYSQL_LEDGER_DDL,
        });
        await conn.executeQuery(CompiledQuery.raw(KEY_LOCKS_DDL));
      } finally {
        await conn.executeQuery(CompiledQuery.raw("SELECT RELEASE_LOCK('cairnq_migrations')"));
      }
    });
  }

  async close(_db: AnyKysely): Promise<void> {}
}
