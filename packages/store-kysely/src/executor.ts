import type { CompiledQuery, Kysely, QueryResult } from "kysely";

/**
 * A Kysely instance of any database shape. The store core only runs compiled
 * statements (`executeQuery`, `transaction`, `connection`), never the typed
 * query builder, so the table types do not matter — the idiom Kysely itself
 * uses for schema-agnostic code.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's idiom for schema-agnostic code; no table types are used.
export type AnyKysely = Kysely<any>;

/** A result row as the driver returns it, before decoding (§2.2). */
export type Row = Record<string, unknown>;

/**
 * What a transaction body runs statements on: a Kysely `Transaction`, a
 * single-connection Kysely, or anything else with `executeQuery`.
 */
export interface QueryRunner {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

/**
 * A statement to run, built when it runs: the thunk materializes the
 * parameters, including a bound `now`, so a statement that waited for a lock
 * or was retried after `SQLITE_BUSY` reads the clock at execution (§2.1).
 */
export type QueryThunk = () => CompiledQuery<Row>;

/** Runs one statement now, synchronously, and returns its result; throws the driver's error. */
export type SyncRunner = (query: CompiledQuery<Row>) => QueryResult<Row>;

/**
 * The first statements of a {@link StoreExecutor.writeTransactionWith} transaction, built when the
 * transaction runs (once per attempt): the claim cycle's lease recovery, then its first draw (and
 * the probe again) when the draw planner could plan it before the transaction opened.
 */
export interface TransactionHead {
  /** The transaction's first statement, whose result nobody needs (lease recovery): an executor may send it with `BEGIN`. */
  readonly first: CompiledQuery<Row>;
  /** The statements after `first`, in order; the transaction's body receives their results. */
  readonly statements: readonly CompiledQuery<Row>[];
  /** Nothing follows the head: the transaction commits with it, and the body runs after the commit. */
  readonly last: boolean;
  /**
   * Every draw of the transaction is a plain draw (no flow control: no group reads, locks or
   * counts), whose order the claim indexes give: an executor may steer the planner to them
   * (Postgres: `postgres-executor.ts`). Absent: the transaction may run other reads. @default false
   */
  readonly plainDraws?: boolean;
}

/**
 * How statements reach the database: the single place where a dialect decides
 * connection use, write serialization and busy handling.
 *
 * Every method receives the store's Kysely instance (as Kysely's own adapter
 * hooks do); an executor may route some work elsewhere (SQLite reads use a
 * second connection so they never wait for, or land inside, a write
 * transaction).
 *
 * Extend {@link BaseStoreExecutor} (or {@link KyselyExecutor}) rather than
 * implementing this directly: a method added here later comes with a default
 * there, so an executor written today keeps compiling and working.
 */
export interface StoreExecutor {
  /** One read-only statement, outside any write transaction and never queued behind writes. */
  read(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>>;
  /**
   * One write statement that commits on its own (autocommit). SQLite batches
   * concurrent calls into one transaction (group commit); the promise settles
   * only after the commit.
   */
  write(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>>;
  /**
   * A write transaction (SQLite `BEGIN IMMEDIATE`; Postgres `BEGIN` at READ
   * COMMITTED). Rolled back when `fn` throws. The body may run more than once
   * (a busy retry), so compute ids and encodings before calling this.
   */
  writeTransaction<T>(db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T>;
  /**
   * A write transaction of the store core's own statements (never user code) whose first statement
   * is `first()` (its result is not needed), then `fn`. An executor may send `first` with `BEGIN`
   * to save a round trip, or run `fn`'s statements straight on its connection.
   */
  writeTransactionAfter<T>(db: AnyKysely, first: QueryThunk, fn: (tx: QueryRunner) => Promise<T>): Promise<T>;
  /**
   * A write transaction of the store core's own statements whose first statements are `head()`'s
   * (`head` is called once per attempt, when the attempt runs), then `fn` with the results of
   * `head().statements`. With `head().last` the head is the whole transaction: it commits with the
   * head and `fn` gets `null` instead of the transaction, after the commit. The claim cycle's one
   * way in: an executor may send `BEGIN` and the whole head — `COMMIT` too when `last` — in one
   * round trip (Postgres pipelines them).
   */
  writeTransactionWith<T>(db: AnyKysely, head: () => TransactionHead, fn: (tx: QueryRunner | null, results: readonly QueryResult<Row>[]) => Promise<T>): Promise<T>;
  /**
   * The store core's own statements `queries`, in order, inside the open transaction `tx` of a
   * {@link StoreExecutor.writeTransactionWith} body, stopping at the first error; their results in
   * order. An executor may send them in one round trip (Postgres pipelines them): the group draw's
   * bookkeeping writes after its draw are one batch.
   */
  batch(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]>;
  /**
   * {@link StoreExecutor.batch} as the last statements of a {@link StoreExecutor.writeTransactionWith}
   * body: the body runs nothing on `tx` after them (it may still return, or throw, which rolls back
   * only what is not committed yet). An executor may send `COMMIT` with them (Postgres pipelines it)
   * and then sends none after the body: the group draw's last batch carries the commit.
   */
  batchLast(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]>;
}

/** What {@link BaseStoreExecutor.writeTransactionWith}'s transaction gives back: `fn`'s value, or the head's results to hand `fn` after the commit. */
type HeadOutcome<T> = { readonly value: T } | { readonly committed: readonly QueryResult<Row>[] };

/**
 * The base of every executor: `read`, `write` and `writeTransaction` to
 * supply; every other method has a default that is correct on any backend,
 * built on those three, which an executor overrides where its backend can do
 * better (the model is Kysely's `DialectAdapterBase`).
 *
 * @example
 * class LibsqlExecutor extends BaseStoreExecutor {
 *   read(db: AnyKysely, query: QueryThunk) { return db.executeQuery(query()); }
 *   write(db: AnyKysely, query: QueryThunk) { return db.executeQuery(query()); }
 *   writeTransaction<T>(db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>) { return db.transaction().execute(fn); }
 * }
 */
export abstract class BaseStoreExecutor implements StoreExecutor {
  abstract read(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>>;
  abstract write(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>>;
  abstract writeTransaction<T>(db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T>;

  /** Default: `first()` as the first statement of {@link BaseStoreExecutor.writeTransaction}'s body, then `fn`. */
  writeTransactionAfter<T>(db: AnyKysely, first: QueryThunk, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return this.writeTransaction(db, async (tx) => {
      await tx.executeQuery(first());
      return fn(tx);
    });
  }

  /** Default: one statement after another on `tx`. */
  async batch(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]> {
    const results: QueryResult<Row>[] = [];
    for (const query of queries) results.push(await tx.executeQuery(query));
    return results;
  }

  /** Default: {@link BaseStoreExecutor.batch}; the transaction commits after the body, as always. */
  batchLast(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]> {
    return this.batch(tx, queries);
  }

  /**
   * Default: {@link BaseStoreExecutor.writeTransactionAfter} with the head's `first`, then its
   * statements one by one in the body; with `last`, `fn` runs after the commit.
   */
  async writeTransactionWith<T>(db: AnyKysely, head: () => TransactionHead, fn: (tx: QueryRunner | null, results: readonly QueryResult<Row>[]) => Promise<T>): Promise<T> {
    let current: TransactionHead | null = null;
    const outcome = await this.writeTransactionAfter(
      db,
      () => (current = head()).first,
      async (tx): Promise<HeadOutcome<T>> => {
        const { statements, last } = current as TransactionHead;
        const results: QueryResult<Row>[] = [];
        for (const query of statements) results.push(await tx.executeQuery(query));
        return last ? { committed: results } : { value: await fn(tx, results) };
      },
    );
    return "value" in outcome ? outcome.value : fn(null, outcome.committed);
  }
}

/**
 * The default executor: each statement through `db.executeQuery`, and
 * transactions through `db.transaction()` (the server's default isolation,
 * never raised — §3.9). Right for pooled servers such as Postgres.
 *
 * @example
 * class MyDialect extends BaseStoreDialect { override readonly executor = new KyselyExecutor(); }
 */
export class KyselyExecutor extends BaseStoreExecutor {
  read(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return db.executeQuery(query());
  }

  write(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return db.executeQuery(query());
  }

  writeTransaction<T>(db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return db.transaction().execute((tx) => fn(tx));
  }
}
