import type { ParamExpr, ParamType } from "@cairnq/protocol/adapter";
import type { Bind } from "@cairnq/store-kysely";
import { SqliteSyntax } from "@cairnq/store-kysely";
import { topRowsJoin } from "./mysql-top-rows.js";

/** `JSON_TABLE` column types of a multi-row statement's parameters (text compared as bytes, like the tables' `VARBINARY`). */
const BATCH_COLUMN_TYPES: Readonly<Record<ParamType, string>> = {
  text: "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
  json: "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
  textList: "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
  int: "BIGINT",
  float: "DOUBLE",
  bool: "INT",
};

/**
 * MySQL/MariaDB's side of §2.3, the compile-time half of the dialect. It
 * shares SQLite's placeholders and binding: numbered `?1 … ?n` (the
 * executor's statement plan turns them into the driver's positional `?` and
 * repeats a value read twice), booleans as `1`/`0`, string lists as JSON
 * array text — expanded here with `JSON_TABLE`; JSON as text,
 * back-quoted identifiers, `ON DUPLICATE KEY UPDATE` for the key upsert and
 * `FOR UPDATE SKIP LOCKED` row picking (MariaDB 10.6+, MySQL 8).
 *
 * @example
 * new MySQLSyntax().inList("queue", "?1"); // "queue IN (SELECT v FROM JSON_TABLE(?1, '$[*]' COLUMNS (v VARCHAR(255) PATH '$')) cq_l)"
 */
export class MySQLSyntax extends SqliteSyntax {
  override readonly skipLockedClause: string = " FOR UPDATE SKIP LOCKED";

  /**
   * The bound rows of a multi-row statement (the write combiner's): one JSON array of rows, each an
   * array of the row's values in `params` order, expanded with `JSON_TABLE` into typed columns
   * `p_<name>` — `JSON_TABLE(?n, '$[*]' COLUMNS (p_taskId LONGTEXT … PATH '$[0]', …)) AS b`. A JSON
   * `null` reads as SQL `NULL`; JSON documents travel as their text, booleans as 0/1 (the rows are
   * SQLite's `batchRows`, JSON text).
   */
  override batchSource(params: readonly ParamExpr[], slot: (key: string, bind: Bind) => number): string {
    const index = slot("#rows", { kind: "rows", params });
    const columns = params.map((p, i) => `${this.quoteId(`p_${p.name}`)} ${BATCH_COLUMN_TYPES[p.type]} PATH '$[${i}]'`);
    return `JSON_TABLE(?${index}, '$[*]' COLUMNS (${columns.join(", ")})) AS b`;
  }

  override literal(value: string | number | boolean | null): string {
    // Backslash is an escape character in MySQL string literals unless NO_BACKSLASH_ESCAPES is set.
    if (typeof value === "string") return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
    return super.literal(value);
  }

  override quoteId(name: string): string {
    return `\`${name.replaceAll("`", "``")}\``;
  }

  override inList(expr: string, listPlaceholder: string): string {
    return `${expr} IN (SELECT v FROM JSON_TABLE(${listPlaceholder}, '$[*]' COLUMNS (v VARCHAR(255) PATH '$')) cq_l)`;
  }

  /**
   * None: MariaDB lets no derived table read the outer row, so the list form (SQLite's
   * `json_group_array` over the correlated walk) cannot be written; group draws take {@link topRowsJoin}.
   */
  override topRowsList(): null {
    return null;
  }

  /** Each outer row's top rows without `LATERAL`, walked one row at a time: see {@link topRowsJoin}. */
  override topRowsJoin(table: string, alias: string, key: string, subquery: string): string {
    return topRowsJoin(table, alias, key, subquery);
  }

  override upsertKey(key: string, taskId: string, now: string): string {
    const k = this.quoteId("key");
    return (
      `INSERT INTO cairnq_task_keys (${k}, task_id, created_at_ms, updated_at_ms) VALUES (${key}, ${taskId}, ${now}, ${now}) ` +
      `ON DUPLICATE KEY UPDATE task_id = VALUES(task_id), updated_at_ms = VALUES(updated_at_ms)`
    );
  }
}
