import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import type { QueryRunner, Row } from "./executor.js";

/**
 * The key lock as one statement to send with others (a pipeline): `query` takes it, and `check`,
 * given `query`'s result, throws what {@link KeyLock.acquire} would have thrown when the lock was
 * not taken (statements sent after it ran without it: the transaction must not use their results).
 */
export interface KeyLockStatement {
  readonly query: CompiledQuery<Row>;
  check(result: QueryResult<Row> | undefined): void;
}

/**
 * The lock every keyed transaction (keyed submit, `cancelByKey`,
 * `retryByKey`) takes first (§5.0), so that concurrent writers of one key —
 * ours or a peer's — serialize.
 */
export interface KeyLock {
  /** Takes the lock for `key` inside the open transaction `tx`; released when it ends. */
  acquire(tx: QueryRunner, key: string): Promise<void>;
  /**
   * The lock for `key` as a {@link KeyLockStatement}, for a transaction that sends it with the
   * statements after it (the claim cycle's flow control). Optional: without it (or where it returns
   * `null`: nothing to take) the transaction calls {@link KeyLock.acquire}.
   */
  statement?(key: string): KeyLockStatement | null;
}

/**
 * No lock: for backends whose write transactions already serialize every
 * writer (SQLite `BEGIN IMMEDIATE`).
 */
export const NO_KEY_LOCK: KeyLock = Object.freeze({
  acquire: async (): Promise<void> => {},
  statement: (): null => null,
});

/**
 * A key lock taken by one SQL statement with the key as its only parameter.
 *
 * @example
 * // Postgres, exactly the lock id peers use (§5.0):
 * new StatementKeyLock("select pg_advisory_xact_lock(hashtextextended($1::text, 0))");
 */
export class StatementKeyLock implements KeyLock {
  /** @param sql - The locking statement; its one placeholder receives the key. */
  constructor(private readonly sql: string) {}

  async acquire(tx: QueryRunner, key: string): Promise<void> {
    await tx.executeQuery(CompiledQuery.raw(this.sql, [key]));
  }

  /** The locking statement; it waits for the lock, so there is nothing to check. */
  statement(key: string): KeyLockStatement {
    return { query: CompiledQuery.raw(this.sql, [key]), check: () => {} };
  }
}
