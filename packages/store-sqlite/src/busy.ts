/**
 * `SQLITE_BUSY` handling (§13): with `busy_timeout = 0`, SQLite reports a
 * lock held by another connection at once, and CairnQ waits on an awaited,
 * jittered backoff instead — SQLite's own busy handler would sleep inside
 * the synchronous driver call (every driver's calls are) and block the event
 * loop.
 */
import { CairnQError } from "@cairnq/protocol";
import { brandErrorClass } from "@cairnq/protocol/adapter";
import { sleep } from "@cairnq/runtime";

/** First retry delay (ms); doubles per retry. */
const FIRST_DELAY_MS = 1;
/** Largest retry delay (ms) before jitter. */
const MAX_DELAY_MS = 50;

/** SQLite's primary result code for a busy database; extended codes keep it in their low byte. */
const SQLITE_BUSY = 5;

/**
 * True for `SQLITE_BUSY` and its extended codes (`SQLITE_BUSY_SNAPSHOT`,
 * `SQLITE_BUSY_RECOVERY`, `SQLITE_BUSY_TIMEOUT`), as each driver reports
 * them: better-sqlite3 and `bun:sqlite` by name in `code`, `node:sqlite` by
 * number in `errcode` (its `code` is `ERR_SQLITE_ERROR`). `SQLITE_LOCKED` is
 * not a busy error: it is a conflict inside this connection and retrying
 * cannot clear it.
 */
export function isBusyError(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code, errcode } = err as { code?: unknown; errcode?: unknown };
  if (typeof code === "string" && (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_"))) return true;
  return typeof errcode === "number" && (errcode & 0xff) === SQLITE_BUSY;
}

/** The SQLite result code name of a busy error, whichever driver raised it. */
function busyCodeOf(err: unknown): string {
  const { code, errcode } = (err ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === "string" && code.startsWith("SQLITE_")) return code;
  const extended: Record<number, string> = { 261: "SQLITE_BUSY_RECOVERY", 517: "SQLITE_BUSY_SNAPSHOT", 773: "SQLITE_BUSY_TIMEOUT" };
  return typeof errcode === "number" ? (extended[errcode] ?? "SQLITE_BUSY") : "SQLITE_BUSY";
}

/**
 * The sleep before retry number `attempt` (1-based): 1 ms doubling to 50 ms,
 * times a uniform factor in [0.5, 1.5) so that contending processes spread
 * out instead of retrying in lockstep.
 */
export function busyDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.max(0, attempt - 1));
  return base * (0.5 + random());
}

/** A promise that resolves after `ms` (the timer keeps the process alive: a write is waiting). */
export function delay(ms: number): Promise<void> {
  return sleep(ms);
}

/**
 * Another connection held the SQLite write lock (or, rarely, blocked a read)
 * for longer than the store's `busyTimeoutMs` budget, so the statement was
 * not applied.
 *
 * @example
 * try { await store.submit({ name: "x" }); }
 * catch (err) { if (err instanceof DatabaseBusy) console.warn(err.file, err.busyTimeoutMs); }
 */
export class DatabaseBusy extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.DatabaseBusy", "DatabaseBusy");
  }

  /** The database file, as resolved by the store. */
  readonly file: string;
  /** The budget that ran out. */
  readonly busyTimeoutMs: number;
  /** The SQLite result code of the last attempt, e.g. `SQLITE_BUSY`. */
  readonly code: string;

  constructor(file: string, busyTimeoutMs: number, cause: unknown) {
    const code = busyCodeOf(cause);
    super(
      `the SQLite database '${file}' stayed locked by another connection for the whole busyTimeoutMs budget ` +
        `(${busyTimeoutMs}ms, last result ${code}), so the statement was not applied; another process is holding a long ` +
        `write transaction — keep transactions short, or raise busyTimeoutMs`,
      { cause },
    );
    this.file = file;
    this.busyTimeoutMs = busyTimeoutMs;
    this.code = code;
  }
}

/**
 * Runs `fn`, retrying it on busy errors with {@link busyDelayMs} until
 * `budgetMs` has passed since the first busy error; then raises
 * {@link DatabaseBusy}. For reads, which never join the write queue.
 */
export async function retryBusy<T>(fn: () => Promise<T>, file: string, budgetMs: number): Promise<T> {
  let firstBusyAt: number | null = null;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn();
    } catch (err) {
      if (!isBusyError(err)) throw err;
      const now = Date.now();
      firstBusyAt ??= now;
      const left = firstBusyAt + budgetMs - now;
      if (left <= 0) throw new DatabaseBusy(file, budgetMs, err);
      await delay(Math.min(left, busyDelayMs(attempt)));
    }
  }
}
