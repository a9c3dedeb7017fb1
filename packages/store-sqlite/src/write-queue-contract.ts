/**
 * What the write queue (`write-queue.ts`) asks of its callers and tells them:
 * the writes it may merge, the connections it writes through, the options of
 * a transaction job, and its counters. The queue itself, its jobs and its
 * turns live in `write-queue.ts`, which re-exports these.
 */
import type { CompiledQuery, QueryResult } from "kysely";
import type { AnyKysely, MergedOutcome, QueryThunk, Row, SyncRunner } from "@cairnq/store-kysely";

/**
 * A kind of statement job whose adjacent jobs in one group commit the queue
 * may run together (a merged run; see the module comment of `write-queue.ts`).
 *
 * Both functions run synchronously on the writer. `one` runs exactly ONE
 * statement (alone as autocommit, or inside the group commit): SQLite undoes
 * a failed statement by itself, so a failure leaves nothing of it behind.
 * `many` runs inside the group commit's transaction and its own savepoint, so
 * it may run several statements: when it throws, all of them are undone.
 */
export interface MergeableWrite<I, O> {
  /** The write of one item (its single-row statement): the caller's value, or the caller's error thrown. */
  one(run: SyncRunner, item: I): O;
  /**
   * Several items (at least two) together, e.g. as one multi-row statement: every item's
   * outcome, in the order given, matched by id. Throws when it failed — the queue then undoes
   * whatever it ran and runs every item on its own with {@link MergeableWrite.one}, so each caller
   * gets exactly what its single-row statement gives. Absent: never merged.
   */
  many?(run: SyncRunner, items: readonly I[]): MergedOutcome<O>[];
  /** Most items in one {@link MergeableWrite.many}. */
  readonly maxRows: number;
  /** Most bytes (the sum of {@link MergeableWrite.bytes}) in one {@link MergeableWrite.many}; a larger item runs alone. */
  readonly maxBytes: number;
  /** An item's size for {@link MergeableWrite.maxBytes}. */
  bytes(item: I): number;
}

/** A connection that writes through a queue: what the queue needs to know about it. */
export interface QueueConnection {
  /** The Kysely instance of the connection's single better-sqlite3 handle. */
  readonly db: AnyKysely;
  /** Whether the connection is inside a transaction (better-sqlite3 `inTransaction`): false after SQLite rolled one back. */
  inTransaction(): boolean;
  /** Runs one statement on the writer now, synchronously; only the job holding the turn calls it. Throws SQLite's error. */
  execute(query: CompiledQuery<unknown>): QueryResult<Row>;
  /** The database file, for messages. */
  readonly file: string;
  /** The busy budget of this connection's jobs. */
  readonly busyTimeoutMs: number;
  /**
   * Called once after each turn that committed (an autocommit statement, a group commit, a transaction,
   * an exclusive job), before its callers settle: the store's cross-process wake signal. Must not throw.
   */
  committed?(): void;
}

/** Options of `WriteQueue.transaction`. */
export interface TransactionOptions {
  /** A statement to run first, right after BEGIN (the claim cycle's lease recovery). @default none */
  readonly first?: QueryThunk;
  /**
   * Give the body a runner that executes straight on the writer (a
   * `QueryRunner` with `executeQuery` only) instead of the Kysely connection
   * — for store-internal bodies that only run compiled statements. Bodies
   * that hand the connection to user code (`completeIn`) need Kysely's.
   * @default false
   */
  readonly direct?: boolean;
  /**
   * The transaction tells no waiter anything unless `first` changed rows: the claim cycle's, whose
   * draws only move tasks from queued to running, which neither a claim wait (it waits for queued
   * tasks) nor a task-done wait (terminal ones) is waiting for; its lease recovery (`first`) may
   * requeue or end tasks, which they are. When it changed nothing and the transaction shared its
   * commit with no statement job, the turn sends no wake signal (see {@link QueueConnection.committed}).
   * @default false
   */
  readonly quietUnlessFirstChanges?: boolean;
}

/** Counters for tests and tuning. */
export interface WriteQueueStats {
  /** Statement batches run (each one autocommit statement or one group-commit transaction). */
  batches: number;
  /** Batches of two or more statements. */
  groupCommits: number;
  /** Statement jobs (callers' writes) run in batches. */
  statements: number;
  /** Statement jobs that ran inside a multi-row statement with others. */
  merged: number;
  /** Multi-row statements run (each carrying two or more jobs). */
  mergedStatements: number;
  /** Multi-row statements that failed, after which their jobs ran one by one. */
  mergeFallbacks: number;
  /** Claim transactions that shared their commit with statement jobs. */
  fusedClaims: number;
  /** The largest batch so far. */
  largestBatch: number;
  /** Transaction and maintenance jobs run. */
  transactions: number;
  /** Turns that ended in a busy error and were retried. */
  busyRetries: number;
}
