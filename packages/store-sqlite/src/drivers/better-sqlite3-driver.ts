/**
 * better-sqlite3 behind the driver seam: a native addon, the fastest of the
 * three, loaded only when chosen (an optional peer dependency).
 *
 * Two adjustments over the plain binding:
 * - **Numbered parameters.** better-sqlite3 binds `?1 … ?n` by name only
 *   (`{ 1: v }`), so the positional array is turned into that object.
 * - **Rows built in JavaScript.** Statements that return data run in raw
 *   mode and each row becomes an object through one generated object literal
 *   per statement: the same objects, cheaper to build.
 */
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import type { Row } from "@cairnq/store-kysely";
import type { SQLiteDriver, SQLiteDriverConnection, SQLiteDriverStatement, SQLiteRunResult } from "./sqlite-driver.js";

const NUMBERED = /\?\d/;

function numbered(parameters: ReadonlyArray<unknown>): Record<number, unknown> {
  const named: Record<number, unknown> = {};
  for (let i = 0; i < parameters.length; i++) named[i + 1] = parameters[i];
  return named;
}

/** A row as better-sqlite3 returns it in raw mode: the values in column order. */
type RawRow = unknown[];

/**
 * A function that turns a raw row into the object better-sqlite3 would have built (the same keys in
 * the same order; a repeated name keeps the last value), as one object literal: V8 builds it with a
 * fixed shape, where better-sqlite3's object mode sets every property through the V8 API (measured on
 * the protocol schema, 23 columns: about 1.5–4 µs less per returned row). `null` for names an object
 * literal cannot spell as own properties (`__proto__`): those statements keep object mode.
 */
export function rowBuilder(names: readonly string[]): ((values: RawRow) => Row) | null {
  if (names.includes("__proto__")) return null;
  const body = `return { ${names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(", ")} };`;
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the statement's own column names (JSON-quoted), once per prepared statement.
  return new Function("v", body) as (values: RawRow) => Row;
}

class BetterSqlite3Statement implements SQLiteDriverStatement {
  readonly reader: boolean;
  readonly #statement: BetterSqlite3.Statement;
  readonly #numbered: boolean;
  /** For statements that return data: builds each row from raw mode's values (see {@link rowBuilder}). */
  readonly #row: ((values: RawRow) => Row) | null = null;

  constructor(statement: BetterSqlite3.Statement, sql: string) {
    this.#statement = statement;
    this.reader = statement.reader;
    this.#numbered = NUMBERED.test(sql);
    if (this.reader) {
      this.#row = rowBuilder(statement.columns().map((column) => column.name));
      if (this.#row !== null) statement.raw(true);
    }
  }

  #args(parameters: ReadonlyArray<unknown>): unknown[] {
    if (parameters.length === 0) return [];
    return this.#numbered ? [numbered(parameters)] : [...parameters];
  }

  all(parameters: ReadonlyArray<unknown>): Row[] {
    const rows = this.#statement.all(...this.#args(parameters));
    const row = this.#row;
    return row === null ? (rows as Row[]) : (rows as RawRow[]).map(row);
  }

  get(parameters: ReadonlyArray<unknown>): Row | undefined {
    const value = this.#statement.get(...this.#args(parameters));
    if (value === undefined) return undefined;
    return this.#row === null ? (value as Row) : this.#row(value as RawRow);
  }

  run(parameters: ReadonlyArray<unknown>): SQLiteRunResult {
    return this.#statement.run(...this.#args(parameters));
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<Row> {
    const rows = this.#statement.iterate(...this.#args(parameters));
    const row = this.#row;
    return row === null ? (rows as IterableIterator<Row>) : mapIterator(rows as IterableIterator<RawRow>, row);
  }
}

function* mapIterator<T, U>(values: IterableIterator<T>, map: (value: T) => U): IterableIterator<U> {
  for (const value of values) yield map(value);
}

class BetterSqlite3Connection implements SQLiteDriverConnection {
  constructor(private readonly db: BetterSqlite3.Database) {}

  prepare(sql: string): SQLiteDriverStatement {
    return new BetterSqlite3Statement(this.db.prepare(sql), sql);
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  get open(): boolean {
    return this.db.open;
  }

  close(): void {
    this.db.close();
  }
}

/** better-sqlite3's `Database` class as `require("better-sqlite3")` returns it, typed loosely so these declarations need no `@types/better-sqlite3`. */
export type BetterSqlite3Class = new (filename: string, options?: { timeout?: number }) => object;

/**
 * A {@link SQLiteDriver} over a better-sqlite3 module you loaded yourself —
 * for the `driver` option, when the copy the store would resolve is not the
 * one to use (say, one built for another Node version).
 *
 * @param Database - The module's export: `require("better-sqlite3")`.
 * @param modulePath - Where it resolves (`require.resolve(...)`), so the checkpoint thread can load the same copy; without it, the store's writer checkpoints on its own.
 * @example
 * ```ts
 * const require = createRequire(import.meta.url);
 * const path = require.resolve("/opt/node22/better-sqlite3");
 * const store = new SQLiteStore("cairnq.db", { driver: betterSqlite3Driver(require(path), path) });
 * ```
 */
export function betterSqlite3Driver(Database: BetterSqlite3Class, modulePath: string | null = null): SQLiteDriver {
  const Open = Database as unknown as typeof BetterSqlite3;
  return {
    name: "better-sqlite3",
    openConnection: (filename, busyTimeoutMs) => new BetterSqlite3Connection(new Open(filename, { timeout: busyTimeoutMs })),
    checkpointThread:
      modulePath === null
        ? null
        : {
            source: `const Database = require(workerData.driver);
const open = (file) => {
  const db = new Database(file, { fileMustExist: true, timeout: 0 });
  const statement = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  return { checkpoint: () => statement.get(), close: () => db.close() };
};`,
            data: modulePath,
          },
  };
}

/** Loads better-sqlite3 as seen from this package, or throws what `require` threw. */
export function loadBetterSqlite3(from: string): SQLiteDriver {
  const require = createRequire(from);
  const modulePath = require.resolve("better-sqlite3");
  return betterSqlite3Driver(require(modulePath) as typeof BetterSqlite3, modulePath);
}
