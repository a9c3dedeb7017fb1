import type { PostgresPool, QueryResult, Transaction } from "kysely";
import { CompiledQuery } from "kysely";
import type { AnyKysely, QueryRunner, QueryThunk, Row, TransactionHead } from "@cairnq/store-kysely";
import { BaseStoreExecutor, KyselyExecutor } from "@cairnq/store-kysely";
import { runDirect, withDirectConnection } from "./postgres-direct.js";
import { KEY_LOCK_SQL, KeyLockBusy } from "./postgres-key-lock.js";
import type { ListenLane } from "./postgres-listen-lane.js";
import { pipeline, pipelineResults } from "./postgres-pipeline.js";

/**
 * A Kysely transaction of any database shape (the store only runs compiled
 * statements on it, so table types do not matter).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's idiom for schema-agnostic code; no table types are used.
export type AnyTransaction = Transaction<any>;

/** A COMMIT of a transaction an error left aborted answers ROLLBACK instead of failing. */
function requireCommitted(result: QueryResult<Row> | undefined): void {
  const command = (result?.rows[0] as { command?: unknown } | undefined)?.command;
  if (command === "ROLLBACK") throw new Error("the transaction was rolled back by the server at COMMIT (an earlier statement failed)");
}

/** Transaction control of the claim's transactions (no parameters: simple queries, or the head of a pipeline). */
const BEGIN = CompiledQuery.raw("BEGIN");
const COMMIT = CompiledQuery.raw("COMMIT");
const ROLLBACK = CompiledQuery.raw("ROLLBACK");

/**
 * The claim transaction's planner settings, right after `BEGIN` (transaction-scoped: nothing is left
 * on the session, so a transaction-mode pooler is fine): a plan that sorts is never preferred to an
 * index that already yields the draw's order. Without it the draw's plan depends on statistics:
 * on a table never analyzed, or analyzed while few tasks were queued, the planner estimates one
 * queued row, so scanning `status_completed_idx` for `status = 'queued'` and sorting looks as cheap
 * as the claim index — and a prepared statement's generic plan, once made that way, stays for the
 * connection's life. Each draw then read and sorted every queued row: the churn row's drain under
 * concurrent submits ran at 0.43× the backlog drain, its claims reading ~3,300 index entries each
 * against ~19 on the claim index (`node --import ./bench/lib/claim-count.mjs bench/churn-diag-pg.mjs`).
 * A sort nothing else can replace still runs (the setting only adds to a plan's cost). Only in a
 * transaction of plain draws (`TransactionHead.plainDraws`): the group draws' reads are planned
 * as before. With it, a group claim's reads were planned around sorts into slow plans (the running
 * and head read took ~290 ms on the kit's small tables): no row came out wrong, but the kit's
 * `group-passed-order-bounded` outlived its 5 s lease (its running task recovered and drawn again
 * as the leases say it may be) and `group-paged-walk` ran past its timeout.
 *
 * JIT is off in the same statement (no extra statement nor round trip): a sort the index cannot
 * replace — a draw over two or more queues (`queue = ANY(…)`) — keeps the disabled sort's cost
 * (~1e10), far over `jit_above_cost`, so every such claim was JIT-compiled with inlining and
 * optimisation: 0.5–1.1 s a claim against 6–45 ms without JIT, six tasks in two queues
 * (`EXPLAIN ANALYZE`; `test/integration/claim-planner.test.ts`). A claim's reads touch a few rows
 * and never gain from JIT.
 */
const CLAIM_PLANNER = CompiledQuery.raw("SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true)");

/** Where the direct path (`postgres-direct.ts`) may run: the store's Kysely instance and, once reachable, its pool. */
export interface DirectTarget {
  readonly db: AnyKysely;
  readonly directPool: PostgresPool | null;
}

/**
 * How the Postgres store runs statements: each autocommit statement on a
 * pooled connection, each write transaction as `BEGIN … COMMIT` on one
 * connection at the server's default isolation (READ COMMITTED, never
 * raised: the statements are written for its re-checks, §3.9). No group
 * commit and no in-process lock (§13).
 *
 * A keyed transaction whose key lock is busy ({@link KeyLockBusy}) is rolled
 * back, the lock is waited for outside any transaction (an autocommit
 * `pg_advisory_xact_lock`, released as soon as it is granted), and the
 * transaction runs again — see `PostgresKeyLock` for why. Ids and encodings
 * are computed before the transaction, so a rerun inserts the same task.
 */
export class PostgresExecutor extends KyselyExecutor {
  /** The transactions (by the connection their body runs on) whose last batch carried `COMMIT` ({@link PostgresExecutor.batchLast}). */
  readonly #committed = new WeakSet<QueryRunner>();

  /**
   * @param pipelines - Whether the pooled clients run pipelines (`PostgresConnection.pipelines`);
   *   without, {@link PostgresExecutor.writeTransactionWith} sends the head's statements one by one.
   * @param direct - The store's Kysely instance and pool: statements on that instance outside a
   *   Kysely transaction take the direct path (`postgres-direct.ts`) once its pool is reachable;
   *   `null`: everything through Kysely.
   * @param lane - Lends the LISTEN connection to autocommit writes on the direct path, or `null`.
   */
  constructor(
    private readonly pipelines = false,
    private readonly direct: DirectTarget | null = null,
    private readonly lane: ListenLane | null = null,
  ) {
    super();
  }

  /** The pool of the direct path for statements on `db`, or `null` to go through Kysely. */
  #directPool(db: AnyKysely): PostgresPool | null {
    const direct = this.direct;
    return direct !== null && db === direct.db ? direct.directPool : null;
  }

  override read(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    const pool = this.#directPool(db);
    return pool === null ? super.read(db, query) : runDirect(pool, query());
  }

  /** An autocommit write: on the LISTEN connection when the lane is free (`postgres-listen-lane.ts`), else on the pool. */
  override write(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    const pool = this.#directPool(db);
    if (pool === null) return super.write(db, query);
    const compiled = query();
    return this.lane?.tryWrite(compiled) ?? runDirect(pool, compiled);
  }

  override writeTransaction<T>(db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return this.#retryingKeyLock(db, () => super.writeTransaction(db, fn));
  }

  /** Runs `attempt`, and again after waiting out the key lock a busy attempt found taken (it rolled back first). */
  async #retryingKeyLock<T>(db: AnyKysely, attempt: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof KeyLockBusy)) throw error;
        await db.executeQuery(CompiledQuery.raw(KEY_LOCK_SQL, [error.key]));
      }
    }
  }

  /**
   * `body` on one pooled connection, where it runs its own `BEGIN … COMMIT`; any failure sends
   * `ROLLBACK` (outside a transaction — BEGIN itself failed, or COMMIT ended it — that only warns)
   * and rethrows. Retried like {@link PostgresExecutor.writeTransaction} when a key lock was busy.
   */
  #onConnection<T>(db: AnyKysely, body: (conn: QueryRunner) => Promise<T>): Promise<T> {
    return this.#retryingKeyLock(db, () => this.#onConnectionOnce(db, body));
  }

  /** One attempt of {@link PostgresExecutor.#onConnection}: `body` on one pooled connection, rolled back on failure. */
  #onConnectionOnce<T>(db: AnyKysely, body: (conn: QueryRunner) => Promise<T>): Promise<T> {
    const rollingBack = async (conn: QueryRunner): Promise<T> => {
      try {
        return await body(conn);
      } catch (error) {
        await conn.executeQuery(ROLLBACK).catch(() => {});
        throw error;
      }
    };
    const pool = this.#directPool(db);
    return pool === null ? db.connection().execute(rollingBack) : withDirectConnection(pool, rollingBack);
  }

  /**
   * `BEGIN` and `first` in one round trip when `first` binds no parameter
   * (lease recovery: its clock is the database's): one simple-protocol query
   * `BEGIN; <first>` opens the transaction and runs `first` inside it, then
   * `fn` and `COMMIT` as usual; any failure rolls back. A `first` with
   * parameters runs as the first statement after `BEGIN`. `first` is built
   * once per attempt (a busy key lock reruns the transaction).
   */
  override writeTransactionAfter<T>(db: AnyKysely, first: QueryThunk, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return this.#onConnection(db, async (conn) => {
      const query = first();
      if (query.parameters.length > 0) {
        await conn.executeQuery(BEGIN);
        await conn.executeQuery(query);
      } else {
        // No parameters, so pg sends it as a simple query, which may hold several statements.
        await conn.executeQuery(CompiledQuery.raw(`BEGIN; ${query.sql}`));
      }
      const value = await fn(conn);
      requireCommitted(await conn.executeQuery(COMMIT));
      return value;
    });
  }

  /**
   * A claim of plain draws sets {@link CLAIM_PLANNER} first. With pipelines, `BEGIN`, that setting, the head's `first` and all its statements in ONE round trip — with
   * `head().last`, `COMMIT` too, so the whole transaction is one round trip (which the pooled client
   * writes as one implicit transaction, without `BEGIN` and `COMMIT`: `postgres-prepared.ts`). Without (a Kysely
   * instance), the base class's way: {@link PostgresExecutor.writeTransactionAfter}, then the
   * statements one by one. `fn` gets the transaction (`null` once committed with the head) and the
   * results of the head's statements; `COMMIT` follows it. Any failure rolls back (a statement of
   * the head that failed makes the server skip the rest, COMMIT included, and the call rejects with
   * its error); `fn` runs only after a head that was the whole transaction committed. `head` is
   * called once per attempt (a busy key lock reruns the transaction).
   */
  /**
   * With pipelines, `queries` in ONE round trip on the transaction's connection (the server skips
   * the rest after a failing statement, and the call rejects with its error); without, one by one.
   */
  override async batch(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]> {
    if (!this.pipelines || queries.length < 2) return super.batch(tx, queries);
    return pipelineResults(await tx.executeQuery(pipeline(queries)));
  }

  /**
   * With pipelines, `queries` and `COMMIT` in ONE round trip, inside a {@link PostgresExecutor.writeTransactionWith}
   * body, which then sends no `COMMIT` of its own; without, {@link PostgresExecutor.batch}.
   */
  override async batchLast(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]> {
    if (!this.pipelines) return super.batchLast(tx, queries);
    const results = pipelineResults(await tx.executeQuery(pipeline([...queries, COMMIT])));
    requireCommitted(results[results.length - 1]);
    this.#committed.add(tx);
    return results.slice(0, -1);
  }

  override async writeTransactionWith<T>(db: AnyKysely, head: () => TransactionHead, fn: (tx: QueryRunner | null, results: readonly QueryResult<Row>[]) => Promise<T>): Promise<T> {
    if (!this.pipelines) {
      // The planner setting goes first among the head's statements (after recovery, before any draw); its result is not the caller's.
      let planned = false;
      const withPlanner = (): TransactionHead => {
        const built = head();
        planned = built.plainDraws === true;
        return planned ? { ...built, statements: [CLAIM_PLANNER, ...built.statements] } : built;
      };
      return super.writeTransactionWith(db, withPlanner, (tx, results) => fn(tx, planned ? results.slice(1) : results));
    }
    return this.#retryingKeyLock(db, async () => {
      const built = head();
      const { first, statements, last } = built;
      const opening = built.plainDraws === true ? [BEGIN, CLAIM_PLANNER, first] : [BEGIN, first];
      const query = pipeline(last ? [...opening, ...statements, COMMIT] : [...opening, ...statements]);
      // A transaction that is one round trip (a claim) may take the LISTEN lane; one that stays open across round trips never does.
      const onLane = last && this.#directPool(db) !== null ? (this.lane?.tryWrite(query, { transaction: true }) ?? null) : null;
      if (onLane !== null) return committedInOne(pipelineResults(await onLane), opening.length, fn);
      return this.#withHead(db, built, query, opening.length, fn);
    });
  }

  /** {@link PostgresExecutor.writeTransactionWith} on a pooled connection: `query` is the head's pipeline. */
  #withHead<T>(
    db: AnyKysely,
    built: TransactionHead,
    query: CompiledQuery<Row>,
    opening: number,
    fn: (tx: QueryRunner | null, results: readonly QueryResult<Row>[]) => Promise<T>,
  ): Promise<T> {
    return this.#onConnectionOnce(db, async (conn) => {
      const results = pipelineResults(await conn.executeQuery(query));
      if (built.last) return committedInOne(results, opening, fn);
      try {
        const value = await fn(conn, results.slice(opening));
        // The body's last batch committed already (batchLast): nothing is left to commit.
        if (!this.#committed.has(conn)) requireCommitted(await conn.executeQuery(COMMIT));
        return value;
      } finally {
        this.#committed.delete(conn);
      }
    });
  }
}

/**
 * A head sent whole, `BEGIN` to `COMMIT`, in one round trip: its commit checked, `fn` given the results between
 * (after the `opening` statements: `BEGIN`, the planner setting if sent, `first`).
 */
function committedInOne<T>(results: readonly QueryResult<Row>[], opening: number, fn: (tx: null, results: readonly QueryResult<Row>[]) => Promise<T>): Promise<T> {
  requireCommitted(results[results.length - 1]);
  return fn(null, results.slice(opening, -1));
}

/**
 * How the statements of a {@link PostgresStore.withTransaction} view run:
 * every read, write and "write transaction" on the caller's open
 * transaction, so its writes commit or roll back with the caller's. A keyed
 * submit's advisory lock (§5.0) is taken inside that transaction and held
 * until it ends.
 *
 * A failing statement aborts the caller's transaction, as any statement of
 * theirs would; `AlreadyExists` is raised before anything is written and
 * leaves it usable.
 */
export class PostgresTransactionExecutor extends BaseStoreExecutor {
  /** @param trx - The caller's open transaction. */
  constructor(private readonly trx: AnyTransaction) {
    super();
  }

  read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.trx.executeQuery(query());
  }

  write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.trx.executeQuery(query());
  }

  writeTransaction<T>(_db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    return fn(this.trx);
  }
}
