/**
 * The two driver connections of one store and their setup (§3.9), on
 * whichever SQLite driver the store chose (`drivers/load-driver.ts`).
 *
 * A file database gets a **writer** (every write, through the file's write
 * queue) and a **reader** (reads: probe, gets, lists, queue depth). With WAL
 * the reader sees every committed write and never waits for, or lands inside,
 * a write transaction of the writer. An in-memory database is private to its
 * connection, so it gets the writer only; Kysely's connection mutex then keeps
 * reads out of open transactions.
 */
import fs from "node:fs";
import path from "node:path";
import { CairnQError, TERMINAL_STATUSES } from "@cairnq/protocol";
import type { Task } from "@cairnq/protocol";
import type { AnyKysely, Row } from "@cairnq/store-kysely";
import { decodeTask } from "@cairnq/store-kysely";
import type { QueryResult } from "kysely";
import { CompiledQuery, Kysely, SqliteDialect } from "kysely";
import { delay, isBusyError } from "./busy.js";
import { CHECKPOINT_EVERY_WRITES, SQLiteCheckpointer } from "./sqlite-checkpointer.js";
import type { WakeupSource } from "./sqlite-wakeups.js";
import { loadSQLiteDriver } from "./drivers/load-driver.js";
import type { SQLiteDriver, SQLiteDriverConnection, SQLiteDriverName, SQLiteDriverStatement } from "./drivers/sqlite-driver.js";
import { pragmaValue } from "./drivers/sqlite-driver.js";
import { CachingDatabase } from "./statement-cache.js";
import { SQLiteStoreSyntax } from "./sqlite-store-syntax.js";
import { WakeSignal } from "./sqlite-wake-signal.js";
import type { QueueConnection, WriteQueue } from "./write-queue.js";
import { acquireWriteQueue, releaseWriteQueue } from "./write-queue-registry.js";

/** How long `journal_mode = WAL` is retried on a busy database, and how often (§3.9). */
const WAL_TIMEOUT_MS = 5_000;
const WAL_RETRY_MS = 50;
/** Statistics are refreshed at most this often per connection (§3.9). */
const STATISTICS_INTERVAL_MS = 60_000;
/**
 * The checkpoint thread (`sqlite-checkpointer.ts`) starts once the writer has
 * run this many statements: a store that writes little (a CLI command, a
 * short script) never pays for a thread (~9 MB of RSS, ~10 ms to start).
 */
const CHECKPOINTER_AFTER_WRITES = 200;

/** True for `:memory:` and the anonymous `""` database (§3.9); `file:` URIs are refused before opening (`refusedPath`). */
export function isMemoryFilename(filename: string): boolean {
  return filename === ":memory:" || filename === "";
}

/**
 * What the wake-ups read after a commit (§9 accelerator). The terminal rows
 * among a JSON array of ids, looked up in the primary key: on statistics
 * gathered while the table was nearly empty the planner would rather scan
 * the claim index (see `sqlite-store-syntax.ts`), and `+status` keeps it off
 * the status index, which would scan every settled task.
 */
const TERMINAL_AMONG =
  `SELECT * FROM ${new SQLiteStoreSyntax().tableById("cairnq_tasks")} WHERE id IN (SELECT value FROM json_each(?)) ` +
  `AND +status IN (${TERMINAL_STATUSES.map((status) => `'${status}'`).join(", ")})`;
/** Whether a task is queued on one of a JSON array of queues: one seek in the claim index per queue. */
const QUEUED_IN = "SELECT 1 FROM cairnq_tasks WHERE status = 'queued' AND queue IN (SELECT value FROM json_each(?)) LIMIT 1";

/** The writer and reader connections of one store, and the write queue of their file. */
export class SQLiteConnection implements QueueConnection, WakeupSource {
  /** The file as resolved (or the name of an in-memory database), for messages and the queue key. */
  readonly file: string;
  /** True for in-memory databases: one connection, no WAL, a private write queue. */
  readonly memory: boolean;
  /** The busy budget of this connection's statements (§13). */
  readonly busyTimeoutMs: number;
  /** The driver the connections were opened with (after `open`). */
  get driver(): SQLiteDriverName | null {
    return this.#driver?.name ?? null;
  }

  /** Kysely over the writer. Statements reach it only through the write queue. */
  readonly db: AnyKysely;
  readonly #writer = new CachingDatabase();
  readonly #reader = new CachingDatabase();
  readonly #readerDb: AnyKysely | null;
  #queue: WriteQueue | null = null;
  #queueKey: string | null = null;
  #lastStatisticsAt = Number.NEGATIVE_INFINITY;
  #mainFile: string | null = null;
  #dataVersion: SQLiteDriverStatement | null = null;
  #terminalAmong: SQLiteDriverStatement | null = null;
  #queuedIn: SQLiteDriverStatement | null = null;
  #driver: SQLiteDriver | null = null;
  #writes = 0;
  #checkpointer: SQLiteCheckpointer | null = null;
  #wakeSignal: WakeSignal | null = null;

  /**
   * Prepares (does not open) the connections; {@link SQLiteConnection.open} opens them.
   *
   * @param filename - A file path, `:memory:` or `""`.
   * @param busyTimeoutMs - The busy budget (§13).
   * @param driverChoice - The driver to open with (a name, or a driver object); undefined takes the first available.
   */
  constructor(
    readonly filename: string,
    busyTimeoutMs: number,
    readonly driverChoice?: SQLiteDriverName | SQLiteDriver,
  ) {
    this.memory = isMemoryFilename(filename);
    // A `file:` URI is kept as given, so its refusal (`refusedPath`, before anything opens) names what the caller wrote.
    this.file = this.memory || filename.startsWith("file:") ? filename : path.resolve(filename);
    this.busyTimeoutMs = busyTimeoutMs;
    const writer = this.#writer;
    this.db = new Kysely<Record<string, never>>({ dialect: new SqliteDialect({ database: () => Promise.resolve(writer) }) });
    const reader = this.#reader;
    this.#readerDb = this.memory ? null : new Kysely<Record<string, never>>({ dialect: new SqliteDialect({ database: () => Promise.resolve(reader) }) });
  }

  /** The Kysely instance reads run on: the reader, or the writer for an in-memory database. */
  get readDb(): AnyKysely {
    return this.#readerDb ?? this.db;
  }

  /** The write queue of this file (after `open`). */
  get queue(): WriteQueue {
    if (this.#queue === null) throw new Error("the SQLite connection is not open");
    return this.#queue;
  }

  /** Whether the writer is inside a transaction; false after SQLite rolled one back on its own. */
  inTransaction(): boolean {
    return this.#writer.isOpen && this.#writer.raw.inTransaction;
  }

  /** Runs one statement on the writer now (synchronous); only the write-queue job holding the turn calls it. */
  execute(query: CompiledQuery<unknown>): QueryResult<Row> {
    if (++this.#writes % CHECKPOINT_EVERY_WRITES === 0 && this.#checkpointer !== null) {
      if (this.#writes >= CHECKPOINTER_AFTER_WRITES) this.#checkpointer.request();
      if (this.#writes === CHECKPOINTER_AFTER_WRITES) {
        // After this job's turn, not inside its transaction.
        const checkpointer = this.#checkpointer;
        setImmediate(() => checkpointer.start());
      }
    }
    return this.#writer.execute(query.sql, query.parameters);
  }

  /**
   * Runs one read on the reader now (synchronous), or returns `null` for an
   * in-memory database, whose reads must go through Kysely's connection
   * mutex on the writer so they never land inside an open transaction.
   */
  executeRead(query: CompiledQuery<unknown>): QueryResult<Row> | null {
    return this.#readerDb === null ? null : this.#reader.execute(query.sql, query.parameters);
  }

  /**
   * §3.9 up to migrations: create the parent directory, open the writer with
   * `busy_timeout` = the budget, switch to WAL (retried while busy), set
   * `synchronous` and `foreign_keys`; open the reader; join the file's write
   * queue. On failure everything opened is closed again.
   */
  async open(): Promise<void> {
    try {
      if (!this.memory) fs.mkdirSync(path.dirname(this.file), { recursive: true });
      const driver = typeof this.driverChoice === "object" ? this.driverChoice : loadSQLiteDriver(this.driverChoice);
      this.#driver = driver;
      const writer = driver.openConnection(this.filename, this.busyTimeoutMs);
      this.#writer.attach(writer);
      if (!this.memory) await this.#enableWal(writer);
      // NORMAL is safe in WAL mode: a commit is durable once the WAL is synced at the next checkpoint, and a
      // crash of the process (not of the OS or the power) loses nothing; the database is never corrupted.
      // FULL would fsync the WAL on every commit, which is the cost group commit exists to amortize.
      writer.exec("PRAGMA synchronous = NORMAL");
      // `RETURNING` materializes its rows into a temporary b-tree before handing back the first one; in
      // memory that costs a fraction of a temp file's (measured: submit c64 +35%, drain c64 +25%).
      writer.exec("PRAGMA temp_store = MEMORY");
      // The key rows' ON DELETE CASCADE only happens with foreign keys enabled (§3.2).
      writer.exec("PRAGMA foreign_keys = ON");
      if (!this.memory) {
        const reader = driver.openConnection(this.filename, 0);
        this.#reader.attach(reader);
        reader.exec("PRAGMA foreign_keys = ON");
        // The reader must never write: writes go through the queue, which is what keeps them serialized.
        reader.exec("PRAGMA query_only = ON");
        this.#queueKey = path.join(fs.realpathSync(path.dirname(this.file)), path.basename(this.file));
        // SQLite's own resolution (URI filenames, symlinks): the WAL lives next to this name.
        const main = (writer.prepare("PRAGMA database_list").all([]) as { name: string; file: string }[]).find((db) => db.name === "main");
        this.#mainFile = main === undefined || main.file === "" ? null : main.file;
        if (this.#mainFile !== null) this.#wakeSignal = WakeSignal.open(this.#mainFile);
        if (this.#mainFile !== null && driver.checkpointThread !== null) {
          this.#checkpointer = new SQLiteCheckpointer(this.#mainFile, driver.checkpointThread, {
            setAutocheckpoint: (frames) => {
              if (this.#writer.isOpen) this.#writer.raw.exec(`PRAGMA wal_autocheckpoint = ${frames}`);
            },
          });
        }
      } else {
        this.#queueKey = null;
      }
      this.#queue = acquireWriteQueue(this.#queueKey);
    } catch (err) {
      this.closeHandles();
      throw err;
    }
  }

  async #enableWal(writer: SQLiteDriverConnection): Promise<void> {
    const deadline = Date.now() + WAL_TIMEOUT_MS;
    let mode: unknown = null;
    let lastError: unknown = undefined;
    for (;;) {
      try {
        mode = pragmaValue(writer, "PRAGMA journal_mode = WAL");
        if (String(mode).toLowerCase() === "wal") return;
      } catch (err) {
        if (!isBusyError(err)) throw err;
        lastError = err;
      }
      if (Date.now() >= deadline) {
        throw new CairnQError(
          `could not switch the SQLite database '${this.file}' to WAL journal mode within ${WAL_TIMEOUT_MS}ms ` +
            `(it reported ${mode === null ? "busy" : JSON.stringify(mode)}); CairnQ needs WAL for concurrent readers and writers — ` +
            `check that the file is on a local filesystem and not held open in another journal mode`,
          { cause: lastError },
        );
      }
      await delay(WAL_RETRY_MS);
    }
  }

  /** §3.9 after migrations: `busy_timeout = 0`, so busy errors surface at once and are retried without blocking. */
  disableBusyWait(): void {
    this.#writer.raw.exec("PRAGMA busy_timeout = 0");
  }

  /**
   * Refreshes planner statistics, best effort (busy or failing runs are
   * skipped): `ANALYZE cairnq_tasks` when `sqlite_stat1` has no row for it,
   * else `PRAGMA optimize`. Without statistics the planner skips the partial
   * lease index (§3.9).
   */
  async refreshStatistics(): Promise<void> {
    this.#lastStatisticsAt = Date.now();
    await this.queue.maintenance(this, async (tx) => {
      const hasStatTable = await tx.executeQuery(
        CompiledQuery.raw("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"),
      );
      const analyzed =
        hasStatTable.rows.length > 0 &&
        (await tx.executeQuery(CompiledQuery.raw("SELECT 1 AS found FROM sqlite_stat1 WHERE tbl = 'cairnq_tasks' LIMIT 1"))).rows
          .length > 0;
      await tx.executeQuery(CompiledQuery.raw(analyzed ? "PRAGMA optimize" : "ANALYZE cairnq_tasks"));
    });
  }

  /** Queues a statistics refresh when the last one is at least 60 s old. */
  maybeRefreshStatistics(): void {
    if (Date.now() - this.#lastStatisticsAt >= STATISTICS_INTERVAL_MS && this.#writer.isOpen) void this.refreshStatistics();
  }

  /** The main database file as SQLite resolved it; null for an in-memory database or while not open (§9 wake-ups watch its directory). */
  databaseFile(): string | null {
    return this.#reader.isOpen ? this.#mainFile : null;
  }

  /**
   * `PRAGMA data_version` on the reader, which never commits: it changes
   * exactly when another connection (another process, or this store's
   * writer) committed since the last call. Null while not open.
   */
  dataVersion(): number | null {
    if (!this.#reader.isOpen) return null;
    this.#dataVersion ??= this.#reader.raw.prepare("PRAGMA data_version");
    return this.#dataVersion.get([])?.data_version as number;
  }

  /** Whether any task is queued (due or not) on one of `queues`, read on the reader. */
  queuedIn(queues: readonly string[]): boolean {
    this.#queuedIn ??= this.#reader.raw.prepare(QUEUED_IN);
    return this.#queuedIn.get([JSON.stringify(queues)]) !== undefined;
  }

  /** The wake file this store signals after its commits; null for an in-memory database, while not open, or when it could not be opened (§9 wake-ups watch it). */
  wakeFile(): string | null {
    return this.#reader.isOpen ? (this.#wakeSignal?.path ?? null) : null;
  }

  /** The write queue committed a turn of this connection: signal the processes waiting on this file. */
  committed(): void {
    this.#wakeSignal?.signal();
  }

  /** How many statements {@link SQLiteConnection.execute} has run on the writer (§9 wake-ups: did a woken claim write?). */
  writes(): number {
    return this.#writes;
  }

  /** The rows of the tasks among `taskIds` that are terminal, read on the reader in one statement. */
  terminalRows(taskIds: readonly string[]): readonly Task[] {
    this.#terminalAmong ??= this.#reader.raw.prepare(TERMINAL_AMONG);
    return this.#terminalAmong.all([JSON.stringify(taskIds)]).map(decodeTask);
  }

  /** Closes both connections at once (a failed connect); queued writes of this connection are not awaited. */
  closeHandles(): void {
    this.#checkpointer?.terminate();
    this.#checkpointer = null;
    this.#mainFile = null;
    this.#wakeSignal?.close();
    this.#wakeSignal = null;
    this.#dataVersion = null;
    this.#terminalAmong = null;
    this.#queuedIn = null;
    this.#reader.close();
    this.#writer.close();
    if (this.#queue !== null) {
      releaseWriteQueue(this.#queueKey);
      this.#queue = null;
    }
  }

  /** Waits for this connection's queued writes, then closes both connections. Idempotent. */
  async close(): Promise<void> {
    if (this.#queue !== null) await this.#queue.drain(this);
    await this.#checkpointer?.close();
    this.closeHandles();
    await this.db.destroy();
    await this.#readerDb?.destroy();
  }
}
