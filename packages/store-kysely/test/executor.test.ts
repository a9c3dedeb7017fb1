import type { CompiledQuery, QueryResult } from "kysely";
import { CompiledQuery as Query } from "kysely";
import { describe, expect, it } from "vitest";
import type { AnyKysely, QueryRunner, QueryThunk, Row, TransactionHead } from "../src/index.js";
import { BaseStoreExecutor } from "../src/index.js";

/**
 * An executor that supplies only the three required methods, as a third party's would, over a log:
 * each statement answers one row `{ sql }`; a transaction logs BEGIN and COMMIT (ROLLBACK when its
 * body throws), and the first `busyAttempts` attempts fail busy after running the body, as SQLite's
 * write queue retries a transaction.
 */
class LoggingExecutor extends BaseStoreExecutor {
  readonly log: string[] = [];
  busyAttempts = 0;
  readonly #runner: QueryRunner = {
    executeQuery: <R>(query: CompiledQuery<R>): Promise<QueryResult<R>> => {
      this.log.push(query.sql);
      return Promise.resolve({ rows: [{ sql: query.sql } as R] });
    },
  };

  read(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#runner.executeQuery(query());
  }

  write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#runner.executeQuery(query());
  }

  async writeTransaction<T>(_db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    for (;;) {
      this.log.push("BEGIN");
      let value: T;
      try {
        value = await fn(this.#runner);
      } catch (error) {
        this.log.push("ROLLBACK");
        throw error;
      }
      if (this.busyAttempts > 0) {
        this.busyAttempts -= 1;
        this.log.push("ROLLBACK (busy)");
        continue;
      }
      this.log.push("COMMIT");
      return value;
    }
  }
}

const db = null as unknown as AnyKysely;
const q = (sql: string): CompiledQuery<Row> => Query.raw(sql);

describe("BaseStoreExecutor defaults", () => {
  it("writeTransactionAfter: first() as the first statement of writeTransaction's body, then fn on the same transaction", async () => {
    const executor = new LoggingExecutor();
    const value = await executor.writeTransactionAfter(db, () => q("recover"), async (tx) => {
      await tx.executeQuery(q("draw"));
      return "drawn";
    });
    expect(value).toBe("drawn");
    expect(executor.log).toEqual(["BEGIN", "recover", "draw", "COMMIT"]);
  });

  it("writeTransactionWith, head not last: first, then the statements, then fn inside the transaction with the statements' results (not first's)", async () => {
    const executor = new LoggingExecutor();
    const seen: { tx: boolean; results: unknown[] }[] = [];
    const value = await executor.writeTransactionWith(
      db,
      (): TransactionHead => ({ first: q("recover"), statements: [q("draw 0")], last: false }),
      async (tx, results) => {
        seen.push({ tx: tx !== null, results: results.map((r) => r.rows[0]) });
        await tx?.executeQuery(q("draw 1"));
        return results.length;
      },
    );
    expect(value).toBe(1);
    expect(seen).toEqual([{ tx: true, results: [{ sql: "draw 0" }] }]);
    expect(executor.log).toEqual(["BEGIN", "recover", "draw 0", "draw 1", "COMMIT"]);
  });

  it("writeTransactionWith, head last: the head is the whole transaction, and fn runs after the commit with null and the statements' results", async () => {
    const executor = new LoggingExecutor();
    let logAtFn: string[] = [];
    const value = await executor.writeTransactionWith(
      db,
      () => ({ first: q("recover"), statements: [q("draw 0"), q("probe")], last: true }),
      async (tx, results) => {
        logAtFn = [...executor.log];
        expect(tx).toBeNull();
        return results.map((r) => (r.rows[0] as { sql: string }).sql);
      },
    );
    expect(value).toEqual(["draw 0", "probe"]);
    expect(logAtFn).toEqual(["BEGIN", "recover", "draw 0", "probe", "COMMIT"]);
  });

  it("writeTransactionWith builds the head once per attempt, and fn sees the results of the attempt that committed", async () => {
    const executor = new LoggingExecutor();
    executor.busyAttempts = 1;
    let attempt = 0;
    const value = await executor.writeTransactionWith(
      db,
      () => {
        attempt += 1;
        return { first: q(`recover ${attempt}`), statements: [q(`draw ${attempt}`)], last: true };
      },
      async (_tx, results) => (results[0]?.rows[0] as { sql: string }).sql,
    );
    expect(attempt).toBe(2);
    expect(value).toBe("draw 2");
    expect(executor.log).toEqual(["BEGIN", "recover 1", "draw 1", "ROLLBACK (busy)", "BEGIN", "recover 2", "draw 2", "COMMIT"]);
  });

  it("batchLast: the statements one by one on the transaction, like batch; the transaction commits after the body, as always", async () => {
    const executor = new LoggingExecutor();
    const value = await executor.writeTransactionWith(
      db,
      () => ({ first: q("recover"), statements: [q("head")], last: false }),
      async (tx) => (await executor.batchLast(tx as QueryRunner, [q("draw"), q("probe again")])).map((r) => (r.rows[0] as { sql: string }).sql),
    );
    expect(value).toEqual(["draw", "probe again"]);
    expect(executor.log).toEqual(["BEGIN", "recover", "head", "draw", "probe again", "COMMIT"]);
  });

  it("writeTransactionWith rolls back when fn throws inside the transaction", async () => {
    const executor = new LoggingExecutor();
    await expect(
      executor.writeTransactionWith(
        db,
        () => ({ first: q("recover"), statements: [], last: false }),
        async () => {
          throw new Error("draw failed");
        },
      ),
    ).rejects.toThrow("draw failed");
    expect(executor.log).toEqual(["BEGIN", "recover", "ROLLBACK"]);
  });
});
