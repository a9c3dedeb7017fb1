import type { TaskColumn } from "@cairnq/protocol/adapter";
import { JSON_COLUMNS, TASK_COLUMNS } from "@cairnq/protocol/adapter";
import { PostgresSyntax } from "@cairnq/store-kysely";
import { terminalRowSignalSql } from "./postgres-done-row.js";

const JSON_COLUMN_SET: ReadonlySet<string> = new Set(JSON_COLUMNS);

/**
 * The core's {@link PostgresSyntax} for the `pg` driver: every statement
 * that returns task rows lists the §3.1 columns in order and selects the four
 * `jsonb` columns as text (`payload::text AS payload`, …).
 *
 * Why: `pg` decodes `jsonb` itself, so a payload that is a JSON string
 * (`"hello"`) would reach the store as the JS string `hello`, and the shared
 * row decoder — which parses a JSON column whenever the driver returns text
 * (§2.2) — would parse it a second time. Returning text for every JSON column
 * keeps one decoding path for every driver and every peer-written value, and
 * works for a caller's pool or Kysely instance whose type parsers we must
 * not change.
 *
 * A transition that can end a task also NOTIFYs each row it ended on the
 * done-row channel (`postgres-done-row.ts`).
 *
 * @example
 * new PostgresStoreSyntax().taskColumns("t"); // "t.id, t.name, …, t.payload::text AS payload, …"
 */
export class PostgresStoreSyntax extends PostgresSyntax {
  readonly #plain: string;
  readonly #byAlias = new Map<string, string>();

  constructor() {
    super();
    this.#plain = columnList(undefined);
  }

  override taskColumns(alias?: string, columns?: readonly TaskColumn[]): string {
    if (columns !== undefined) return columnList(alias, columns);
    if (alias === undefined) return this.#plain;
    let list = this.#byAlias.get(alias);
    if (list === undefined) {
      list = columnList(alias);
      this.#byAlias.set(alias, list);
    }
    return list;
  }

  /** Sends each row that ended terminal on the done-row channel in the same statement (`postgres-done-row.ts`). */
  terminalRowSignal(update: string, returning: "task" | readonly TaskColumn[]): string {
    return terminalRowSignalSql(update, returning, this.#plain);
  }
}

function columnList(alias: string | undefined, columns: readonly TaskColumn[] = TASK_COLUMNS): string {
  const prefix = alias === undefined ? "" : `${alias}.`;
  return columns.map((column) => (JSON_COLUMN_SET.has(column) ? `${prefix}${column}::text AS ${column}` : `${prefix}${column}`)).join(", ");
}
