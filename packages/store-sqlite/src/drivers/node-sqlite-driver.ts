/**
 * Node's built-in `node:sqlite` (`DatabaseSync`) behind the driver seam: no
 * native addon to compile, on Node ≥ 22.16 (the first 22.x with the two calls
 * the store needs besides the basics: `StatementSync.columns()`, which tells
 * a statement that returns rows from one that does not, and
 * `DatabaseSync.isTransaction`, which tells when SQLite rolled a transaction
 * back on its own).
 */
import type { Row } from "@cairnq/store-kysely";
import { rowBuilder } from "./better-sqlite3-driver.js";
import type { SQLiteDriver, SQLiteDriverConnection, SQLiteDriverStatement, SQLiteRunResult } from "./sqlite-driver.js";

/** `StatementSync`: only the methods we call. */
interface NodeStatement {
  all(...parameters: unknown[]): unknown[];
  get(...parameters: unknown[]): unknown;
  run(...parameters: unknown[]): SQLiteRunResult;
  iterate?(...parameters: unknown[]): IterableIterator<unknown>;
  columns(): { name: string }[];
  setReturnArrays?(enabled: boolean): void;
}

/** `DatabaseSync`: only the members we use. */
interface NodeDatabase {
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
  readonly isOpen?: boolean;
  readonly isTransaction: boolean;
}

/** The module `node:sqlite`: only its `DatabaseSync` class. */
export interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { open?: boolean }) => NodeDatabase;
}

type RawRow = unknown[];

class NodeSqliteStatement implements SQLiteDriverStatement {
  readonly reader: boolean;
  readonly #statement: NodeStatement;
  /**
   * Rows come back as arrays and are built by one generated object literal (Node 24's
   * `setReturnArrays`); without it, `node:sqlite`'s null-prototype row objects are copied into
   * plain ones, so rows look the same on every driver.
   */
  readonly #row: ((values: RawRow) => Row) | null = null;

  constructor(statement: NodeStatement) {
    this.#statement = statement;
    const names = statement.columns().map((column) => column.name);
    this.reader = names.length > 0;
    if (this.reader && typeof statement.setReturnArrays === "function") {
      this.#row = rowBuilder(names);
      if (this.#row !== null) statement.setReturnArrays(true);
    }
  }

  #build(value: unknown): Row {
    return this.#row === null ? { ...(value as Row) } : this.#row(value as RawRow);
  }

  all(parameters: ReadonlyArray<unknown>): Row[] {
    const rows = this.#statement.all(...parameters);
    const out: Row[] = new Array<Row>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = this.#build(rows[i]);
    return out;
  }

  get(parameters: ReadonlyArray<unknown>): Row | undefined {
    const value = this.#statement.get(...parameters);
    return value === undefined ? undefined : this.#build(value);
  }

  run(parameters: ReadonlyArray<unknown>): SQLiteRunResult {
    return this.#statement.run(...parameters);
  }

  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<Row> {
    const rows = this.#statement.iterate === undefined ? this.#statement.all(...parameters) : this.#statement.iterate(...parameters);
    for (const value of rows) yield this.#build(value);
  }
}

class NodeSqliteConnection implements SQLiteDriverConnection {
  #open = true;

  constructor(private readonly db: NodeDatabase) {}

  prepare(sql: string): SQLiteDriverStatement {
    return new NodeSqliteStatement(this.db.prepare(sql));
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  get inTransaction(): boolean {
    return this.db.isTransaction;
  }

  get open(): boolean {
    return this.db.isOpen ?? this.#open;
  }

  close(): void {
    this.#open = false;
    this.db.close();
  }
}

/**
 * Node prints "ExperimentalWarning: SQLite is an experimental feature" when
 * `node:sqlite` first loads; a store that works prints nothing, so that one
 * warning (only it) is dropped while the module loads. The same code runs in
 * the checkpoint thread.
 */
const LOAD_QUIETLY = `(() => {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const text = typeof warning === "string" ? warning : warning && warning.message;
    const type = typeof rest[0] === "string" ? rest[0] : rest[0] && rest[0].type;
    if ((type === "ExperimentalWarning" || (warning && warning.name === "ExperimentalWarning")) && /SQLite/i.test(String(text))) return;
    return emitWarning.call(process, warning, ...rest);
  };
  try {
    return process.getBuiltinModule("node:sqlite");
  } finally {
    process.emitWarning = emitWarning;
  }
})()`;

// eslint-disable-next-line @typescript-eslint/no-implied-eval -- a fixed source string, shared with the checkpoint thread so both load the module the same way.
const loadQuietly = new Function("process", `return ${LOAD_QUIETLY};`) as (p: NodeJS.Process) => unknown;

/** Wraps a loaded `node:sqlite` module. */
export function nodeSqliteDriver(module: NodeSqliteModule): SQLiteDriver {
  return {
    name: "node:sqlite",
    openConnection: (filename, busyTimeoutMs) => {
      const db = new module.DatabaseSync(filename);
      try {
        db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
      } catch (err) {
        db.close();
        throw err;
      }
      return new NodeSqliteConnection(db);
    },
    checkpointThread: {
      source: `const { DatabaseSync } = ${LOAD_QUIETLY};
const open = (file) => {
  const db = new DatabaseSync(file);
  db.exec("PRAGMA busy_timeout = 0");
  const statement = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  return { checkpoint: () => statement.get(), close: () => db.close() };
};`,
      data: null,
    },
  };
}

/**
 * Loads `node:sqlite`, or throws an `Error` saying why it cannot be used
 * (the caller turns it into the store's message).
 */
export function loadNodeSqlite(): SQLiteDriver {
  const getBuiltinModule = (process as { getBuiltinModule?: unknown }).getBuiltinModule;
  if (typeof getBuiltinModule !== "function") throw new Error(`this runtime has no process.getBuiltinModule (Node ${process.version})`);
  const module = loadQuietly(process) as NodeSqliteModule | undefined;
  if (module === undefined) throw new Error(`Node ${process.version} has no node:sqlite module (it came in Node 22.5)`);
  // Both are members of the instances, not of the prototypes: probe an in-memory database.
  const probe = new module.DatabaseSync(":memory:");
  let complete: boolean;
  try {
    complete = typeof (probe as { isTransaction?: unknown }).isTransaction === "boolean" && typeof probe.prepare("SELECT 1").columns === "function";
  } finally {
    probe.close();
  }
  if (!complete) {
    throw new Error(`Node ${process.version}'s node:sqlite lacks DatabaseSync.isTransaction and StatementSync.columns(), which the store needs (Node 22.16 or later has them)`);
  }
  return nodeSqliteDriver(module);
}
