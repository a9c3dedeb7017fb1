import { CompiledQuery } from "kysely";
import type { QueryRunner } from "./executor.js";

/**
 * The lock every keyed transaction (keyed submit, `cancelByKey`,
 * `retryByKey`) takes first (§5.0), so that concurrent writers of one key —
 * ours or a peer's — serialize.
 */
export interface KeyLock {
  /** Takes the lock for `key` inside the open transaction `tx`; released when it ends. */
  acquire(tx: QueryRunner, key: string): Promise<void>;
}

/**
 * No lock: for backends whose write transactions already serialize every
 * writer (SQLite `BEGIN IMMEDIATE`).
 */
export const NO_KEY_LOCK: KeyLock = Object.freeze({
  acquire: async (): Promise<void> => {},
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
}
