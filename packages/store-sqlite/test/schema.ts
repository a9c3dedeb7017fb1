/**
 * The v1 schema of protocol.md §3 as the tests expect a SQLite file to hold
 * it, and the readers that describe a file's schema through SQLite's own
 * introspection (the in-process and the multi-process schema tests share them).
 */
import Database from "better-sqlite3";

export const LEDGER = [
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
export const TABLES: Record<string, [string, string, 0 | 1, string | null, 0 | 1][]> = {
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
export const INDEXES: Record<string, [string[], string | null]> = {
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

export interface Described {
  tables: Record<string, [string, string, number, string | null, number][]>;
  indexes: Record<string, [string[], string | null]>;
  foreignKeys: unknown[];
  meta: Record<string, string>;
}

/** Reads the schema back through SQLite's own introspection, independent of the DDL text where possible. */
export function describeSchema(file: string): Described {
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

export function ledger(file: string): { name: string; applied_at_ms: number }[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT name, applied_at_ms FROM cairnq_migrations ORDER BY name").all() as { name: string; applied_at_ms: number }[];
  } finally {
    db.close();
  }
}
