import type { AnyKysely, QueryRunner, QueryThunk, Row } from "@cairnq/store-kysely";
import { BaseStoreExecutor } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";
import type { QueryResult } from "kysely";
import type { MySQLStatementPlan } from "./mysql-statement-plan.js";
import { planStatement, queriesOf } from "./mysql-statement-plan.js";

/** The statement clock in epoch milliseconds (see `MYSQL_CLOCK`). */
export const STATEMENT_NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";
/**
 * The transaction clock: the statement clock of the first statement of the transaction that reads it,
 * kept in `@cq_tx_now`, which {@link startClock} clears as the transaction's first statement. Read
 * lazily, not at `BEGIN`: a keyed transaction waits for its key lock first, and a time read before
 * that wait would be older than the rows the lock's previous holder wrote.
 */
export const TRANSACTION_NOW = `COALESCE(@cq_tx_now, @cq_tx_now := ${STATEMENT_NOW})`;

/** Clears the transaction clock, the transaction's first statement. */
const START_CLOCK = CompiledQuery.raw("SET @cq_tx_now = NULL");

/** Clears the transaction clock on the open transaction `tx` (see {@link TRANSACTION_NOW}). */
export async function startClock(tx: QueryRunner): Promise<void> {
  await tx.executeQuery(START_CLOCK);
}

/** `sql` to run outside a transaction: the transaction clock reads the statement's. */
export function outsideTransaction(sql: string): string {
  return sql.includes(TRANSACTION_NOW) ? sql.replaceAll(TRANSACTION_NOW, STATEMENT_NOW) : sql;
}

/** MySQL's deadlock error: InnoDB rolled the whole transaction back, which may run again. */
const ER_LOCK_DEADLOCK = 1213;
/** How often a transaction the server chose as a deadlock victim runs again before its error surfaces. */
const DEADLOCK_RETRIES = 5;

/**
 * How the core's statements reach MySQL/MariaDB: each text through its
 * {@link MySQLStatementPlan} (positional placeholders, `UPDATE … RETURNING`
 * as an update and a read-back, picked ids as a derived table, upserts as
 * `ON DUPLICATE KEY UPDATE`), on the pool for reads and autocommit writes, in
 * a Kysely transaction for write transactions. A plan of several statements
 * outside a transaction gets one of its own.
 *
 * Values of `VARBINARY` columns come back as strings (the driver hands out
 * `Buffer`s for binary columns), whatever pool or Kysely instance ran them.
 *
 * Every write transaction starts by clearing the transaction clock (`@cq_tx_now`, see `MYSQL_CLOCK`);
 * a statement outside one reads the statement clock in its place.
 *
 * A write transaction the server aborts as a deadlock victim (error 1213)
 * runs again, up to {@link DEADLOCK_RETRIES} times: Postgres would have made
 * one of the two wait instead, and the core's transaction bodies are
 * re-runnable (ids and encodings are computed before them).
 */
export class MySQLExecutor extends BaseStoreExecutor {
  read(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#run(db, query());
  }

  write(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    return this.#run(db, query());
  }

  async writeTransaction<T>(db: AnyKysely, fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await db.transaction().execute(async (tx) => {
          await startClock(tx);
          return fn(new PlannedRunner(tx));
        });
      } catch (err) {
        if (attempt >= DEADLOCK_RETRIES || !isDeadlock(err)) throw err;
      }
    }
  }

  async #run(db: AnyKysely, query: CompiledQuery<Row>): Promise<QueryResult<Row>> {
    const planned = planStatement(outsideTransaction(query.sql));
    if (planned.steps.length === 1) return runPlanned(db, planned, query.parameters);
    return this.writeTransaction(db, (tx) => tx.executeQuery(query));
  }
}

/** A transaction's runner that plans each statement (the core's and the caller's alike). */
export class PlannedRunner implements QueryRunner {
  constructor(private readonly tx: QueryRunner) {}

  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> {
    return runPlanned(this.tx, planStatement(query.sql), query.parameters) as Promise<QueryResult<R>>;
  }
}

async function runPlanned(runner: QueryRunner, planned: MySQLStatementPlan, parameters: readonly unknown[]): Promise<QueryResult<Row>> {
  let result: QueryResult<Row> | undefined;
  for (const query of queriesOf(planned, parameters)) result = await runner.executeQuery<Row>(query);
  const done = asText(result as QueryResult<Row>);
  if (!planned.dropNullRows) return done;
  return { ...done, rows: done.rows.filter((row) => Object.values(row)[0] !== null) };
}

/** The result with `Buffer` values (binary columns) as UTF-8 strings. */
function asText(result: QueryResult<Row>): QueryResult<Row> {
  for (const row of result.rows) {
    for (const key in row) {
      const value = row[key];
      if (value instanceof Uint8Array) row[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("utf8");
    }
  }
  return result;
}

function isDeadlock(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { errno?: unknown }).errno === ER_LOCK_DEADLOCK;
}
