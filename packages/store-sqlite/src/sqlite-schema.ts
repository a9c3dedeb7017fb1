import fs from "node:fs";
import path from "node:path";
import { DatabaseUnusable } from "@cairnq/protocol";
import type { AnyKysely, StoreClock, StoreExecutor, SqlSyntax } from "@cairnq/store-kysely";
import { buildMigrations, ledgerDdl, MigratingSchemaManager, SQLITE_SCHEMA } from "@cairnq/store-kysely";
import type { SQLiteConnection } from "./sqlite-connection.js";
import type { SQLiteWakeups } from "./sqlite-wakeups.js";

/** The SQLite migrations of protocol v1: 0001 … 0010 without the Postgres-only 0003 (§3.6). */
export const SQLITE_MIGRATIONS = buildMigrations(SQLITE_SCHEMA);

/**
 * SQLite's connect sequence, in the order of §3.9: open (parent directory,
 * `busy_timeout` = budget, WAL, `synchronous`, `foreign_keys`), migrations —
 * each in its own `BEGIN IMMEDIATE` through the write queue —,
 * `busy_timeout = 0`, statistics, then the protocol-version guard. A failed
 * connect closes what it opened; `close` stops the wake-ups before closing
 * the connections they read.
 */
export class SQLiteSchemaManager extends MigratingSchemaManager {
  constructor(
    private readonly connection: SQLiteConnection,
    syntax: SqlSyntax,
    clock: StoreClock,
    private readonly wakeups?: Pick<SQLiteWakeups, "close">,
  ) {
    super({ syntax, clock, migrations: SQLITE_MIGRATIONS, ledgerDdl: ledgerDdl(SQLITE_SCHEMA) });
  }

  override async connect(db: AnyKysely, executor: StoreExecutor): Promise<void> {
    try {
      await super.connect(db, executor);
    } catch (err) {
      this.connection.closeHandles();
      throw unusableDatabase(this.connection.file, err) ?? err;
    }
  }

  protected override async beforeMigrations(): Promise<void> {
    const refused = refusedPath(this.connection.filename, this.connection.file);
    if (refused !== null) throw refused;
    await this.connection.open();
  }

  protected override async afterMigrations(): Promise<void> {
    this.connection.disableBusyWait();
    await this.connection.refreshStatistics();
  }

  override async close(): Promise<void> {
    this.wakeups?.close();
    await this.connection.close();
  }
}

/**
 * A {@link DatabaseUnusable} for a path SQLite must not be given at all, checked before anything is
 * opened (so nothing is created beside it): a `file:` URI, which not every driver reads (better-sqlite3
 * creates a file literally named `file:…` in the working directory, and treats `?mode=memory` as part of
 * that name), and an existing path that is neither a regular file nor a directory — a device such as
 * `/dev/null`, a FIFO, a socket — on which SQLite fails with a bare `disk I/O error` that a worker would
 * retry forever. `null` for any other path (a directory is left to SQLite, whose refusal
 * {@link unusableDatabase} explains). `filename` is the path as given, `file` as resolved.
 */
export function refusedPath(filename: string, file: string): DatabaseUnusable | null {
  if (filename.startsWith("file:")) {
    const instead = /[?&]mode=memory(&|$)/.test(filename) ? "':memory:' (a private in-memory database)" : `a plain path${plainPathOf(filename)}`;
    return new DatabaseUnusable(filename, `SQLite URI filenames ('file:…') are not supported, since not every driver reads them; give ${instead} instead`);
  }
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return null;
  }
  if (stat.isFile() || stat.isDirectory()) return null;
  const kind = stat.isCharacterDevice()
    ? "a character device"
    : stat.isBlockDevice()
      ? "a block device"
      : stat.isFIFO()
        ? "a named pipe (FIFO)"
        : stat.isSocket()
          ? "a socket"
          : "not a regular file";
  return new DatabaseUnusable(
    file,
    `it is ${kind}, not a regular file: SQLite keeps a database in a regular file (and writes its -wal and -shm files beside it), so give the path of one (it is created if missing)`,
  );
}

/** `' (such as '/a/b.db')'` for the path a `file:` URI names, or `''` when it names none. */
function plainPathOf(uri: string): string {
  let rest = uri.slice("file:".length).replace(/[?#].*$/s, "");
  // `file://host/path`: the authority (empty or `localhost`) is no part of the path.
  if (rest.startsWith("//")) rest = rest.slice(2).replace(/^[^/]*/, "");
  try {
    rest = decodeURIComponent(rest);
  } catch {
    // A malformed escape: show the path as written.
  }
  return rest === "" ? "" : ` (such as '${rest}')`;
}

/** SQLite result codes (primary and extended) that say the file itself cannot be used. */
const NOT_A_DATABASE = new Set(["SQLITE_NOTADB"]);
const CORRUPT = new Set(["SQLITE_CORRUPT", "SQLITE_CORRUPT_VTAB", "SQLITE_CORRUPT_SEQUENCE", "SQLITE_CORRUPT_INDEX"]);
/** Errors of the parent-directory step (§3.9) and of opening the file that no retry can fix. */
const FILESYSTEM = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "EEXIST", "EISDIR", "ENAMETOOLONG", "ELOOP"]);

function codeOf(err: unknown): string {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : "";
}

/**
 * A {@link DatabaseUnusable} naming `file` and what is wrong with it, when
 * `err` (from opening, the pragmas or the first migration) says the file
 * cannot be used at all; `null` for anything else (a busy database, a
 * version mismatch), which is rethrown as it is. The file is looked at again
 * to tell a directory from a missing or unreadable path, because SQLite
 * reports all three as `SQLITE_CANTOPEN`.
 */
export function unusableDatabase(file: string, err: unknown): DatabaseUnusable | null {
  const code = codeOf(err);
  const reason = reasonFor(file, code);
  return reason === null ? null : new DatabaseUnusable(file, `${reason} (${code})`, { cause: err });
}

function reasonFor(file: string, code: string): string | null {
  if (NOT_A_DATABASE.has(code)) {
    return "the file exists but is not a SQLite database (it holds something else, or is encrypted); point the store at a new path or at the right file";
  }
  if (CORRUPT.has(code)) return "the database file is corrupt; restore it from a backup or point the store at a new path";
  if (code.startsWith("SQLITE_READONLY")) {
    return "the database (or its directory, where SQLite writes the -wal and -shm files) is read-only for this process; CairnQ writes to it, so make both writable";
  }
  if (code.startsWith("SQLITE_CANTOPEN") || code === "SQLITE_PERM" || code === "SQLITE_AUTH" || FILESYSTEM.has(code)) {
    return describePath(file, code);
  }
  return null;
}

/** Why `file` could not be opened or created, from what the filesystem shows now. */
function describePath(file: string, code: string): string {
  let stat: fs.Stats | null = null;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    const statCode = codeOf(err);
    if (statCode === "EACCES" || statCode === "EPERM") {
      return "this process may not access it (permission denied on the file or one of its parent directories); check the owners and permissions along the path";
    }
  }
  if (stat?.isDirectory() === true) {
    return `it is a directory, not a database file; give a file path, e.g. '${path.join(file, "cairnq.db")}'`;
  }
  if (stat !== null) {
    return "the file exists but this process cannot open it for reading and writing; check its owner and permissions (and those of its directory)";
  }
  if (code === "EEXIST" || code === "ENOTDIR") {
    return "a part of its directory path is a file, not a directory, so the database cannot be created there; choose another path";
  }
  return `it does not exist and cannot be created in '${path.dirname(file)}'; check that the directory is writable by this process`;
}
