/**
 * The in-process write queue of one SQLite database file (§13).
 *
 * Terminology:
 * - **turn**: the queue runs one job at a time; the job holding the turn is
 *   the only in-process writer of the file, so no statement lands inside
 *   another operation's transaction.
 * - **statement job**: one autocommit write (a transition, an insert, a
 *   purge). Consecutive statement jobs of one connection form a **batch**.
 * - **group commit**: a batch of one runs as plain autocommit; a batch of two
 *   or more runs inside one `BEGIN IMMEDIATE … COMMIT`. Every member is ONE
 *   statement, and SQLite undoes a failed statement by itself (its statement
 *   journal) while the transaction stays open, so a failing member is undone
 *   and fails only its caller — no SAVEPOINT per member is needed (a
 *   SAVEPOINT + RELEASE pair cost about as much as a small insert). Callers
 *   resolve only after COMMIT. One fsync for many writes is what makes
 *   concurrent settlements cheap.
 * - **merged run**: adjacent members of one {@link MergeableWrite} with a
 *   merged form run together, within the write's row and byte bounds and
 *   inside one SAVEPOINT: unkeyed submits as one multi-row insert, owned
 *   writes (complete, fail, …) as their UPDATEs without `RETURNING` and one
 *   read of the changed rows. Each caller gets its own outcome, matched by
 *   id. When the run fails, it is rolled back to its savepoint and each
 *   member runs its own single-row statement instead, so every caller gets
 *   exactly what it would have got alone.
 * - **transaction job**: a multi-statement operation (keyed submit, by-key
 *   operations, claim cycle, a migration) in its own `BEGIN IMMEDIATE`.
 * - **fused claim**: the claim cycle's transaction (a direct job: store
 *   statements only) shares one `BEGIN IMMEDIATE … COMMIT` with the
 *   statement batch queued ahead of it and with the statement jobs that
 *   arrived while it ran: the batch, then the claim's statements inside a
 *   SAVEPOINT (a failing claim is undone and fails alone), then the late
 *   statements. A worker that claims while its settlements wait pays one
 *   commit for both. The queue starts its turns after the event-loop turn
 *   in which a job was queued, so the settlement a handler's end issues and
 *   the claim the freed slot issues right after share one commit.
 * - **maintenance job**: best-effort work (statistics) that is dropped, not
 *   retried, when the database is busy.
 *
 * Wake signal: after every turn that committed, the queue calls the
 * connection's `committed()` once (before its callers settle), which tells
 * waiting processes on this host (`sqlite-wake-signal.ts`).
 *
 * Busy handling: `busy_timeout` is 0 after open, so a lock held by another
 * process surfaces as `SQLITE_BUSY` at once. The job (a whole batch) goes
 * back to the head of the queue and the queue sleeps an awaited, jittered
 * backoff (1 ms doubling to 50 ms, × U[0.5, 1.5)) before the next turn —
 * writes arriving meanwhile join the retried batch. A job whose budget
 * (`busyTimeoutMs`, counted from its first busy error) runs out fails with
 * `DatabaseBusy`. Reads never join the queue.
 *
 * Execution: the job holding the turn runs its statements straight on the
 * writer's better-sqlite3 handle ({@link QueueConnection.execute}, synchronous),
 * not through Kysely: a statement batch — one autocommit statement, or a
 * whole group commit — runs start to finish in one synchronous stretch, so
 * nothing can interleave with it. Kysely's connection (and its mutex) is
 * taken only where something else may be using the writer through Kysely: a
 * transaction job (its body may run Kysely queries on the connection it is
 * given, and an in-memory database's reads go through that mutex), and a
 * statement batch that finds the writer inside a transaction it did not open
 * (a caller's own Kysely transaction on the store's `db`): that batch waits
 * for the caller's transaction to end, as it did before, rather than landing
 * inside it.
 */
// The module's own setImmediate, not the global: fake timers (vi.useFakeTimers(), Jest's modern timers) replace
// the global one, and every write of an app's tests would then wait for a tick that never comes.
import { setImmediate as nextImmediate } from "node:timers";
import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import type { MergedOutcome, QueryRunner, QueryThunk, Row, SyncRunner } from "@cairnq/store-kysely";
import { CairnQError } from "@cairnq/protocol";
import { brandErrorClass } from "@cairnq/protocol/adapter";
import { busyDelayMs, DatabaseBusy, delay, isBusyError } from "./busy.js";
import type { MergeableWrite, QueueConnection, TransactionOptions, WriteQueueStats } from "./write-queue-contract.js";

export type { MergeableWrite, QueueConnection, TransactionOptions, WriteQueueStats } from "./write-queue-contract.js";

/**
 * Statements per group-commit transaction at most. A batch holds the write
 * lock (and the event loop: better-sqlite3 is synchronous) until it commits,
 * so the cap bounds that pause; at a few microseconds per statement, 256
 * keeps it around a millisecond while amortizing the commit over plenty.
 */
const MAX_BATCH = 256;

const BEGIN = CompiledQuery.raw("BEGIN IMMEDIATE");
const COMMIT = CompiledQuery.raw("COMMIT");
const ROLLBACK = CompiledQuery.raw("ROLLBACK");
const SAVEPOINT = CompiledQuery.raw("SAVEPOINT cairnq_merged");
const RELEASE = CompiledQuery.raw("RELEASE cairnq_merged");
const ROLLBACK_TO = CompiledQuery.raw("ROLLBACK TO cairnq_merged");
const TX_SAVEPOINT = CompiledQuery.raw("SAVEPOINT cairnq_claim");
const TX_RELEASE = CompiledQuery.raw("RELEASE cairnq_claim");
const TX_ROLLBACK_TO = CompiledQuery.raw("ROLLBACK TO cairnq_claim");

/** A plain statement job: its thunk's statement, resolved with the driver's result; never merged. */
const PLAIN: MergeableWrite<QueryThunk, QueryResult<Row>> = Object.freeze({
  one: (run: SyncRunner, query: QueryThunk) => run(query()),
  maxRows: 1,
  maxBytes: 0,
  bytes: () => 0,
});

interface JobBase {
  readonly connection: QueueConnection;
  firstBusyAt: number | null;
  attempts: number;
  reject(err: unknown): void;
}

interface StatementJob extends JobBase {
  readonly kind: "statement";
  readonly write: MergeableWrite<unknown, unknown>;
  readonly item: unknown;
  /** Set after a multi-row statement carrying this job tore the whole transaction down: it runs on its own from then on. */
  solo: boolean;
  resolve(value: unknown): void;
}

interface TransactionJob extends JobBase {
  readonly kind: "transaction" | "maintenance" | "exclusive";
  readonly body: (tx: QueryRunner) => Promise<unknown>;
  /** The transaction's first statement (after BEGIN), run before the body. */
  readonly first: QueryThunk | null;
  /** Whether the body gets the direct runner instead of Kysely's connection (see {@link TransactionOptions}). */
  readonly direct: boolean;
  /** See {@link TransactionOptions.quietUnlessFirstChanges}. */
  readonly quiet: boolean;
  resolve(value: unknown): void;
}

type Job = StatementJob | TransactionJob;

/** The write queue of one database file; get it with `acquireWriteQueue` (write-queue-registry.ts). */
export class WriteQueue {
  readonly stats: WriteQueueStats = {
    batches: 0,
    groupCommits: 0,
    statements: 0,
    merged: 0,
    mergedStatements: 0,
    mergeFallbacks: 0,
    fusedClaims: 0,
    largestBatch: 0,
    transactions: 0,
    busyRetries: 0,
  };
  readonly #pending: Job[] = [];
  #pumping = false;
  #retryAt = 0;
  #running: QueueConnection | null = null;
  #turnWaiters: (() => void)[] = [];

  /** One autocommit write; joins a group commit when others are pending. Resolves after its COMMIT. */
  statement(connection: QueueConnection, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.mergeable(connection, PLAIN, query);
  }

  /**
   * One autocommit write of `item` through `write`: alone, its single-row
   * statement; in a group commit next to other items of the same `write`, one
   * multi-row statement for them all (see the module comment). Resolves with
   * this item's own outcome after its COMMIT.
   */
  mergeable<I, O>(connection: QueueConnection, write: MergeableWrite<I, O>, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#enqueue({
        kind: "statement",
        connection,
        write,
        item,
        solo: false,
        resolve,
        reject,
        firstBusyAt: null,
        attempts: 0,
      });
    });
  }

  /** `fn` inside its own `BEGIN IMMEDIATE … COMMIT`; rolled back when it throws. May run again after a busy error. */
  transaction<T>(connection: QueueConnection, fn: (tx: QueryRunner) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return new Promise((resolve, reject) => {
      this.#enqueue({
        kind: "transaction",
        connection,
        body: fn,
        first: options.first ?? null,
        direct: options.direct ?? false,
        quiet: options.quietUnlessFirstChanges ?? false,
        resolve: resolve,
        reject,
        firstBusyAt: null,
        attempts: 0,
      });
    });
  }

  /**
   * Runs `fn` holding the turn, touching none of this queue's connections:
   * no in-process write of this file starts until it settles. For a
   * transaction the caller opens on a connection of their own
   * (`SQLiteStore.transaction`): while it holds the database lock, writers of
   * this process wait here instead of failing busy, and `fn`'s own lock
   * never waits for a group commit of ours that is half done. Its errors
   * reject the returned promise; it is never retried.
   */
  exclusive<T>(connection: QueueConnection, fn: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.#enqueue({ kind: "exclusive", connection, body: fn, first: null, direct: false, quiet: false, resolve, reject, firstBusyAt: null, attempts: 0 });
    });
  }

  /** Best-effort work on the connection outside a transaction, holding the turn; errors (busy included) are swallowed. */
  maintenance(connection: QueueConnection, fn: (tx: QueryRunner) => Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      this.#enqueue({
        kind: "maintenance",
        connection,
        body: fn,
        first: null,
        direct: false,
        quiet: false,
        resolve: () => resolve(),
        reject: () => resolve(),
        firstBusyAt: null,
        attempts: 0,
      });
    });
  }

  /** Resolves once no job of `connection` is pending or running. */
  async drain(connection: QueueConnection): Promise<void> {
    while (this.#running === connection || this.#pending.some((job) => job.connection === connection)) {
      await new Promise<void>((resolve) => this.#turnWaiters.push(resolve));
    }
  }

  #enqueue(job: Job): void {
    this.#pending.push(job);
    if (!this.#pumping) {
      this.#pumping = true;
      void this.#pump();
    }
  }

  async #pump(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const wait = this.#retryAt - Date.now();
        // Every turn of the queue starts on a later turn of the event loop than the one that queued its
        // first job, so that writes issued in one turn form one batch — and so that a worker's settlement
        // and the claim it issues right after (a chain of microtasks later, once the handler's end freed
        // its slot) share one commit as a fused claim. Started on a microtask, the settlement committed
        // alone and the claim followed at once in a transaction of its own, which another process's write
        // then ran into: in the latency bench (sequential `call()`s, an idle worker in another process)
        // ~40% of the submits got SQLITE_BUSY and slept the §13 backoff (0.5 ms per call on average). A
        // turn costs a few microseconds; submit c1 and drain c1 did not move.
        await (wait > 0 ? delay(wait) : nextTurn());
        const head = this.#pending[0] as Job;
        this.#running = head.connection;
        try {
          if (head.kind === "statement") {
            const batch = this.#takeBatch();
            const next = this.#pending[0];
            // The writer inside a transaction no job of ours opened: a caller's Kysely transaction on the store's
            // `db`. Wait for it to end (Kysely's connection mutex) instead of landing inside it.
            if (head.connection.inTransaction()) await holdingWriter(head.connection, () => Promise.resolve(this.#runBatch(batch)));
            else if (next !== undefined && fusable(next, head.connection)) await this.#runFused(batch, this.#pending.shift() as TransactionJob);
            else this.#runBatch(batch);
          } else if (fusable(head, head.connection) && !head.connection.inTransaction()) {
            await this.#runFused([], this.#pending.shift() as TransactionJob);
          } else {
            await this.#runTransaction(this.#pending.shift() as TransactionJob);
          }
        } finally {
          this.#running = null;
          const waiters = this.#turnWaiters;
          this.#turnWaiters = [];
          for (const wake of waiters) wake();
        }
      }
    } finally {
      this.#pumping = false;
    }
  }

  #takeBatch(): StatementJob[] {
    const head = this.#pending[0] as StatementJob;
    let n = 1;
    while (n < this.#pending.length && n < MAX_BATCH) {
      const next = this.#pending[n] as Job;
      if (next.kind !== "statement" || next.connection !== head.connection) break;
      n += 1;
    }
    return this.#pending.splice(0, n) as StatementJob[];
  }

  /** Puts busy jobs back at the head of the queue with a backoff, or fails those out of budget. */
  #busy(jobs: readonly Job[], err: unknown): void {
    const now = Date.now();
    const keep: Job[] = [];
    for (const job of jobs) {
      if (job.kind === "maintenance") {
        job.resolve(undefined);
        continue;
      }
      job.firstBusyAt ??= now;
      job.attempts += 1;
      if (now - job.firstBusyAt >= job.connection.busyTimeoutMs) {
        job.reject(new DatabaseBusy(job.connection.file, job.connection.busyTimeoutMs, err));
      } else {
        keep.push(job);
      }
    }
    const head = keep[0];
    if (head === undefined) return;
    this.stats.busyRetries += 1;
    const left = (head.firstBusyAt as number) + head.connection.busyTimeoutMs - now;
    this.#retryAt = now + Math.min(left, busyDelayMs(head.attempts));
    this.#pending.unshift(...keep);
  }

  /** Runs a statement batch to its end, synchronously (see the module comment): every job is settled when it returns. */
  #runBatch(batch: StatementJob[]): void {
    this.#count(batch);
    const connection = (batch[0] as StatementJob).connection;
    if (batch.length === 1) {
      const job = batch[0] as StatementJob;
      let value: unknown;
      try {
        value = job.write.one((query) => connection.execute(query), job.item);
      } catch (err) {
        if (isBusyError(err)) this.#busy(batch, err);
        else job.reject(err);
        return;
      }
      connection.committed?.();
      job.resolve(value);
      return;
    }
    this.stats.groupCommits += 1;
    try {
      connection.execute(BEGIN);
    } catch (err) {
      if (isBusyError(err)) this.#busy(batch, err);
      else for (const job of batch) job.reject(err);
      return;
    }
    const outcomes: MergedOutcome<unknown>[] = [];
    try {
      this.#runMembers(batch, outcomes, 0);
      connection.execute(COMMIT);
    } catch (thrown) {
      rollbackQuietly(connection);
      this.#failTransaction(batch, thrown);
      return;
    }
    connection.committed?.();
    settle(batch, outcomes, 0);
  }

  #count(batch: readonly StatementJob[]): void {
    if (batch.length === 0) return;
    this.stats.batches += 1;
    this.stats.statements += batch.length;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
  }

  /**
   * Runs the members of a group commit inside the open transaction, each outcome into
   * `outcomes[offset + i]`: a merged run where the members allow it, else each member's own
   * statement (a failure SQLite undid alone is that member's outcome). Throws {@link TornDown} when a
   * statement made SQLite roll back the whole transaction.
   */
  #runMembers(members: readonly StatementJob[], outcomes: MergedOutcome<unknown>[], offset: number): void {
    if (members.length === 0) return;
    const connection = (members[0] as StatementJob).connection;
    const run: SyncRunner = (query) => connection.execute(query);
    const runOne = (i: number): void => {
      const job = members[i] as StatementJob;
      try {
        outcomes[offset + i] = { ok: true, value: job.write.one(run, job.item) };
      } catch (err) {
        if (!connection.inTransaction()) throw new TornDown(err, offset + i, offset + i + 1, false);
        outcomes[offset + i] = { ok: false, error: err };
      }
    };
    for (let i = 0; i < members.length; ) {
      const end = this.#mergedRunEnd(members, i);
      if (end - i < 2) {
        runOne(i);
        i += 1;
        continue;
      }
      const write = (members[i] as StatementJob).write;
      const items = members.slice(i, end).map((job) => job.item);
      let merged: MergedOutcome<unknown>[] | null;
      // A merged run may take several statements (see MergeableWrite): its own savepoint undoes them all.
      connection.execute(SAVEPOINT);
      try {
        merged = (write.many as NonNullable<typeof write.many>)(run, items);
        if (merged.length !== items.length) throw new Error(`a merged write returned ${merged.length} outcomes for ${items.length} items`);
        connection.execute(RELEASE);
      } catch (err) {
        if (!connection.inTransaction()) throw new TornDown(err, offset + i, offset + end, true);
        connection.execute(ROLLBACK_TO);
        connection.execute(RELEASE);
        // Undone: each member on its own, as if alone.
        merged = null;
        this.stats.mergeFallbacks += 1;
      }
      if (merged === null) {
        for (let k = i; k < end; k += 1) runOne(k);
      } else {
        this.stats.mergedStatements += 1;
        this.stats.merged += items.length;
        for (let k = 0; k < merged.length; k += 1) outcomes[offset + i + k] = merged[k] as MergedOutcome<unknown>;
      }
      i = end;
    }
  }

  /** Settles the jobs of a transaction that did not commit (rolled back already) by what ended it. */
  #failTransaction(jobs: readonly Job[], thrown: unknown): void {
    const file = (jobs[0] as Job).connection.file;
    if (thrown instanceof TornDown && thrown.merged) {
      // SQLite rolled everything back, so nothing of it was applied, and which row of the merged run
      // did it is unknown: run the jobs again at once, that run's members each on its own, so that
      // every caller gets what its own statement gives (the culprit its error, the others their rows,
      // or GroupRolledBack should the culprit tear the retry down too).
      for (let k = thrown.from; k < thrown.to; k += 1) (jobs[k] as StatementJob).solo = true;
      this.#pending.unshift(...jobs);
      return;
    }
    const err = thrown instanceof TornDown ? thrown.error : thrown;
    if (isBusyError(err)) {
      this.#busy(jobs, err);
      return;
    }
    const culprit = (i: number): boolean => !(thrown instanceof TornDown) || (i >= thrown.from && i < thrown.to);
    jobs.forEach((job, i) => job.reject(culprit(i) ? err : new GroupRolledBack(file, err)));
  }

  /**
   * The claim cycle's transaction (a direct transaction job) sharing its `BEGIN IMMEDIATE … COMMIT`
   * with the statement jobs of its connection around it: `before` (the batch pending ahead of it)
   * first, then its own statements inside a SAVEPOINT (its failure undoes only them and fails only
   * it), then the statement jobs that arrived meanwhile. One commit instead of two or three; every
   * caller settles after it.
   */
  async #runFused(before: StatementJob[], tx: TransactionJob): Promise<void> {
    this.stats.transactions += 1;
    const connection = tx.connection;
    await holdingWriter(connection, async () => {
      try {
        connection.execute(BEGIN);
      } catch (err) {
        const jobs = [...before, tx];
        if (isBusyError(err)) this.#busy(jobs, err);
        else for (const job of jobs) job.reject(err);
        return;
      }
      const outcomes: MergedOutcome<unknown>[] = [];
      let own: MergedOutcome<unknown>;
      let after: StatementJob[] = [];
      let firstChanged = true;
      try {
        this.#runMembers(before, outcomes, 0);
        // Alone in the transaction, the claim needs no savepoint: its failure rolls back the whole of it.
        const shared = before.length > 0;
        if (shared) connection.execute(TX_SAVEPOINT);
        try {
          if (tx.first !== null) firstChanged = changedRows(connection.execute(tx.first()));
          const value = await tx.body(directRunner(connection));
          if (shared) connection.execute(TX_RELEASE);
          own = { ok: true, value };
        } catch (err) {
          if (!shared || !connection.inTransaction()) throw new TornDown(err, before.length, before.length + 1, false);
          connection.execute(TX_ROLLBACK_TO);
          connection.execute(TX_RELEASE);
          own = { ok: false, error: err };
        }
        after = this.#takeStatements(connection, MAX_BATCH - before.length);
        this.#runMembers(after, outcomes, before.length + 1);
        connection.execute(COMMIT);
      } catch (thrown) {
        rollbackQuietly(connection);
        const alone = before.length === 0 && after.length === 0;
        if (alone && thrown instanceof TornDown) {
          // The claim alone: exactly as a transaction of its own (a busy error is retried, anything else is its error).
          if (isBusyError(thrown.error)) this.#busy([tx], thrown.error);
          else tx.reject(thrown.error);
          return;
        }
        this.#failTransaction([...before, tx, ...after], thrown);
        return;
      }
      const members = before.length + after.length;
      if (members > 0 || !tx.quiet || firstChanged) connection.committed?.();
      if (members > 0) {
        this.stats.fusedClaims += 1;
        this.stats.groupCommits += 1;
        this.#count([...before, ...after]);
      }
      settle(before, outcomes, 0);
      if (own.ok) tx.resolve(own.value);
      else tx.reject(own.error);
      settle(after, outcomes, before.length + 1);
    });
  }

  /** Takes the statement jobs of `connection` at the head of the queue, at most `limit`. */
  #takeStatements(connection: QueueConnection, limit: number): StatementJob[] {
    let n = 0;
    while (n < this.#pending.length && n < limit) {
      const next = this.#pending[n] as Job;
      if (next.kind !== "statement" || next.connection !== connection) break;
      n += 1;
    }
    return this.#pending.splice(0, n) as StatementJob[];
  }

  /**
   * The end (exclusive) of the merged run starting at `start`: the adjacent members of the same
   * mergeable write, within its row and byte bounds (a member over the byte bound runs alone).
   * `start + 1` when the member runs on its own.
   */
  #mergedRunEnd(batch: readonly StatementJob[], start: number): number {
    const first = batch[start] as StatementJob;
    const write = first.write;
    if (write.many === undefined || first.solo) return start + 1;
    let bytes = write.bytes(first.item);
    if (bytes > write.maxBytes) return start + 1;
    let end = start + 1;
    while (end < batch.length && end - start < write.maxRows) {
      const next = batch[end] as StatementJob;
      if (next.write !== write || next.solo) break;
      bytes += write.bytes(next.item);
      if (bytes > write.maxBytes) break;
      end += 1;
    }
    return end;
  }

  async #runTransaction(job: TransactionJob): Promise<void> {
    this.stats.transactions += 1;
    const connection = job.connection;
    if (job.kind === "exclusive") {
      let value: unknown;
      try {
        value = await (job.body as unknown as () => Promise<unknown>)();
      } catch (err) {
        job.reject(err);
        return;
      }
      // The caller's own transaction on a connection of theirs, committed by now.
      connection.committed?.();
      job.resolve(value);
      return;
    }
    // Holding Kysely's connection keeps Kysely users of the writer (an in-memory database's reads, a caller's
    // transaction on the store's `db`) out while this transaction is open across the body's awaits. A direct job
    // runs on the writer itself, so it needs no Kysely instance over that connection.
    const run = async (conn: QueryRunner | null): Promise<void> => {
      if (job.kind === "maintenance") {
        try {
          await job.body(conn ?? directRunner(connection));
        } catch {
          // Best effort (statistics): a busy or failed run is skipped, never retried or reported.
        }
        rollbackQuietly(connection);
        job.resolve(undefined);
        return;
      }
      try {
        connection.execute(BEGIN);
      } catch (err) {
        if (isBusyError(err)) this.#busy([job], err);
        else job.reject(err);
        return;
      }
      let value: unknown;
      let firstChanged = true;
      try {
        if (job.first !== null) firstChanged = changedRows(connection.execute(job.first()));
        value = await job.body(conn ?? directRunner(connection));
        connection.execute(COMMIT);
      } catch (err) {
        rollbackQuietly(connection);
        if (isBusyError(err)) this.#busy([job], err);
        else job.reject(err);
        return;
      }
      if (!job.quiet || firstChanged) connection.committed?.();
      job.resolve(value);
    };
    if (job.direct) await holdingWriter(connection, () => run(null));
    else await connection.db.connection().execute(run);
  }
}

/**
 * Runs `fn` holding Kysely's connection of the writer — its mutex, which keeps Kysely users of the writer out —
 * through the executor's connection provider: `db.connection().execute()` builds a Kysely instance over the
 * connection for its callback on every call, which a job that runs straight on the writer never uses.
 */
function holdingWriter<T>(connection: QueueConnection, fn: () => Promise<T>): Promise<T> {
  return connection.db.getExecutor().provideConnection(fn);
}

/** A statement made SQLite roll back the whole group-commit transaction: the error, and whose it was (jobs [from, to), a merged run or not). */
class TornDown extends Error {
  constructor(
    readonly error: unknown,
    readonly from: number,
    readonly to: number,
    readonly merged: boolean,
  ) {
    super("a statement made SQLite roll back the group-commit transaction", { cause: error });
  }
}

/** Whether `job` is a claim cycle's transaction (direct: store-internal statements only) that may share its commit. */
function fusable(job: Job, connection: QueueConnection): job is TransactionJob {
  return job.kind === "transaction" && job.direct && job.connection === connection;
}

/** Resolves on the event loop's next check phase (after pending I/O callbacks and every microtask). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => nextImmediate(resolve));
}

/** Resolves or rejects each job by its outcome at `outcomes[offset + i]`. */
function settle(jobs: readonly StatementJob[], outcomes: readonly MergedOutcome<unknown>[], offset: number): void {
  jobs.forEach((job, i) => {
    const outcome = outcomes[offset + i] as MergedOutcome<unknown>;
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(outcome.error);
  });
}

/** Whether a statement changed (or returned) rows. */
function changedRows(result: QueryResult<Row>): boolean {
  return result.rows.length > 0 || (result.numAffectedRows ?? 0n) > 0n;
}

/** Rolls back the writer's open transaction, if SQLite has not already; a failing ROLLBACK is ignored (nothing is left to undo). */
function rollbackQuietly(connection: QueueConnection): void {
  if (!connection.inTransaction()) return;
  try {
    connection.execute(ROLLBACK);
  } catch {
    // The transaction is gone either way.
  }
}

/** A `QueryRunner` over {@link QueueConnection.execute}: what a direct transaction body runs its statements on. */
function directRunner(connection: QueueConnection): QueryRunner {
  return {
    executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> {
      // Run inside the executor function: a statement's error becomes the promise's rejection, as with Kysely.
      return new Promise((resolve) => resolve(connection.execute(query) as QueryResult<R>));
    },
  };
}

/**
 * A write in a group commit was not applied because SQLite rolled back the
 * whole shared transaction when another write in it failed (§13). Retrying
 * the write is safe.
 */
export class GroupRolledBack extends CairnQError {
  static {
    brandErrorClass(this, "cairnq.error.GroupRolledBack", "GroupRolledBack");
  }

  /** The database file. */
  readonly file: string;

  constructor(file: string, cause: unknown) {
    super(
      `a write to the SQLite database '${file}' was not applied: it shared a group-commit transaction with another write ` +
        `whose failure made SQLite roll back the whole transaction (${describe(cause)}); retry it`,
      { cause },
    );
    this.file = file;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
