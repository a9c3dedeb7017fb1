/**
 * The transaction `SQLiteStore.transaction(db, fn)` runs on the caller's own
 * Kysely instance.
 *
 * Terminology: the *connection* is the one connection of the caller's `db`
 * the transaction holds; the *trx* is the Kysely instance bound to it that
 * `fn` receives; the transaction has *ended* once its `COMMIT` or `ROLLBACK`
 * was issued.
 *
 * Why not Kysely's `db.connection()`: its bound instance runs anything, at
 * any time, so a statement sent through `trx` after the transaction ended —
 * an un-awaited write, or a `trx` kept past `fn` — ran in autocommit and
 * persisted outside the transaction that was rolled back. Kysely's own
 * `db.transaction()` refuses those; this trx does too.
 */
import type { CompiledQuery, DatabaseConnection, DatabaseIntrospector, Dialect, Driver, QueryCompiler, QueryResult } from "kysely";
import { Kysely, SingleConnectionProvider } from "kysely";
import { CairnQError } from "@cairnq/protocol";

/** How the transaction ended, or `null` while it is open. */
type Ended = "committed" | "rolled back" | null;

/** The end of a transaction, for the `trx` of `fn` to check before every statement. */
export interface AppTransactionState {
  ended: Ended;
}

function refuse(what: string): never {
  throw new CairnQError(`${what} is not available on the trx of store.transaction(db, fn): it is bound to one open transaction; use your own db for that`);
}

function checkOpen(state: AppTransactionState): void {
  if (state.ended === null) return;
  throw new CairnQError(
    `the transaction of store.transaction(db, fn) is already ${state.ended}, so this statement was not run (it would have run outside ` +
      "any transaction); use trx only inside fn, and await everything you start there",
  );
}

/**
 * A Kysely instance on `connection` (taken from `db`, with `db`'s plugins,
 * adapter and compiler) that refuses every statement once `state.ended` is
 * set, and refuses to begin a nested transaction or to be destroyed.
 *
 * @example
 * ```ts
 * const state: AppTransactionState = { ended: null };
 * const trx = boundTransaction(db, connection, state);
 * await fn(trx);
 * state.ended = "committed";
 * ```
 */
export function boundTransaction<DB>(db: Kysely<DB>, connection: DatabaseConnection, state: AppTransactionState): Kysely<DB> {
  const guarded: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      checkOpen(state);
      return await connection.executeQuery<R>(query);
    },
    async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
      checkOpen(state);
      yield* connection.streamQuery<R>(query, chunkSize);
    },
  };
  const executor = db.getExecutor().withConnectionProvider(new SingleConnectionProvider(guarded));
  const driver: Driver = {
    init: () => Promise.resolve(),
    acquireConnection: () => Promise.resolve(guarded),
    beginTransaction: () => refuse("a nested transaction (trx.transaction())"),
    commitTransaction: () => refuse("commit"),
    rollbackTransaction: () => refuse("rollback"),
    releaseConnection: () => Promise.resolve(),
    destroy: () => refuse("destroy()"),
  };
  const dialect: Dialect = {
    createDriver: () => driver,
    createAdapter: () => executor.adapter,
    createQueryCompiler: (): QueryCompiler => refuse("a query compiler"),
    createIntrospector: (): DatabaseIntrospector => refuse("introspection"),
  };
  return new Kysely<DB>({ config: { dialect }, dialect, driver, executor });
}
