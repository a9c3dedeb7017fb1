/**
 * The SQLite driver seam: what the store needs from a SQLite binding, as
 * "only the methods we call" interfaces, so the store never imports a driver
 * and each binding (better-sqlite3, Node's `node:sqlite`, Bun's `bun:sqlite`)
 * is one small adapter file beside this one.
 *
 * Terminology:
 * - **driver**: a binding the store can open connections with, named by
 *   {@link SQLiteDriverName}; chosen by the `driver` option or, without one,
 *   the first available of better-sqlite3, `node:sqlite`, `bun:sqlite`.
 * - **connection**: one open database handle ({@link SQLiteDriverConnection}).
 * - **statement**: one prepared statement on a connection
 *   ({@link SQLiteDriverStatement}), which returns row objects whatever the
 *   binding's own row format is.
 */
import type { Row } from "@cairnq/store-kysely";

/** The SQLite bindings the store can run on. */
export type SQLiteDriverName = "better-sqlite3" | "node:sqlite" | "bun:sqlite";

/** Every {@link SQLiteDriverName}, in the order the store tries them when no `driver` is given. */
export const SQLITE_DRIVER_NAMES = Object.freeze(["better-sqlite3", "node:sqlite", "bun:sqlite"] as const satisfies readonly SQLiteDriverName[]);

/** What a write statement reports. */
export interface SQLiteRunResult {
  readonly changes: number | bigint;
  readonly lastInsertRowid: number | bigint;
}

/**
 * One prepared statement. Parameters are positional: the store compiles
 * `?1 … ?n`, which binds by position on every driver (better-sqlite3's
 * adapter translates them to its named form).
 */
export interface SQLiteDriverStatement {
  /** True when the statement returns rows (a `SELECT`, a `PRAGMA` with a result, a write with `RETURNING`). */
  readonly reader: boolean;
  /** Runs the statement and returns every row as an object keyed by column name. */
  all(parameters: ReadonlyArray<unknown>): Row[];
  /** Runs the statement and returns its first row, or `undefined`. */
  get(parameters: ReadonlyArray<unknown>): Row | undefined;
  /** Runs a statement that returns no rows. */
  run(parameters: ReadonlyArray<unknown>): SQLiteRunResult;
  /** Runs the statement and yields its rows one at a time. */
  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<Row>;
}

/** One open database handle. Every call is synchronous. */
export interface SQLiteDriverConnection {
  /** Prepares one statement. */
  prepare(sql: string): SQLiteDriverStatement;
  /** Runs one or more statements that return nothing (DDL, `PRAGMA x = y`). */
  exec(sql: string): void;
  /** Whether a transaction is open; false again after SQLite rolled one back on its own. */
  readonly inTransaction: boolean;
  /** Whether the handle is open. */
  readonly open: boolean;
  /** Closes the handle. */
  close(): void;
}

/**
 * A checkpoint thread's way to open the database (see
 * `sqlite-checkpointer.ts`): a CommonJS snippet evaluated in a
 * `worker_threads` worker that defines `open(file)`, returning an object with
 * `checkpoint()` and `close()`, and the data it reads as `workerData.driver`.
 */
export interface CheckpointThreadSource {
  readonly source: string;
  readonly data: unknown;
}

/** A loaded binding: opens connections. */
export interface SQLiteDriver {
  /** Which binding this is (`store.driver` reports it). */
  readonly name: SQLiteDriverName;
  /**
   * Opens `filename` (a path, `:memory:` or `""`; the store never passes a `file:` URI) read-write,
   * creating it if absent, with SQLite's busy handler set to `busyTimeoutMs`.
   */
  openConnection(filename: string, busyTimeoutMs: number): SQLiteDriverConnection;
  /** How a checkpoint thread opens the file, or null where this runtime runs none (the writer checkpoints itself). */
  readonly checkpointThread: CheckpointThreadSource | null;
}

/** The value of the first column of the first row of `sql` (a `PRAGMA` that returns one value), or `undefined`. */
export function pragmaValue(connection: SQLiteDriverConnection, sql: string): unknown {
  const row = connection.prepare(sql).get([]);
  return row === undefined ? undefined : Object.values(row)[0];
}
