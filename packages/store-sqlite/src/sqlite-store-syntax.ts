import { SqliteSyntax } from "@cairnq/store-kysely";

/**
 * The primary key's index of a protocol v1 table on SQLite: each table's key is declared exactly
 * `<col> text PRIMARY KEY` (§3.1), which SQLite keeps in the index it names after the table.
 */
function primaryKeyIndex(table: string): string {
  return `sqlite_autoindex_${table}_1`;
}

/**
 * The core's {@link SqliteSyntax} for this store: a statement that finds task rows by id names the
 * table with its primary key's index pinned (`cairnq_tasks INDEXED BY sqlite_autoindex_cairnq_tasks_1`).
 *
 * Why: §3.9 analyses the table when a store connects, often while it holds a task or none, and
 * SQLite's planner trusts those statistics until they are refreshed (`PRAGMA optimize`, at most once
 * a minute, and only once the table grew tenfold): a table it believes holds one row it scans for
 * the ids of `UPDATE … WHERE id IN (SELECT id … LIMIT ?)` rather than looking them up, so every
 * claim draw read the whole table — 150 µs of the worker's CPU per claim with 500 tasks in it, 560
 * µs with 4,000 (bench/call-timeline.mjs, idle worker, sequential `call()`s), where the lookup
 * costs the same at any size.
 *
 * @example
 * new SQLiteStoreSyntax().tableById("cairnq_tasks"); // "cairnq_tasks INDEXED BY sqlite_autoindex_cairnq_tasks_1"
 */
export class SQLiteStoreSyntax extends SqliteSyntax {
  override tableById(table: string): string {
    return `${table} INDEXED BY ${primaryKeyIndex(table)}`;
  }
}
