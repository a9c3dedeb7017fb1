/**
 * Bun's built-in `bun:sqlite` behind the driver seam: SQLite under Bun,
 * where better-sqlite3 (a Node addon) does not load.
 */
import { createRequire } from "node:module";
import type { Row } from "@cairnq/store-kysely";
import type { SQLiteDriver, SQLiteDriverConnection, SQLiteDriverStatement, SQLiteRunResult } from "./sqlite-driver.js";

/** Bun's `Statement`: only the members we use. */
interface BunStatement {
  all(...parameters: unknown[]): unknown[];
  get(...parameters: unknown[]): unknown;
  run(...parameters: unknown[]): SQLiteRunResult;
  iterate?(...parameters: unknown[]): IterableIterator<unknown>;
  readonly columnNames: string[];
}

/** Bun's `Database`: only the members we use. */
interface BunDatabase {
  prepare(sql: string): BunStatement;
  exec(sql: string): void;
  close(): void;
  readonly inTransaction: boolean;
}

/** The module `bun:sqlite`: only its `Database` class. */
export interface BunSqliteModule {
  Database: new (filename: string, options?: { create?: boolean; readwrite?: boolean }) => BunDatabase;
}

class BunSqliteStatement implements SQLiteDriverStatement {
  readonly reader: boolean;

  constructor(private readonly statement: BunStatement) {
    this.reader = statement.columnNames.length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): Row[] {
    return this.statement.all(...parameters) as Row[];
  }

  get(parameters: ReadonlyArray<unknown>): Row | undefined {
    // Bun answers "no row" with null.
    return (this.statement.get(...parameters) ?? undefined) as Row | undefined;
  }

  run(parameters: ReadonlyArray<unknown>): SQLiteRunResult {
    return this.statement.run(...parameters);
  }

  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<Row> {
    const rows = this.statement.iterate === undefined ? this.statement.all(...parameters) : this.statement.iterate(...parameters);
    return rows[Symbol.iterator]() as IterableIterator<Row>;
  }
}

class BunSqliteConnection implements SQLiteDriverConnection {
  #open = true;

  constructor(private readonly db: BunDatabase) {}

  prepare(sql: string): SQLiteDriverStatement {
    return new BunSqliteStatement(this.db.prepare(sql));
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  get open(): boolean {
    return this.#open;
  }

  close(): void {
    this.#open = false;
    this.db.close();
  }
}

/** Wraps a loaded `bun:sqlite` module. */
export function bunSqliteDriver(module: BunSqliteModule): SQLiteDriver {
  return {
    name: "bun:sqlite",
    openConnection: (filename, busyTimeoutMs) => {
      const db = new module.Database(filename, { create: true, readwrite: true });
      try {
        db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
      } catch (err) {
        db.close();
        throw err;
      }
      return new BunSqliteConnection(db);
    },
    // The writer keeps SQLite's own automatic checkpoint under Bun: no checkpoint thread.
    checkpointThread: null,
  };
}

/** Loads `bun:sqlite`, or throws an `Error` saying why it cannot be used. */
export function loadBunSqlite(from: string): SQLiteDriver {
  const bun = (process.versions as Record<string, string | undefined>).bun;
  if (bun === undefined) throw new Error(`bun:sqlite exists only under Bun, and this is Node ${process.version}`);
  return bunSqliteDriver(createRequire(from)("bun:sqlite") as BunSqliteModule);
}
