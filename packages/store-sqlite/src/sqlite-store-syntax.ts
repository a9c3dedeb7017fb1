import type { ParamType } from "@cairnq/protocol/adapter";
import { SqliteSyntax } from "@cairnq/store-kysely";

/**
 * The primary key's index of a protocol v1 table on SQLite: each table's key is declared exactly
 * `<col> text PRIMARY KEY` (§3.1), which SQLite keeps in the index it names after the table.
 */
function primaryKeyIndex(table: string): string {
  return `sqlite_autoindex_${table}_1`;
}

/**
 * The core's {@link SqliteSyntax} for this store, with two changes that keep SQLite's planner
 * from working against the store's prepared statements:
 *
 * - **Placeholders are `+?n`** (unary plus, which SQLite evaluates to the value itself). Where the
 *   planner may consult `sqlite_stat4` (better-sqlite3 builds SQLite with it, and §3.9's `ANALYZE`
 *   fills it), a bare `?n` compared with an indexed column makes the statement's plan depend on
 *   the bound value, and SQLite then throws the compiled statement away and prepares it again
 *   every time that parameter is bound — on every run: the claim's probe, lease recovery, draw
 *   and reprobe were parsed and planned anew on every claim. `+?n` is not a bound value to the
 *   planner, so statements are prepared once and planned from `sqlite_stat1` as on drivers without
 *   `sqlite_stat4`. Measured with two better-sqlite3 connections on one file, one inserting a
 *   task, the other claiming and completing it, 2,000 rounds: worker CPU per draw 91–100 →
 *   34 µs (median of each run), samples under `sqlite3Reprepare` 10.3% → 0% (perf).
 * - **A statement that finds task rows by id names the table with its primary key's index
 *   pinned** (`cairnq_tasks INDEXED BY sqlite_autoindex_cairnq_tasks_1`). §3.9 analyses the
 *   table when a store connects, often while it holds a task or none, and SQLite's planner
 *   trusts those statistics until they are refreshed (`PRAGMA optimize`, at most once a minute,
 *   and only once the table grew tenfold): a table it believes holds one row it scans for the
 *   ids of `UPDATE … WHERE id IN (SELECT id … LIMIT ?)` rather than looking them up, so every
 *   claim draw read the whole table (worker CPU per draw 163 µs with ~300 tasks in the table,
 *   456 µs with ~2,300: `bench/call-timeline.mjs`, idle worker, sequential `call()`s), where the
 *   lookup costs the same at any size.
 *
 * @example
 * new SQLiteStoreSyntax().placeholder(1, "text"); // "+?1"
 * new SQLiteStoreSyntax().tableById("cairnq_tasks"); // "cairnq_tasks INDEXED BY sqlite_autoindex_cairnq_tasks_1"
 */
export class SQLiteStoreSyntax extends SqliteSyntax {
  override placeholder(index: number, type: ParamType): string {
    return `+${super.placeholder(index, type)}`;
  }

  override tableById(table: string): string {
    return `${table} INDEXED BY ${primaryKeyIndex(table)}`;
  }
}
