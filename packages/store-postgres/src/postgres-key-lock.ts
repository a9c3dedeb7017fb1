import { CompiledQuery } from "kysely";
import { brandErrorClass } from "@cairnq/protocol/adapter";
import type { KeyLock, KeyLockStatement, QueryRunner } from "@cairnq/store-kysely";
import { StatementKeyLock } from "@cairnq/store-kysely";

/** The key's advisory lock id, exactly as peers compute it (§5.0). */
const LOCK_ID = "hashtextextended($1::text, 0)";

/** Waits for the key lock and takes it until the transaction ends (§5.0); in autocommit it is released at once. */
export const KEY_LOCK_SQL = `SELECT pg_advisory_xact_lock(${LOCK_ID})`;

/** Takes the key lock only if it is free right now. */
export const TRY_KEY_LOCK_SQL = `SELECT pg_try_advisory_xact_lock(${LOCK_ID}) AS locked`;

/**
 * Thrown inside a keyed transaction whose key lock is held elsewhere:
 * {@link PostgresExecutor} rolls the transaction back, waits for the lock
 * outside any transaction, and runs the transaction again.
 */
export class KeyLockBusy extends Error {
  static {
    // Branded like the protocol's errors: the executor that catches it may come from another copy of this package.
    brandErrorClass(this, "cairnq.KeyLockBusy", "KeyLockBusy");
  }

  constructor(readonly key: string) {
    super(`the key lock of '${key}' is held by another transaction`);
  }
}

/**
 * The key lock of §5.0 — `pg_advisory_xact_lock(hashtextextended(<key>::text,
 * 0))`, the lock id peers use, so we and they exclude each other — taken
 * without waiting inside the transaction.
 *
 * Why not simply wait for it there: a keyed transaction's key upsert and
 * cancel read `now()`, the transaction's start (§2.1). A transaction that
 * began, then waited for the lock while another submit of the key inserted
 * and committed a task, would cancel that task (`replace`) with an
 * `updated_at_ms`/`completed_at_ms` older than its `created_at_ms`. Taking
 * the lock only when it is free, and otherwise waiting outside any
 * transaction and starting over ({@link PostgresExecutor}), keeps `now()`
 * after every row the transaction reads. The lock is the same; only where
 * the wait happens differs.
 */
export class PostgresKeyLock implements KeyLock {
  async acquire(tx: QueryRunner, key: string): Promise<void> {
    const lock = this.statement(key);
    lock.check(await tx.executeQuery(lock.query));
  }

  /** The try-lock as a statement to pipeline; its check throws {@link KeyLockBusy} when the lock was taken elsewhere. */
  statement(key: string): KeyLockStatement {
    return {
      query: CompiledQuery.raw(TRY_KEY_LOCK_SQL, [key]),
      check: (result) => {
        const row = result?.rows[0] as { locked?: unknown } | undefined;
        if (row?.locked !== true) throw new KeyLockBusy(key);
      },
    };
  }
}

/**
 * The key lock taken by waiting inside the transaction: for transactions the
 * store cannot restart (a caller's, through `withTransaction`).
 */
export const BLOCKING_KEY_LOCK: StatementKeyLock = new StatementKeyLock(KEY_LOCK_SQL);
