import type { ParamType } from "@cairnq/protocol";
import { BaseSqlSyntax } from "./sql-syntax.js";

const CASTS: Readonly<Record<ParamType, string>> = {
  text: "text",
  int: "bigint",
  float: "double precision",
  bool: "boolean",
  json: "jsonb",
  textList: "text[]",
};

/**
 * Postgres's side of §2.3: `$n` placeholders cast to their type (so a
 * parameter is typed even where only `IS NULL` reads it), native booleans,
 * string lists as `text[]` matched with `= any(…)`, JSON as text cast to
 * `jsonb`, and `FOR UPDATE SKIP LOCKED` row picking.
 *
 * Only the compile-time half of a Postgres dialect: the executor, key lock,
 * migrations and LISTEN wakeups live in `@cairnq/store-postgres`.
 *
 * @example
 * new PostgresSyntax().placeholder(2, "textList"); // "$2::text[]"
 */
export class PostgresSyntax extends BaseSqlSyntax {
  override readonly skipLockedClause: string = " FOR UPDATE SKIP LOCKED";

  placeholder(index: number, type: ParamType): string {
    return type === "json" ? `cast($${index} as jsonb)` : `$${index}::${CASTS[type]}`;
  }

  bindValue(value: unknown, _type: ParamType): unknown {
    return value;
  }

  override jsonLiteral(json: string): string {
    return `cast(${this.literal(json)} as jsonb)`;
  }

  inList(expr: string, listPlaceholder: string): string {
    return `${expr} = any(${listPlaceholder})`;
  }
}
