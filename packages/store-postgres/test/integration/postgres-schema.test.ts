import { CompiledQuery, Kysely, PostgresDialect } from "kysely";
import { InvalidArgument, ProtocolVersionMismatch, SchemaMismatch, STATUSES } from "@cairnq/protocol";
import { TASK_COLUMNS } from "@cairnq/protocol/adapter";
import { settledWithin } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/index.js";
import { POSTGRES_MIGRATIONS } from "../../src/postgres-schema.js";
import { client, exited, freshSchema, nextLine, openStore, pgDsn, poolFor, q, schemaName, spawnFixture, until } from "../helpers.js";

const LEDGER = [
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
];

/** [name, type, nullable, default] per column, in order (§3.1–§3.4, Postgres column). */
type Column = [string, string, "YES" | "NO", string | null];

const TABLES: Record<string, Column[]> = {
  cairnq_meta: [
    ["key", "text", "NO", null],
    ["value", "text", "NO", null],
  ],
  cairnq_migrations: [
    ["name", "text", "NO", null],
    ["applied_at_ms", "bigint", "NO", null],
  ],
  cairnq_task_keys: [
    ["key", "text", "NO", null],
    ["task_id", "text", "NO", null],
    ["created_at_ms", "bigint", "NO", null],
    ["updated_at_ms", "bigint", "NO", null],
  ],
  cairnq_tasks: [
    ["id", "text", "NO", null],
    ["name", "text", "NO", null],
    ["queue", "text", "NO", "'default'::text"],
    ["status", "text", "NO", null],
    ["payload", "jsonb", "NO", null],
    ["result", "jsonb", "YES", null],
    ["error", "jsonb", "YES", null],
    ["metadata", "jsonb", "NO", "'{}'::jsonb"],
    ["progress", "double precision", "YES", null],
    ["message", "text", "YES", null],
    ["attempt", "integer", "NO", "0"],
    ["max_attempts", "integer", "NO", "3"],
    ["priority", "integer", "NO", "0"],
    ["worker_id", "text", "YES", null],
    ["lease_until_ms", "bigint", "YES", null],
    ["run_at_ms", "bigint", "NO", null],
    ["cancel_requested_at_ms", "bigint", "YES", null],
    ["parent_id", "text", "YES", null],
    ["root_id", "text", "YES", null],
    ["correlation_id", "text", "YES", null],
    ["created_at_ms", "bigint", "NO", null],
    ["updated_at_ms", "bigint", "NO", null],
    ["completed_at_ms", "bigint", "YES", null],
  ],
};

/** Index → [table, unique, columns (with DESC), partial predicate as Postgres prints it] (§3.5 plus the primary keys). */
type Index = [string, boolean, string, string | null];

const INDEXES: Record<string, Index> = {
  cairnq_meta_pkey: ["cairnq_meta", true, "key", null],
  cairnq_migrations_pkey: ["cairnq_migrations", true, "name", null],
  cairnq_task_keys_pkey: ["cairnq_task_keys", true, "key", null],
  cairnq_tasks_pkey: ["cairnq_tasks", true, "id", null],
  cairnq_tasks_claim_idx: ["cairnq_tasks", false, "queue, status, priority DESC, run_at_ms, id", null],
  cairnq_tasks_claim_name_idx: ["cairnq_tasks", false, "queue, status, name, priority DESC, run_at_ms, id", null],
  cairnq_tasks_name_idx: ["cairnq_tasks", false, "name", null],
  cairnq_tasks_root_idx: ["cairnq_tasks", false, "root_id", null],
  cairnq_tasks_correlation_idx: ["cairnq_tasks", false, "correlation_id", null],
  cairnq_tasks_completed_idx: ["cairnq_tasks", false, "completed_at_ms", null],
  cairnq_tasks_lease_idx: ["cairnq_tasks", false, "lease_until_ms", "((status = 'running'::text) AND (lease_until_ms IS NOT NULL))"],
  cairnq_tasks_status_completed_idx: ["cairnq_tasks", false, "status, completed_at_ms", null],
  cairnq_tasks_queue_completed_idx: [
    "cairnq_tasks",
    false,
    "queue, completed_at_ms",
    "(status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'canceled'::text]))",
  ],
};

const TRIGGER =
  "CREATE TRIGGER cairnq_tasks_notify AFTER INSERT OR UPDATE OF status ON {schema}.cairnq_tasks FOR EACH ROW " +
  "WHEN ((new.status IS DISTINCT FROM 'running'::text)) EXECUTE FUNCTION {schema}.cairnq_notify()";

interface Described {
  tables: Record<string, Column[]>;
  indexes: Record<string, Index>;
  constraints: Record<string, string>;
  triggers: string[];
  functions: { name: string; returns: string; language: string }[];
  meta: Record<string, string>;
}

/** Reads a schema back through the catalogs, independent of our DDL text. */
async function describeSchema(schema: string): Promise<Described> {
  const tables: Described["tables"] = {};
  const columns = await q<{ table_name: string; column_name: string; data_type: string; is_nullable: "YES" | "NO"; column_default: string | null }>(
    "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position",
    [schema],
  );
  for (const c of columns) (tables[c.table_name] ??= []).push([c.column_name, c.data_type, c.is_nullable, c.column_default]);
  const indexes: Described["indexes"] = {};
  const rows = await q<{ name: string; table: string; unique: boolean; def: string; predicate: string | null }>(
    "SELECT ic.relname AS name, tc.relname AS table, i.indisunique AS unique, pg_get_indexdef(i.indexrelid) AS def, pg_get_expr(i.indpred, i.indrelid) AS predicate " +
      "FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class tc ON tc.oid = i.indrelid JOIN pg_namespace n ON n.oid = tc.relnamespace " +
      "WHERE n.nspname = $1 ORDER BY ic.relname",
    [schema],
  );
  for (const r of rows) {
    const columnsOf = /USING btree \((.*?)\)(?: WHERE |$)/.exec(r.def);
    indexes[r.name] = [r.table, r.unique, columnsOf?.[1] ?? r.def, r.predicate];
  }
  const constraints = Object.fromEntries(
    (
      await q<{ name: string; def: string }>(
        "SELECT c.conname AS name, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1",
        [schema],
      )
    ).map((r) => [r.name, r.def]),
  );
  const triggers = (
    await q<{ def: string }>(
      "SELECT pg_get_triggerdef(t.oid) AS def FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace " +
        "WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY t.tgname",
      [schema],
    )
  ).map((r) => r.def);
  const functions = await q<{ name: string; returns: string; language: string }>(
    "SELECT p.proname AS name, p.prorettype::regtype::text AS returns, l.lanname AS language FROM pg_proc p " +
      "JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang WHERE n.nspname = $1 ORDER BY p.proname",
    [schema],
  );
  const meta = Object.fromEntries(
    (await q<{ key: string; value: string }>(`SELECT "key", value FROM "${schema}".cairnq_meta`)).map((r) => [r.key, r.value]),
  );
  return { tables, indexes, constraints, triggers, functions, meta };
}

async function ledger(schema: string): Promise<{ name: string; applied_at_ms: string }[]> {
  return q(`SELECT name, applied_at_ms FROM "${schema}".cairnq_migrations ORDER BY name`);
}

async function dbNowMs(): Promise<number> {
  return Number((await q<{ ms: string }>("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms"))[0]?.ms);
}

function expectFinalSchema(schema: string, described: Described): void {
  expect(described.tables).toEqual(TABLES);
  expect(described.tables.cairnq_tasks?.map((c) => c[0])).toEqual([...TASK_COLUMNS]);
  expect(described.indexes).toEqual(INDEXES);
  expect(described.triggers).toEqual([TRIGGER.replaceAll("{schema}", schema)]);
  expect(described.functions).toEqual([{ name: "cairnq_notify", returns: "trigger", language: "plpgsql" }]);
  expect(described.meta).toEqual({ protocol_version: "1", schema_version: "10" });
}

/**
 * The Postgres DDL of §3 in its final state, written out by hand as a peer
 * would run it (not generated by our migration builder).
 */
const HAND_WRITTEN_DDL = `
CREATE TABLE cairnq_tasks (
  id text NOT NULL PRIMARY KEY, name text NOT NULL, queue text NOT NULL DEFAULT 'default',
  status text NOT NULL CHECK (status IN ('queued','running','succeeded','failed','canceled')),
  payload jsonb NOT NULL, result jsonb, error jsonb, metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  progress double precision, message text,
  attempt integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL DEFAULT 3, priority integer NOT NULL DEFAULT 0,
  worker_id text, lease_until_ms bigint, run_at_ms bigint NOT NULL, cancel_requested_at_ms bigint,
  parent_id text, root_id text, correlation_id text,
  created_at_ms bigint NOT NULL, updated_at_ms bigint NOT NULL, completed_at_ms bigint
);
CREATE TABLE cairnq_task_keys (
  "key" text NOT NULL PRIMARY KEY,
  task_id text NOT NULL REFERENCES cairnq_tasks(id) ON DELETE CASCADE,
  created_at_ms bigint NOT NULL, updated_at_ms bigint NOT NULL
);
CREATE TABLE cairnq_meta ("key" text NOT NULL PRIMARY KEY, value text NOT NULL);
INSERT INTO cairnq_meta VALUES ('protocol_version', '1'), ('schema_version', '10');
CREATE INDEX cairnq_tasks_claim_idx ON cairnq_tasks (queue, status, priority DESC, run_at_ms, id);
CREATE INDEX cairnq_tasks_claim_name_idx ON cairnq_tasks (queue, status, name, priority DESC, run_at_ms, id);
CREATE INDEX cairnq_tasks_name_idx ON cairnq_tasks (name);
CREATE INDEX cairnq_tasks_root_idx ON cairnq_tasks (root_id);
CREATE INDEX cairnq_tasks_correlation_idx ON cairnq_tasks (correlation_id);
CREATE INDEX cairnq_tasks_completed_idx ON cairnq_tasks (completed_at_ms);
CREATE INDEX cairnq_tasks_lease_idx ON cairnq_tasks (lease_until_ms) WHERE status = 'running' AND lease_until_ms IS NOT NULL;
CREATE INDEX cairnq_tasks_status_completed_idx ON cairnq_tasks (status, completed_at_ms);
CREATE INDEX cairnq_tasks_queue_completed_idx ON cairnq_tasks (queue, completed_at_ms) WHERE status IN ('succeeded','failed','canceled');
`;

/** Runs a multi-statement script with `search_path` set to `schema`, on the admin connection. */
async function runIn(schema: string, script: string): Promise<void> {
  await q(`SET search_path TO "${schema}"; ${script}; RESET search_path`);
}

describe("a fresh installation (§3)", () => {
  it("has exactly the tables, columns, types, defaults, indexes (with partial predicates), trigger, function, meta rows and ledger of protocol.md", async () => {
    const schema = schemaName();
    const before = await dbNowMs();
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    const after = await dbNowMs();
    expect(store.dialect.schema.applied).toEqual(LEDGER);
    expect(POSTGRES_MIGRATIONS.map((m) => m.name)).toEqual(LEDGER);
    const described = await describeSchema(schema);
    expectFinalSchema(schema, described);
    expect(described.constraints).toEqual({
      cairnq_meta_pkey: "PRIMARY KEY (key)",
      cairnq_migrations_pkey: "PRIMARY KEY (name)",
      cairnq_task_keys_pkey: "PRIMARY KEY (key)",
      cairnq_task_keys_task_id_fkey: `FOREIGN KEY (task_id) REFERENCES ${schema}.cairnq_tasks(id) ON DELETE CASCADE`,
      cairnq_tasks_pkey: "PRIMARY KEY (id)",
      cairnq_tasks_status_check: `CHECK ((status = ANY (ARRAY[${STATUSES.map((s) => `'${s}'::text`).join(", ")}])))`,
    });
    const entries = await ledger(schema);
    expect(entries.map((e) => e.name)).toEqual(LEDGER);
    for (const entry of entries) {
      // pg returns bigint as text; the value is the database clock in epoch ms (now() of its transaction).
      expect(Number(entry.applied_at_ms)).toBeGreaterThanOrEqual(before);
      expect(Number(entry.applied_at_ms)).toBeLessThanOrEqual(after);
    }
  });

  it("checks status against STATUSES, rejects invalid JSON, and cascades key rows on delete", async () => {
    const store = openStore();
    const task = await store.submit({ name: "n", key: "k" });
    const schema = store.schema as string;
    const insert = `INSERT INTO "${schema}".cairnq_tasks (id, name, status, payload, run_at_ms, created_at_ms, updated_at_ms) VALUES ($1, 'n', $2, $3, 0, 0, 0)`;
    for (const [i, status] of STATUSES.entries()) await q(insert, [`t${i}`, status, "{}"]);
    await expect(q(insert, ["bad", "paused", "{}"])).rejects.toThrow(/cairnq_tasks_status_check/);
    await expect(q(insert, ["bad", "queued", "{not json"])).rejects.toThrow(/invalid input syntax for type json/);
    await q(`DELETE FROM "${schema}".cairnq_tasks WHERE id = $1`, [task.id]);
    expect(await q(`SELECT * FROM "${schema}".cairnq_task_keys`)).toEqual([]);
  });

  it("with a connection string and schema: creates the schema and sets search_path on every pooled connection", async () => {
    const schema = schemaName();
    expect(await q("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).toEqual([]);
    const store = openStore(pgDsn(), { schema, max: 4 });
    await store.connect();
    expect(await q("SELECT 1 AS found FROM pg_namespace WHERE nspname = $1", [schema])).toEqual([{ found: 1 }]);
    // Four statements at once need four connections; each must resolve to the schema.
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        store.db.executeQuery<{ schema: string; pid: number }>(CompiledQuery.raw("SELECT current_schema() AS schema, pg_backend_pid() AS pid, pg_sleep(0.1)")),
      ),
    );
    const rows = answers.map((a) => a.rows[0] as { schema: string; pid: number });
    expect(new Set(rows.map((r) => r.pid)).size).toBe(4);
    expect(rows.map((r) => r.schema)).toEqual([schema, schema, schema, schema]);
  });

  it("keeps an `options` parameter already in the connection string and adds search_path to it", async () => {
    const schema = schemaName();
    const url = new URL(pgDsn());
    url.searchParams.set("options", "-c application_name=cairnq_options_test");
    const store = openStore(url.toString(), { schema });
    await store.connect();
    const row = (
      await store.db.executeQuery<{ schema: string; app: string }>(
        CompiledQuery.raw("SELECT current_schema() AS schema, current_setting('application_name') AS app"),
      )
    ).rows[0];
    expect(row).toEqual({ schema, app: "cairnq_options_test" });
  });

  it("rejects a schema option that is not a plain identifier before connecting", () => {
    for (const bad of ["", "1abc", 'a"b', "a b", "a;drop", "ümlaut"]) {
      expect(() => new PostgresStore(pgDsn(), { schema: bad })).toThrow(InvalidArgument);
    }
    expect(() => new PostgresStore(pgDsn(), { schema: "Ok_Schema$1" })).not.toThrow();
  });

  it("rejects a schema Postgres would truncate (over 63 bytes) or reserves (pg_ prefix) before creating anything", async () => {
    const long = `cq_long_${"x".repeat(56)}`; // 64 bytes: Postgres would create its first 63
    expect(Buffer.byteLength(long)).toBe(64);
    expect(() => new PostgresStore(pgDsn(), { schema: long })).toThrow(/at most 63 bytes/);
    expect(() => new PostgresStore(pgDsn(), { schema: "pg_x" })).toThrow(/must not start with "pg_"/);
    expect(() => new PostgresStore(pgDsn(), { schema: "pg_x" })).toThrow(InvalidArgument);
    // Also with your own pool: such a schema can never be current_schema().
    expect(() => new PostgresStore(poolFor("public"), { schema: long })).toThrow(InvalidArgument);
    // 63 bytes is fine (and a quoted "PG_x" is not reserved: the check is case-sensitive, as Postgres's).
    expect(() => new PostgresStore(pgDsn(), { schema: long.slice(0, 63) })).not.toThrow();
    expect(() => new PostgresStore(pgDsn(), { schema: "PG_x" })).not.toThrow();
    const created = await q<{ n: string }>("SELECT count(*)::text AS n FROM pg_namespace WHERE nspname = $1 OR nspname = 'pg_x'", [long.slice(0, 63)]);
    expect(created[0]?.n).toBe("0");
  });
});

describe("re-connecting and foreign installations", () => {
  it("re-connecting is idempotent: nothing re-applied, ledger and schema unchanged", async () => {
    const schema = schemaName();
    const first = new PostgresStore(pgDsn(), { schema });
    await first.connect();
    await first.connect();
    await first.close();
    const before = { schema: await describeSchema(schema), ledger: await ledger(schema) };
    const second = openStore(pgDsn(), { schema });
    await second.connect();
    expect(second.dialect.schema.applied).toEqual([]);
    expect(await describeSchema(schema)).toEqual(before.schema);
    expect(await ledger(schema)).toEqual(before.ledger);
  });

  it("connecting to a current installation takes no ledger lock: it connects while another session holds LOCK TABLE cairnq_migrations IN EXCLUSIVE MODE", async () => {
    const schema = schemaName();
    const first = new PostgresStore(pgDsn(), { schema });
    await first.connect();
    await first.close();
    const holder = await client();
    await holder.query(`SET search_path TO ${schema}`);
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE cairnq_migrations IN EXCLUSIVE MODE");
    try {
      // A migration transaction takes that lock first (§3.7): it would wait until the holder commits.
      const second = openStore(pgDsn(), { schema });
      expect(await settledWithin(second.connect(), 10_000)).toBe("ok");
      expect(second.dialect.schema.applied).toEqual([]);
    } finally {
      await holder.query("COMMIT");
    }
  });

  it("adopts an installation a peer built by hand without a ledger: every migration records itself as a no-op", async () => {
    const schema = await freshSchema();
    await runIn(schema, HAND_WRITTEN_DDL);
    await q(
      `INSERT INTO "${schema}".cairnq_tasks (id, name, status, payload, run_at_ms, created_at_ms, updated_at_ms) VALUES ('task_x', 'n', 'queued', '{}', 0, 0, 0)`,
    );
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    expect(store.dialect.schema.applied).toEqual(LEDGER);
    expectFinalSchema(schema, await describeSchema(schema));
    expect(await store.get("task_x")).toMatchObject({ id: "task_x", status: "queued", metadata: {}, attempt: 0 });
  });

  it("upgrades an installation left at 0001 (old index shapes, a stale lease on a terminal row)", async () => {
    const schema = await freshSchema();
    await runIn(
      schema,
      HAND_WRITTEN_DDL.replace(/CREATE INDEX[^;]*;/g, "").replace("('schema_version', '10')", "('schema_version', '1')") +
        "CREATE INDEX cairnq_tasks_claim_idx ON cairnq_tasks (queue, status, priority DESC, created_at_ms);" +
        "CREATE INDEX cairnq_tasks_status_idx ON cairnq_tasks (status);" +
        "CREATE INDEX cairnq_tasks_name_idx ON cairnq_tasks (name);" +
        "CREATE INDEX cairnq_tasks_root_idx ON cairnq_tasks (root_id);" +
        "CREATE INDEX cairnq_tasks_correlation_idx ON cairnq_tasks (correlation_id);" +
        "CREATE TABLE cairnq_migrations (name text NOT NULL PRIMARY KEY, applied_at_ms bigint NOT NULL);" +
        "INSERT INTO cairnq_migrations VALUES ('0001_init.sql', 1);" +
        "INSERT INTO cairnq_tasks (id, name, status, payload, lease_until_ms, run_at_ms, created_at_ms, updated_at_ms, completed_at_ms) " +
        "VALUES ('task_old', 'n', 'succeeded', '{}', 99, 0, 0, 0, 5)",
    );
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    expect(store.dialect.schema.applied).toEqual(LEDGER.slice(1));
    expectFinalSchema(schema, await describeSchema(schema));
    expect((await store.get("task_old"))?.lease_until_ms).toBeNull();
  });

  it("opens an installation whose ledger is complete without touching it", async () => {
    const schema = await freshSchema();
    await runIn(
      schema,
      HAND_WRITTEN_DDL +
        "CREATE TABLE cairnq_migrations (name text NOT NULL PRIMARY KEY, applied_at_ms bigint NOT NULL);" +
        LEDGER.map((name) => `INSERT INTO cairnq_migrations VALUES ('${name}', 42)`).join(";"),
    );
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    expect(store.dialect.schema.applied).toEqual([]);
    expect((await ledger(schema)).every((e) => e.applied_at_ms === "42")).toBe(true);
    // Adopted as-is: this hand-made installation has no trigger, and connecting does not add one.
    expect((await describeSchema(schema)).triggers).toEqual([]);
  });
});

describe("concurrent migration from several processes (§3.7)", () => {
  it("applies each migration exactly once when 4 processes cold-start on one fresh schema at once", async () => {
    const schema = schemaName();
    const children = Array.from({ length: 4 }, () => spawnFixture("connect-child.ts", [pgDsn(), schema]));
    await Promise.all(children.map((child) => nextLine(child, (line) => line === "ready")));
    const results = children.map((child) => nextLine(child, (line) => line.startsWith("{")));
    for (const child of children) child.stdin.write("go\n");
    const reports = (await Promise.all(results)).map((line) => JSON.parse(line) as { applied?: string[]; error?: string });
    expect(reports.filter((r) => r.error !== undefined)).toEqual([]);
    expect(reports.flatMap((r) => r.applied ?? []).sort()).toEqual(LEDGER);
    expect(await Promise.all(children.map(exited))).toEqual([0, 0, 0, 0]);
    expect((await ledger(schema)).map((e) => e.name)).toEqual(LEDGER);
    expectFinalSchema(schema, await describeSchema(schema));
  }, 60_000);
});

describe("protocol-version guard (§11)", () => {
  it.each([
    ["2", 2],
    [null, 0],
  ])("protocol_version %s → ProtocolVersionMismatch(stored %i), and the store refuses to run", async (value, stored) => {
    const schema = schemaName();
    const setup = new PostgresStore(pgDsn(), { schema, listen: false });
    await setup.connect();
    await setup.close();
    if (value === null) await q(`DELETE FROM "${schema}".cairnq_meta WHERE "key" = 'protocol_version'`);
    else await q(`UPDATE "${schema}".cairnq_meta SET value = $1 WHERE "key" = 'protocol_version'`, [value]);
    const store = openStore(pgDsn(), { schema });
    const err = await store.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolVersionMismatch);
    expect(err).toMatchObject({ storedVersion: stored, supportedVersion: 1 });
    await expect(store.submit({ name: "n" })).rejects.toBeInstanceOf(ProtocolVersionMismatch);
    expect(store.listenState).toBe("idle");
    expect(await q(`SELECT count(*)::int AS n FROM "${schema}".cairnq_tasks`)).toEqual([{ n: 0 }]);
  });
});

describe("installation guard and the schema option (§10)", () => {
  it("schema option with a caller's pool whose search_path resolves elsewhere → SchemaMismatch, nothing created", async () => {
    const wanted = await freshSchema();
    const elsewhere = await freshSchema();
    const store = openStore(poolFor(elsewhere), { schema: wanted });
    const err = await store.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaMismatch);
    expect(err).toMatchObject({ schema: wanted, currentSchema: elsewhere });
    expect((err as Error).message).toContain(`"${wanted}"`);
    expect(await q("SELECT table_name FROM information_schema.tables WHERE table_schema IN ($1, $2)", [wanted, elsewhere])).toEqual([]);
  });

  it("schema option with a caller's Kysely whose search_path resolves to no schema → SchemaMismatch", async () => {
    const wanted = await freshSchema();
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: poolFor(`${wanted}_missing`) }) });
    const store = openStore(db, { schema: wanted });
    const err = await store.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaMismatch);
    expect(err).toMatchObject({ schema: wanted, currentSchema: null });
  });

  it("schema option with a caller's pool on the right search_path: only checked, then installed there", async () => {
    const schema = await freshSchema();
    const store = openStore(poolFor(schema), { schema });
    await store.connect();
    expect(store.dialect.schema.applied).toEqual(LEDGER);
    expectFinalSchema(schema, await describeSchema(schema));
  });

  it("no schema option, installed elsewhere but not in current_schema → SchemaMismatch naming the installation and suggesting `schema`", async () => {
    const installed = await freshSchema();
    const setup = openStore(pgDsn(), { schema: installed, listen: false });
    await setup.connect();
    const empty = await freshSchema();
    const store = openStore(poolFor(empty));
    const err = await store.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaMismatch);
    const mismatch = err as SchemaMismatch;
    expect(mismatch.schema).toBeNull();
    expect(mismatch.currentSchema).toBe(empty);
    expect(mismatch.installations).toContain(installed);
    expect(mismatch.installations).not.toContain(empty);
    expect(mismatch.message).toContain(`"${installed}"`);
    expect(mismatch.message).toMatch(/schema: "/);
    expect(mismatch.message).toMatch(/search_path/);
    expect(await q("SELECT table_name FROM information_schema.tables WHERE table_schema = $1", [empty])).toEqual([]);
  });

  it("no schema option, current_schema among the installations → connects", async () => {
    const schema = await freshSchema();
    const setup = openStore(pgDsn(), { schema, listen: false });
    await setup.connect();
    const store = openStore(poolFor(schema));
    await store.connect();
    expect(store.dialect.schema.applied).toEqual([]);
    expect(await store.submit({ name: "n" })).toMatchObject({ status: "queued" });
  });
});

describe("the notify trigger (§3.8, §14.44), heard by a raw LISTEN connection", () => {
  /**
   * Collects this test's notifications: `queued` for its own queue, `done`
   * for its own task ids (channels are database-wide, so other tests' are
   * ignored). `settle()` sends a marker through the same channel and waits
   * for it: NOTIFYs are delivered in commit order, so everything committed
   * before it has arrived.
   */
  async function listenFor(queue: string): Promise<{ ids: Set<string>; settle: () => Promise<string[]> }> {
    const listener = await client();
    const ids = new Set<string>();
    const heard: string[] = [];
    const markers = new Set<string>();
    listener.on("notification", (msg) => {
      const payload = msg.payload ?? "";
      if (msg.channel === "cairnq_queued" && payload.startsWith("marker:")) markers.add(payload);
      else if (msg.channel === "cairnq_queued" && payload === queue) heard.push(`queued:${payload}`);
      else if (msg.channel === "cairnq_done" && ids.has(payload)) heard.push(`done:${payload}`);
    });
    await listener.query("LISTEN cairnq_queued; LISTEN cairnq_done");
    let n = 0;
    const settle = async (): Promise<string[]> => {
      const marker = `marker:${queue}:${(n += 1)}`;
      await q("SELECT pg_notify('cairnq_queued', $1)", [marker]);
      expect(await until(() => markers.has(marker))).toBe(true);
      return heard.splice(0);
    };
    return { ids, settle };
  }

  it("notifies cairnq_queued on insert/requeue/retry/recovery and cairnq_done on every terminal entry — never on claim, heartbeat, progress, cancel of a running task or purge", async () => {
    const queue = `q_${schemaName("n")}`;
    const store = openStore(pgDsn(), { schema: schemaName(), listen: false });
    await store.connect();
    const { ids, settle } = await listenFor(queue);
    const w = "worker_trigger";
    const claim = async (leaseMs = 5000): Promise<string> => {
      const [row] = await store.claim({ queues: [queue], workerId: w, leaseMs });
      expect(row).toBeDefined();
      return row!.id;
    };
    const submit = async (extra: Record<string, unknown> = {}): Promise<string> => {
      const task = await store.submit({ name: "n", queue, ...extra });
      ids.add(task.id);
      return task.id;
    };

    const a = await submit();
    expect(await settle()).toEqual([`queued:${queue}`]); // insert
    await claim();
    await store.heartbeat({ taskId: a, workerId: w });
    await store.heartbeatBatch({ taskIds: [a], workerId: w });
    await store.progress({ taskId: a, workerId: w, progress: 0.5, message: "half" });
    expect(await settle()).toEqual([]); // claim, heartbeats, progress
    await store.fail({ taskId: a, workerId: w, error: { code: "x" }, retryable: true });
    expect(await settle()).toEqual([`queued:${queue}`]); // retryable-fail requeue
    await claim();
    await store.cancel(a);
    expect(await settle()).toEqual([]); // cancel of a running task: the flag only
    await store.complete({ taskId: a, workerId: w, result: null });
    expect(await settle()).toEqual([`done:${a}`]); // running → canceled
    await store.retry(a);
    expect(await settle()).toEqual([`queued:${queue}`]); // retry
    await claim();
    await store.fail({ taskId: a, workerId: w, error: {}, retryable: false });
    expect(await settle()).toEqual([`done:${a}`]); // running → failed

    const b = await submit();
    await store.cancel(b);
    expect(await settle()).toEqual([`queued:${queue}`, `done:${b}`]); // insert, then queued → canceled

    const c = await submit();
    await claim();
    await store.succeed({ taskId: c, workerId: w, result: 1 });
    const d = await submit();
    await claim();
    await store.complete({ taskId: d, workerId: w, result: 2 });
    expect(await settle()).toEqual([`queued:${queue}`, `done:${c}`, `queued:${queue}`, `done:${d}`]);

    // Lease recovery: requeue (then re-drawn in the same transaction, which the WHEN clause ignores), failed, canceled.
    const e = await submit({ maxAttempts: 2 });
    expect(await settle()).toEqual([`queued:${queue}`]);
    await claim(50);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await claim(50)).toBe(e); // recovery requeues e, the draw takes it again
    expect(await settle()).toEqual([`queued:${queue}`]);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await store.claim({ queues: [queue], workerId: w })).toEqual([]); // recovery: attempts exhausted → failed
    expect(await settle()).toEqual([`done:${e}`]);
    const f = await submit();
    await claim(50);
    await store.cancel(f);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await store.claim({ queues: [queue], workerId: w })).toEqual([]); // recovery: flagged → canceled
    expect(await settle()).toEqual([`queued:${queue}`, `done:${f}`]);

    // Keyed replace: the old queued task is canceled and the new one inserted in one transaction.
    const g = await submit({ key: "k" });
    const h = (await store.submit({ name: "n", queue, key: "k", conflict: "replace" })).id;
    ids.add(h);
    expect(await settle()).toEqual([`queued:${queue}`, `done:${g}`, `queued:${queue}`]);

    // Purge deletes terminal rows: no notification.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await store.purge({ olderThanMs: 0 })).length).toBeGreaterThan(0);
    expect(await settle()).toEqual([]);

    // Assigning status without changing it (queued → queued, failed → failed) notifies nothing.
    const schema = store.schema as string;
    await q(`UPDATE "${schema}".cairnq_tasks SET status = status`);
    expect(await settle()).toEqual([]);
  });
});

describe("extension tables (schedules, rate limits) beside the v1 tables", () => {
  /** The schema without the extension tables and their indexes. */
  function v1Part(described: Described): Described {
    const ext = (name: string): boolean => name.startsWith("cairnq_ext_");
    return {
      ...described,
      tables: Object.fromEntries(Object.entries(described.tables).filter(([name]) => !ext(name))),
      indexes: Object.fromEntries(Object.entries(described.indexes).filter(([name]) => !ext(name))),
      constraints: Object.fromEntries(Object.entries(described.constraints).filter(([name]) => !ext(name))),
    };
  }
  const extTables = (described: Described): string[] => Object.keys(described.tables).filter((name) => name.startsWith("cairnq_ext_")).sort();

  it("are created only when their feature is first used, and leave the v1 tables, indexes, trigger, meta and ledger as specified", async () => {
    const schema = schemaName();
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    const v1 = await describeSchema(schema);
    const ledgerBefore = await ledger(schema);
    await store.submit({ name: "plain" });
    await store.submit({ name: "capped" });
    expect(await store.claim({ queues: ["default"], names: ["plain"], workerId: "w", leaseMs: 60_000 })).toHaveLength(1);
    // A claim with globalConcurrency only needs no state of its own.
    expect(await store.claim({ queues: ["default"], names: ["capped"], workerId: "w", leaseMs: 60_000, flowControl: { capped: { globalConcurrency: 1 } } })).toHaveLength(1);
    expect(extTables(await describeSchema(schema))).toEqual([]);
    await store.submit({ name: "limited" });
    expect(await store.claim({ queues: ["default"], names: ["limited"], workerId: "w", leaseMs: 60_000, flowControl: { limited: { rateLimit: { max: 5, perMs: 1000 } } } })).toHaveLength(1);
    expect(extTables(await describeSchema(schema))).toEqual(["cairnq_ext_rate_claims", "cairnq_ext_rate_limits"]);
    await store.submitScheduleSlots({ schedule: "tick", slotsMs: [1000, 2000], task: { name: "tick" } });
    const after = await describeSchema(schema);
    expect(extTables(after)).toEqual(["cairnq_ext_rate_claims", "cairnq_ext_rate_limits", "cairnq_ext_schedules"]);
    expect(v1Part(after)).toEqual(v1);
    expectFinalSchema(schema, v1Part(after));
    expect(await ledger(schema)).toEqual(ledgerBefore);
  });

  it("an installation a v1 peer built by hand keeps its v1 schema exactly when schedules and rate limits are used on it", async () => {
    const schema = await freshSchema();
    await runIn(schema, HAND_WRITTEN_DDL);
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    const v1 = await describeSchema(schema);
    await store.submitScheduleSlots({ schedule: "tick", slotsMs: [1000], task: { name: "tick" } });
    await store.submit({ name: "limited" });
    await store.claim({ queues: ["default"], names: ["limited", "tick"], workerId: "w", leaseMs: 60_000, flowControl: { limited: { rateLimit: { max: 5, perMs: 1000 } } } });
    const after = await describeSchema(schema);
    expect(v1Part(after)).toEqual(v1);
    expect(extTables(after)).toEqual(["cairnq_ext_rate_claims", "cairnq_ext_rate_limits", "cairnq_ext_schedules"]);
    // The peer reads the slot task as an ordinary keyed row.
    expect(
      await q(`SELECT t.name, t.run_at_ms::text AS run_at_ms FROM "${schema}".cairnq_task_keys k JOIN "${schema}".cairnq_tasks t ON t.id = k.task_id WHERE k."key" = $1`, ["cairnq:schedule:tick:1000"]),
    ).toEqual([{ name: "tick", run_at_ms: "1000" }]);
  });
});
