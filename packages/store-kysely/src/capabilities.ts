/**
 * What a backend can do beyond the floor every dialect provides.
 *
 * Capabilities are flags with documented defaults rather than optional
 * methods callers probe: a third-party dialect that predates a new flag keeps
 * the default and keeps working.
 */
export interface DialectCapabilities {
  /**
   * Rows of claim draws, lease recovery and purge are picked
   * `FOR UPDATE SKIP LOCKED` (§13), so concurrent workers neither block nor
   * double-take. Backends with one writer at a time (SQLite) do not need it.
   * @default false
   */
  readonly skipLocked: boolean;
  /** The backend pushes `queued` / `done` signals (Postgres LISTEN/NOTIFY, §9). @default false */
  readonly pushWakeups: boolean;
  /** A task can be completed inside the caller's own transaction (`completeIn`, §5.15). @default false */
  readonly transactionalComplete: boolean;
  /** Times come from the database clock, not the process clock (§2.1). Must agree with the dialect's clock. @default false */
  readonly databaseClock: boolean;
  /**
   * Without push signals, a claim wait still ends soon after a commit leaves a task queued on its
   * queues, counting commits since the previous wait (`StoreCapabilities.claimWakeOnQueued`; SQLite
   * watching its file). Optional so dialects written before the flag keep compiling. @default false
   */
  readonly claimWakeOnQueued?: boolean;
  /**
   * Without push signals, a task-done wait still ends soon after its task is terminal, including
   * when it already was as the wait began (`StoreCapabilities.taskDoneWakeReads`; MySQL's checks,
   * SQLite's reads while it watches its file). Optional so dialects written before the flag keep
   * compiling. @default false
   */
  readonly taskDoneWakeReads?: boolean;
  /**
   * A claim transaction sees every settlement the store issued before the claim began, because one
   * write queue runs them in order (SQLite). Without it, a claim whose flow control counts running
   * tasks (`globalConcurrency`, `groupConcurrency`) first waits for the store's settlements in flight,
   * so a task whose handler already ended does not hold its slot against the claim: on Postgres the
   * c64 drain with `groupConcurrency` otherwise took 33 tasks per claim instead of 62, a third of its
   * claims empty (bench/README.md, the groups rows). Optional so dialects written before the flag keep
   * compiling. @default false
   */
  readonly claimsSeeSettlements?: boolean;
  /**
   * DDL ends the open transaction (MySQL, MariaDB: `CREATE TABLE` and `CREATE INDEX` commit it
   * implicitly). Then a transaction view (`withTransaction`) never runs the extension tables' DDL on
   * the caller's transaction, whose earlier writes it would commit and whose later ones it would
   * leave in autocommit: it has the store it belongs to create them first, on the store's own
   * connections (`KyselyStoreOptions.parent`). Where DDL is transactional (SQLite, Postgres: the
   * default) a view creates them in the caller's transaction, so they commit or roll back with it;
   * a second connection could not (SQLite's writer would wait for the caller's write lock, Postgres's
   * `REFERENCES cairnq_tasks` for the caller's row locks on it). Optional so dialects written before
   * the flag keep compiling. @default false
   */
  readonly ddlCommits?: boolean;
  /**
   * The most rows one write of `purge`, `cancelBatch` or `retryBatch` changes, and one draw of a claim
   * takes (a claim asking for more comes back with fewer rows, as one with fewer tasks due does; a
   * worker learns that more are due from the claim's probe again, `StoreCapabilities.claimReprobe`,
   * which every store on this core answers, and claims again at once). A larger `limit` runs
   * as several writes of at most this many rows, one after another (each its own statement: on the
   * store's connections its own autocommit transaction, in a transaction view on the caller's
   * transaction), their ids concatenated in order: a bulk batch's next write continues after the
   * previous one's greatest id (`afterId`, as `nextBatchCursor` gives a caller's next batch), and the
   * writes stop at the first that changes no row (one that changes fewer than it asked for may have skipped rows another transaction held). For a backend whose cost per
   * statement grows faster than its rows, or that cannot return more than so many rows from one
   * (MySQL, MariaDB: the changed ids gathered in a session variable, each row's append copying it
   * whole, and `NULL` past `max_allowed_packet`). Each row's change is as atomic as before; only the
   * batch is no longer one statement: a write that fails rejects the call with its error, and the writes
   * before it stand (on the store's connections, committed) though their ids are not returned. A positive integer; optional so dialects written before the
   * flag keep compiling. @default undefined (one write whatever the limit)
   */
  readonly maxRowsPerWrite?: number;
}

/**
 * A dialect's {@link DialectCapabilities.maxRowsPerWrite} as a number of rows: unbounded when absent.
 *
 * @throws TypeError when it is present and no positive integer (the dialect's bug).
 */
export function rowsPerWrite(capabilities: DialectCapabilities): number {
  const most = capabilities.maxRowsPerWrite;
  if (most === undefined) return Number.POSITIVE_INFINITY;
  if (!Number.isSafeInteger(most) || most < 1) throw new TypeError(`a dialect's capabilities.maxRowsPerWrite must be a positive integer or absent, got ${String(most)}`);
  return most;
}

/** The defaults of every {@link DialectCapabilities} flag: a single-writer backend on the process clock. */
export const DEFAULT_DIALECT_CAPABILITIES: DialectCapabilities = Object.freeze({
  skipLocked: false,
  pushWakeups: false,
  transactionalComplete: false,
  databaseClock: false,
});
