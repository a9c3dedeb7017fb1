import type { ParamExpr, Params, ParamType } from "@cairnq/protocol/adapter";
import type { Bind } from "./compiler.js";
import { BaseSqlSyntax } from "./sql-syntax.js";

/**
 * SQLite's side of §2.3: numbered placeholders `?1 … ?n` (one per distinct
 * parameter, so `now` is a single bound value however often a statement reads
 * it), booleans as `0`/`1`, string lists as JSON array text expanded with
 * `json_each`, JSON as text. Also fits libSQL.
 *
 * Drivers that bind numbered parameters by name rather than by position
 * (better-sqlite3) must pass `{ 1: v1, 2: v2, … }`; `@cairnq/store-sqlite`
 * does that in its statement cache.
 *
 * @example
 * new SqliteSyntax().inList("queue", "?1"); // "queue IN (SELECT value FROM json_each(?1))"
 */
export class SqliteSyntax extends BaseSqlSyntax {
  placeholder(index: number, _type: ParamType): string {
    return `?${index}`;
  }

  bindValue(value: unknown, type: ParamType): unknown {
    switch (type) {
      case "bool":
        return value === true ? 1 : 0;
      case "textList":
        return JSON.stringify(value);
      case "text":
      case "int":
      case "float":
      case "json":
        return value;
    }
  }

  override literal(value: string | number | boolean | null): string {
    if (typeof value === "boolean") return value ? "1" : "0";
    return super.literal(value);
  }

  inList(expr: string, listPlaceholder: string): string {
    return `${expr} IN (SELECT value FROM json_each(${listPlaceholder}))`;
  }

  /** `(SELECT json_group_array(json_array(<columns>)) FROM (<subquery>))`: see `SqlSyntax.topRowsList`. */
  topRowsList(subquery: string, columns: readonly string[]): string | null {
    return `(SELECT json_group_array(json_array(${columns.join(", ")})) FROM (${subquery}))`;
  }

  /**
   * The rows as one JSON array of arrays, expanded with `json_each`:
   * `(SELECT value ->> 0 AS "p_taskId", … FROM json_each(?1)) AS b`. JSON parameters travel as their
   * text, booleans as 0/1, as in single-row statements.
   */
  override batchSource(params: readonly ParamExpr[], slot: (key: string, bind: Bind) => number): string {
    const index = slot("#rows", { kind: "rows", params });
    const columns = params.map((p, i) => `value ->> ${i} AS ${this.quoteId(`p_${p.name}`)}`);
    return `(SELECT ${columns.join(", ")} FROM json_each(?${index})) AS b`;
  }

  override batchRows(rows: readonly Params[], params: readonly ParamExpr[]): unknown {
    return JSON.stringify(super.batchRows(rows, params));
  }
}
