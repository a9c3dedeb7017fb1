import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DatabaseUnusable, isFatalError, ProtocolVersionMismatch, STATUSES } from "@cairnq/protocol";
import { TASK_COLUMNS } from "@cairnq/protocol/adapter";
import { describe, expect, it } from "vitest";
import type { SQLiteDialect } from "../src/index.js";
import { SQLiteStore } from "../src/index.js";
import { exited, nextLine, openStore, spawnFixture, tempFile } from "./helpers.js";

const LEDGER = [
  "0001_init.sql",
  "0002_purge_index.sql",
  "0004_lease_index.sql",
  "0005_clear_terminal_lease.sql",
  "0006_claim_name_index.sql",
  "0007_purge_status_index.sql",
  "0008_claim_due_index.sql",
  "0009_purge_queue_index.sql",
  "0010_drop_status_index.sql",
];

/**
 * [name, type, notnull, default, pk] per column, in order (§3.1–§3.4).
 * Primary keys report `notnull = 0`: they are declared `text PRIMARY KEY`
 * without an explicit NOT NULL, as every other v1 implementation declares them.
 */
const TABLES: Record<string, [string, string, 0 | 1, string | null, 0 | 1][]> = {
  cairnq_tasks: [
    ["id", "text", 0, null, 1],
    ["name", "text", 1, null, 0],
    ["queue", "text", 1, "'default'", 0],
    ["status", "text", 1, null, 0],
    ["payload", "text", 1, null, 0],
    ["result", "text", 0, null, 0],
    ["error", "text", 0, null, 0],
    ["metadata", "text", 1, "'{}'", 0],
    ["progress", "real", 0, null, 0],
    ["message", "text", 0, null, 0],
    ["attempt", "integer", 1, "0", 0],
    ["max_attempts", "integer", 1, "3", 0],
    ["priority", "integer", 1, "0", 0],
    ["worker_id", "text", 0, null, 0],
    ["lease_until_ms", "integer", 0, null, 0],
    ["run_at_ms", "integer", 1, null, 0],
    ["cancel_requested_at_ms", "integer", 0, null, 0],
    ["parent_id", "text", 0, null, 0],
    ["root_id", "text", 0, null, 0],
    ["correlation_id", "text", 0, null, 0],
    ["created_at_ms", "integer", 1, null, 0],
    ["updated_at_ms", "integer", 1, null, 0],
    ["completed_at_ms", "integer", 0, null, 0],
  ],
  cairnq_task_keys: [
    ["key", "text", 0, null, 1],
    ["task_id", "text", 1, null, 0],
    ["created_at_ms", "integer", 1, null, 0],
    ["updated_at_ms", "integer", 1, null, 0],
  ],
  cairnq_meta: [
    ["key", "text", 0, null, 1],
    ["value", "text", 1, null, 0],
  ],
  cairnq_migrations: [
    ["name", "text", 0, null, 1],
    ["applied_at_ms", "integer", 1, null, 0],
  ],
};

/** Index → [columns (with DESC), partial predicate] (§3.5). */
const INDEXES: Record<string, [string[], string | null]> = {
  cairnq_tasks_claim_idx: [["queue", "status", "priority DESC", "run_at_ms", "id"], null],
  cairnq_tasks_claim_name_idx: [["queue", "status", "name", "priority DESC", "run_at_ms", "id"], null],
  cairnq_tasks_name_idx: [["name"], null],
  cairnq_tasks_root_idx: [["root_id"], null],
  cairnq_tasks_correlation_idx: [["correlation_id"], null],
  cairnq_tasks_completed_idx: [["completed_at_ms"], null],
  cairnq_tasks_lease_idx: [["lease_until_ms"], "status = 'running' AND lease_until_ms IS NOT NULL"],
  cairnq_tasks_status_completed_idx: [["status", "completed_at_ms"], null],
  cairnq_tasks_queue_completed_idx: [["queue", "completed_at_ms"], "status IN ('succeeded', 'failed', 'canceled')"],
};

interface Described {
  tables: Record<string, [string, string, number, string | null, number][]>;
  indexes: Record<string, [string[], string | null]>;
  foreignKeys: unknown[];
  meta: Record<string, string>;
}

/** Reads the schema back through SQLite's own introspection, independent of the DDL text where possible. */
function describeSchema(file: string): Described {
  const db = new Database(file, { readonly: true });
  try {
    const tables: Described["tables"] = {};
    const names = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .pluck()
      .all() as string[];
    for (const table of names) {
      const columns = db.pragma(`table_xinfo(${table})`) as { name: string; type: string; notnull: number; dflt_value: string | null; pk: number }[];
      tables[table] = columns.map((c) => [c.name, c.type.toLowerCase(), c.notnull, c.dflt_value, c.pk]);
    }
    const indexes: Described["indexes"] = {};
    const rows = db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%' ORDER BY name")
      .all() as { name: string; sql: string }[];
    for (const { name, sql } of rows) {
      const columns = (db.pragma(`index_xinfo(${name})`) as { name: string; desc: number; key: number }[])
        .filter((c) => c.key === 1)
        .map((c) => (c.desc === 1 ? `${c.name} DESC` : c.name));
      const where = / WHERE (.*)$/.exec(sql);
      // Predicates compare modulo whitespace: a peer may format its DDL differently.
      const predicate = where === null ? null : (where[1] as string).replace(/\s*,\s*/g, ", ").replace(/\s+/g, " ");
      indexes[name] = [columns, predicate];
    }
    const meta = Object.fromEntries(
      (db.prepare('SELECT "key", value FROM cairnq_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]),
    );
    return { tables, indexes, foreignKeys: db.pragma("foreign_key_list(cairnq_task_keys)") as unknown[], meta };
  } finally {
    db.close();
  }
}

function ledger(file: string): { name: string; applied_at_ms: number }[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT name, applied_at_ms FROM cairnq_migrations ORDER BY name").all() as { name: string; applied_at_ms: number }[];
  } finally {
    db.close();
  }
}

function applied(store: SQLiteStore): readonly string[] {
  return (store.dialect as SQLiteDialect).schema.applied;
}

/**
 * The DDL of §3, written out by hand as a peer would run it (not generated by
 * our migration builder), in its final state.
 */
const HAND_WRITTEN_DDL = `
CREATE TABLE cairnq_tasks (
  id text PRIMARY KEY, name text NOT NULL, queue text NOT NULL DEFAULT 'default',
  status text NOT NULL CHECK (status IN ('queued','running','succeeded','failed','canceled')),
  payload text NOT NULL CHECK (json_valid(payload)),
  result text CHECK (result IS NULL OR json_valid(result)),
  error text CHECK (error IS NULL OR json_valid(error)),
  metadata text NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
  progress real, message text,
  attempt integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL DEFAULT 3, priority integer NOT NULL DEFAULT 0,
  worker_id text, lease_until_ms integer, run_at_ms integer NOT NULL, cancel_requested_at_ms integer,
  parent_id text, root_id text, correlation_id text,
  created_at_ms integer NOT NULL, updated_at_ms integer NOT NULL, completed_at_ms integer
);
CREATE TABLE cairnq_task_keys (
  "key" text PRIMARY KEY,
  task_id text NOT NULL REFERENCES cairnq_tasks(id) ON DELETE CASCADE,
  created_at_ms integer NOT NULL, updated_at_ms integer NOT NULL
);
CREATE TABLE cairnq_meta ("key" text PRIMARY KEY, value text NOT NULL);
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

describe("a fresh database (§3)", () => {
  it("has exactly the tables, columns, indexes, meta rows and ledger entries of protocol.md", async () => {
    const file = tempFile();
    const before = Date.now();
    const store = openStore(file);
    await store.connect();
    expect(applied(store)).toEqual(LEDGER);
    const schema = describeSchema(file);
    expect(schema.tables).toEqual(TABLES);
    expect(schema.tables.cairnq_tasks?.map((c) => c[0])).toEqual([...TASK_COLUMNS]);
    expect(schema.indexes).toEqual(INDEXES);
    expect(schema.meta).toEqual({ protocol_version: "1", schema_version: "10" });
    expect(schema.foreignKeys).toEqual([
      expect.objectContaining({ table: "cairnq_tasks", from: "task_id", to: "id", on_delete: "CASCADE" }),
    ]);
    const entries = ledger(file);
    expect(entries.map((e) => e.name)).toEqual(LEDGER);
    for (const entry of entries) {
      expect(Number.isInteger(entry.applied_at_ms)).toBe(true);
      expect(entry.applied_at_ms).toBeGreaterThanOrEqual(before);
      expect(entry.applied_at_ms).toBeLessThanOrEqual(Date.now());
    }
  });

  it("checks status against STATUSES and JSON columns with json_valid", async () => {
    const file = tempFile();
    await openStore(file).connect();
    const db = new Database(file);
    try {
      const insert = db.prepare(
        "INSERT INTO cairnq_tasks (id, name, status, payload, run_at_ms, created_at_ms, updated_at_ms) VALUES (?, 'n', ?, ?, 0, 0, 0)",
      );
      STATUSES.forEach((status, i) => insert.run(`t${i}`, status, "{}"));
      expect(() => insert.run("bad", "paused", "{}")).toThrow(/CHECK constraint/);
      expect(() => insert.run("bad", "queued", "{not json")).toThrow(/CHECK constraint/);
    } finally {
      db.close();
    }
  });

  it("is in WAL mode, creates its parent directory, and cascades key rows on delete", async () => {
    const file = path.join(path.dirname(tempFile()), "nested", "deeper", "q.db");
    const store = openStore(file);
    const task = await store.submit({ name: "n", key: "k" });
    expect(fs.existsSync(file)).toBe(true);
    expect(store.path).toBe(file);
    const db = new Database(file);
    try {
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      db.pragma("foreign_keys = ON");
      db.prepare("DELETE FROM cairnq_tasks WHERE id = ?").run(task.id);
      expect(db.prepare("SELECT count(*) FROM cairnq_task_keys").pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });

  it("works in memory (:memory:) without WAL, privately per store", async () => {
    const a = openStore(":memory:");
    const b = openStore(":memory:");
    const task = await a.submit({ name: "n" });
    expect(await a.get(task.id)).toMatchObject({ id: task.id, status: "queued" });
    expect(await b.get(task.id)).toBeNull();
    const [claimed] = await a.claim({ queues: ["default"], workerId: "w" });
    expect(claimed?.id).toBe(task.id);
  });
});

describe("reconnecting and foreign databases", () => {
  it("re-connecting is idempotent: nothing re-applied, ledger and schema unchanged", async () => {
    const file = tempFile();
    const first = new SQLiteStore(file);
    await first.connect();
    await first.connect();
    await first.close();
    const before = { schema: describeSchema(file), ledger: ledger(file) };
    const second = openStore(file);
    await second.connect();
    expect(applied(second)).toEqual([]);
    expect(describeSchema(file)).toEqual(before.schema);
    expect(ledger(file)).toEqual(before.ledger);
  });

  it("opens a database created by hand with the same DDL (no ledger): every migration is a no-op that records itself", async () => {
    const file = tempFile();
    const raw = new Database(file);
    raw.exec(HAND_WRITTEN_DDL);
    raw
      .prepare(
        "INSERT INTO cairnq_tasks (id, name, status, payload, run_at_ms, created_at_ms, updated_at_ms) VALUES ('task_x', 'n', 'queued', '{}', 0, 0, 0)",
      )
      .run();
    raw.close();
    const store = openStore(file);
    await store.connect();
    expect(applied(store)).toEqual(LEDGER);
    const schema = describeSchema(file);
    expect(schema.tables).toEqual(TABLES);
    expect(schema.indexes).toEqual(INDEXES);
    expect(schema.meta).toEqual({ protocol_version: "1", schema_version: "10" });
    expect(await store.get("task_x")).toMatchObject({ id: "task_x", status: "queued", metadata: {}, attempt: 0 });
  });

  it("opens a hand-made database whose ledger is complete without touching it", async () => {
    const file = tempFile();
    const raw = new Database(file);
    raw.exec(HAND_WRITTEN_DDL);
    raw.exec("CREATE TABLE cairnq_migrations (name text PRIMARY KEY, applied_at_ms integer NOT NULL)");
    const insert = raw.prepare("INSERT INTO cairnq_migrations VALUES (?, 42)");
    for (const name of LEDGER) insert.run(name);
    raw.close();
    const store = openStore(file);
    await store.connect();
    expect(applied(store)).toEqual([]);
    expect(ledger(file).every((e) => e.applied_at_ms === 42)).toBe(true);
  });

  it("upgrades a database left at 0001 (old index shapes, stale lease on a terminal row)", async () => {
    const file = tempFile();
    const raw = new Database(file);
    raw.exec(HAND_WRITTEN_DDL.replace(/CREATE INDEX[^;]*;/g, "").replace("'schema_version', '10'", "'schema_version', '1'"));
    raw.exec("CREATE INDEX cairnq_tasks_claim_idx ON cairnq_tasks (queue, status, priority DESC, created_at_ms)");
    raw.exec("CREATE INDEX cairnq_tasks_status_idx ON cairnq_tasks (status)");
    raw.exec("CREATE INDEX cairnq_tasks_name_idx ON cairnq_tasks (name)");
    raw.exec("CREATE INDEX cairnq_tasks_root_idx ON cairnq_tasks (root_id)");
    raw.exec("CREATE INDEX cairnq_tasks_correlation_idx ON cairnq_tasks (correlation_id)");
    raw.exec("CREATE TABLE cairnq_migrations (name text PRIMARY KEY, applied_at_ms integer NOT NULL)");
    raw.exec("INSERT INTO cairnq_migrations VALUES ('0001_init.sql', 1)");
    raw.exec(
      "INSERT INTO cairnq_tasks (id, name, status, payload, lease_until_ms, run_at_ms, created_at_ms, updated_at_ms, completed_at_ms) " +
        "VALUES ('task_old', 'n', 'succeeded', '{}', 99, 0, 0, 0, 5)",
    );
    raw.close();
    const store = openStore(file);
    await store.connect();
    expect(applied(store)).toEqual(LEDGER.slice(1));
    const schema = describeSchema(file);
    expect(schema.indexes).toEqual(INDEXES);
    expect(schema.meta.schema_version).toBe("10");
    expect((await store.get("task_old"))?.lease_until_ms).toBeNull();
  });
});

/**
 * What earlier builds of this store created: the same schema, but with every
 * primary key declared `NOT NULL PRIMARY KEY`, and a complete ledger.
 */
const EARLIER_BUILD_DDL =
  HAND_WRITTEN_DDL.replaceAll(" PRIMARY KEY", " NOT NULL PRIMARY KEY") +
  "CREATE TABLE cairnq_migrations (name text NOT NULL PRIMARY KEY, applied_at_ms integer NOT NULL);";

/** {@link TABLES} as an earlier build left them: primary keys report `notnull = 1`. */
const EARLIER_BUILD_TABLES = Object.fromEntries(
  Object.entries(TABLES).map(([table, columns]) => [table, columns.map((c) => (c[4] === 1 ? [c[0], c[1], 1, c[3], c[4]] : c))]),
);

describe("primary keys without an explicit NOT NULL (§3.1)", () => {
  it("a fresh database reports notnull = 0 for every primary key, as other v1 implementations' databases do", async () => {
    const file = tempFile();
    await openStore(file).connect();
    const db = new Database(file, { readonly: true });
    try {
      const keys: [string, string][] = [
        ["cairnq_tasks", "id"],
        ["cairnq_task_keys", "key"],
        ["cairnq_meta", "key"],
        ["cairnq_migrations", "name"],
      ];
      for (const [table, column] of keys) {
        const info = (db.pragma(`table_info(${table})`) as { name: string; notnull: number; pk: number }[]).find((c) => c.name === column);
        expect({ table, column, notnull: info?.notnull, pk: info?.pk }).toEqual({ table, column, notnull: 0, pk: 1 });
      }
      // The DDL text itself says exactly `<col> text PRIMARY KEY`.
      const ddl = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]).join("\n");
      expect(ddl).not.toMatch(/NOT NULL PRIMARY KEY/);
      expect(ddl.match(/ text PRIMARY KEY/g)).toHaveLength(4);
    } finally {
      db.close();
    }
  });

  it("a database created by an earlier build (NOT NULL PRIMARY KEY) opens and works as it is, with no new ledger entry", async () => {
    const file = tempFile();
    const raw = new Database(file);
    raw.exec(EARLIER_BUILD_DDL);
    const insert = raw.prepare("INSERT INTO cairnq_migrations VALUES (?, 7)");
    for (const name of LEDGER) insert.run(name);
    raw.close();
    const before = describeSchema(file);
    expect(before.tables).toEqual(EARLIER_BUILD_TABLES);

    const store = openStore(file);
    await store.connect();
    expect(applied(store)).toEqual([]);
    const task = await store.submit({ name: "n", key: "k", payload: { a: 1 } });
    expect((await store.getByKey("k"))?.id).toBe(task.id);
    const [claimed] = await store.claim({ queues: ["default"], workerId: "w" });
    expect(claimed?.id).toBe(task.id);
    expect(await store.complete({ taskId: task.id, workerId: "w", result: { ok: true } })).toMatchObject({ status: "succeeded" });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await store.purge({ olderThanMs: 0 })).toEqual([task.id]);
    expect(await store.getByKey("k")).toBeNull();
    await store.close();

    // Left exactly as it was: same schema (notnull = 1 kept), same ledger, nothing added.
    expect(describeSchema(file)).toEqual(before);
    expect(ledger(file)).toEqual(LEDGER.map((name) => ({ name, applied_at_ms: 7 })).sort((a, b) => a.name.localeCompare(b.name)));
  });
});

describe("protocol-version guard (§11)", () => {
  it.each([
    ["2", 2],
    [null, 0],
  ])("protocol_version %s → ProtocolVersionMismatch(stored %i), and the store refuses to run", async (value, stored) => {
    const file = tempFile();
    const setup = new SQLiteStore(file);
    await setup.connect();
    await setup.close();
    const raw = new Database(file);
    if (value === null) raw.exec("DELETE FROM cairnq_meta WHERE key = 'protocol_version'");
    else raw.prepare("UPDATE cairnq_meta SET value = ? WHERE key = 'protocol_version'").run(value);
    raw.close();
    const store = openStore(file);
    const err = await store.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolVersionMismatch);
    expect(err).toMatchObject({ storedVersion: stored, supportedVersion: 1 });
    await expect(store.submit({ name: "n" })).rejects.toBeInstanceOf(ProtocolVersionMismatch);
    await store.close();
    // Nothing was written by the refused store.
    const check = new Database(file, { readonly: true });
    expect(check.prepare("SELECT count(*) FROM cairnq_tasks").pluck().get()).toBe(0);
    check.close();
  });
});

describe("concurrent migration from several processes (§3.7)", () => {
  it("applies each migration exactly once when 4 processes connect to one fresh file at once", async () => {
    const file = tempFile();
    const children = Array.from({ length: 4 }, () => spawnFixture("connect-child.ts", [file]));
    await Promise.all(children.map((child) => nextLine(child, (line) => line === "ready")));
    const results = children.map((child) => nextLine(child, (line) => line.startsWith("{")));
    for (const child of children) child.stdin.write("go\n");
    const reports = (await Promise.all(results)).map((line) => JSON.parse(line) as { applied?: string[]; error?: string });
    expect(reports.filter((r) => r.error !== undefined)).toEqual([]);
    const all = reports.flatMap((r) => r.applied ?? []);
    expect(all.sort()).toEqual(LEDGER);
    expect(await Promise.all(children.map(exited))).toEqual([0, 0, 0, 0]);
    expect(ledger(file).map((e) => e.name)).toEqual(LEDGER);
    const schema = describeSchema(file);
    expect(schema.tables).toEqual(TABLES);
    expect(schema.indexes).toEqual(INDEXES);
  });
});

describe("open errors name the file and say what is wrong (fatal: retrying cannot help)", () => {
  async function openError(file: string): Promise<DatabaseUnusable> {
    const store = openStore(file);
    const err = await store.connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseUnusable);
    const unusable = err as DatabaseUnusable;
    expect(unusable.database).toBe(file);
    expect(unusable.message).toContain(`'${file}'`);
    expect(unusable.fatal).toBe(true);
    expect(isFatalError(unusable)).toBe(true);
    // Every later call fails the same way (connect is retried, and fails again, naming the file).
    await expect(store.submit({ name: "n" })).rejects.toBeInstanceOf(DatabaseUnusable);
    return unusable;
  }

  it("a directory", async () => {
    const dir = path.dirname(tempFile());
    const err = await openError(dir);
    expect(err.reason).toMatch(/is a directory, not a database file/);
    expect(err.reason).toContain(path.join(dir, "cairnq.db"));
    expect(err.reason).toContain("SQLITE_CANTOPEN");
  });

  it("a file that is not a database", async () => {
    const file = tempFile("notes.txt");
    fs.writeFileSync(file, "these are my notes, not a database\n".repeat(100));
    const err = await openError(file);
    expect(err.reason).toMatch(/exists but is not a SQLite database/);
    expect(err.reason).toContain("SQLITE_NOTADB");
    // The file is left as it was.
    expect(fs.readFileSync(file, "utf8")).toContain("these are my notes");
  });

  it("a path under a regular file (its directory cannot be created)", async () => {
    const file = tempFile("plain-file");
    fs.writeFileSync(file, "x");
    const err = await openError(path.join(file, "sub", "cairnq.db"));
    expect(err.reason).toMatch(/part of its directory path is a file/);
  });

  it("a database file this process may not open (a real process without the permission)", () => {
    const file = tempFile();
    fs.writeFileSync(file, "");
    fs.chmodSync(path.dirname(file), 0o755);
    fs.chmodSync(file, 0o000);
    const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "open-store.mjs");
    // Root may open anything: as root, the child runs as an unprivileged user (the one Postgres tests use).
    const argv = process.getuid?.() === 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", process.execPath, fixture, file] : [process.execPath, fixture, file];
    const child = spawnSync(argv[0] as string, argv.slice(1), { encoding: "utf8", timeout: 20_000 });
    expect(child.status, child.stderr).toBe(0);
    const outcome = JSON.parse(child.stdout.trim().split("\n").pop() as string) as Record<string, unknown>;
    expect(outcome).toMatchObject({ ok: false, name: "DatabaseUnusable", database: file, fatal: true });
    expect(outcome.message).toMatch(/cannot open it for reading and writing; check its owner and permissions/);
  });

  it("leaves errors that are not about the file as they are (a protocol-version mismatch stays one)", async () => {
    const file = tempFile();
    await openStore(file).connect();
    const raw = new Database(file);
    raw.exec("UPDATE cairnq_meta SET value = '2' WHERE key = 'protocol_version'");
    raw.close();
    const err = await openStore(file).connect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolVersionMismatch);
    expect(isFatalError(err)).toBe(true);
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
    };
  }
  const extTables = (described: Described): string[] => Object.keys(described.tables).filter((name) => name.startsWith("cairnq_ext_"));

  it("are created only when their feature is first used, and leave the v1 tables, indexes, meta and ledger as specified", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    const v1 = describeSchema(file);
    const ledgerBefore = ledger(file);
    await store.submit({ name: "plain" });
    await store.submit({ name: "capped" });
    // A claim with globalConcurrency only needs no state of its own.
    expect(await store.claim({ queues: ["default"], names: ["plain"], workerId: "w", leaseMs: 60_000 })).toHaveLength(1);
    expect(await store.claim({ queues: ["default"], names: ["capped"], workerId: "w", leaseMs: 60_000, flowControl: { capped: { globalConcurrency: 1 } } })).toHaveLength(1);
    expect(extTables(describeSchema(file))).toEqual([]);
    await store.submit({ name: "limited" });
    expect(await store.claim({ queues: ["default"], names: ["limited"], workerId: "w", leaseMs: 60_000, flowControl: { limited: { rateLimit: { max: 5, perMs: 1000 } } } })).toHaveLength(1);
    expect(extTables(describeSchema(file))).toEqual(["cairnq_ext_rate_claims"]);
    await store.submitScheduleSlots({ schedule: "tick", slotsMs: [1000, 2000], task: { name: "tick" } });
    const after = describeSchema(file);
    expect(extTables(after)).toEqual(["cairnq_ext_rate_claims", "cairnq_ext_schedules"]);
    expect(v1Part(after)).toEqual(v1);
    expect(v1Part(after).tables).toEqual(TABLES);
    expect(ledger(file)).toEqual(ledgerBefore);
  });

  it("a database a v1 peer built by hand keeps its v1 schema exactly when schedules and rate limits are used on it", async () => {
    const file = tempFile();
    const peer = new Database(file);
    peer.exec(HAND_WRITTEN_DDL);
    peer.close();
    const store = openStore(file);
    await store.connect();
    const v1 = describeSchema(file);
    await store.submitScheduleSlots({ schedule: "tick", slotsMs: [1000], task: { name: "tick" } });
    await store.submit({ name: "limited" });
    await store.claim({ queues: ["default"], names: ["limited", "tick"], workerId: "w", leaseMs: 60_000, flowControl: { limited: { rateLimit: { max: 5, perMs: 1000 } } } });
    const after = describeSchema(file);
    expect(v1Part(after)).toEqual(v1);
    expect(extTables(after)).toEqual(["cairnq_ext_rate_claims", "cairnq_ext_schedules"]);
    // The peer reads the slot task as an ordinary keyed row.
    const reader = new Database(file, { readonly: true });
    try {
      expect(reader.prepare("SELECT t.name, t.run_at_ms FROM cairnq_task_keys k JOIN cairnq_tasks t ON t.id = k.task_id WHERE k.\"key\" = ?").get("cairnq:schedule:tick:1000")).toEqual({ name: "tick", run_at_ms: 1000 });
    } finally {
      reader.close();
    }
  });
});
