import type { AnyKysely, QueryRunner, QueryThunk, Row, TransactionHead } from "@cairnq/store-kysely";
import { BaseStoreExecutor } from "@cairnq/store-kysely";
import { CompiledQuery } from "kysely";
import type { QueryResult } from "kysely";
import type { MySQLStatementPlan, PlannedStatement } from "./mysql-statement-plan.js";
import { bindStep, choosePlan, listReader, planStatement, planStatementWithoutRows, queriesOf } from "./mysql-statement-plan.js";

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
 * A write transaction or autocommit statement the server aborts as a
 * deadlock victim (error 1213) runs again, up to {@link DEADLOCK_RETRIES}
 * times: Postgres would have made one of the two wait instead, and the
 * core's transaction bodies are re-runnable (ids and encodings are computed
 * before them). Seen in the real-process drain (3 workers × 8 slots, 3,000
 * tasks): about one settlement in 3,000 was a victim, and without the retry
 * its task waited for its lease to expire and ran again.
 */
export class MySQLExecutor extends BaseStoreExecutor {
  /**
   * @param multipleStatements - The pool's connections accept several statements in one query
   *   (`multipleStatements`, set on a pool the store builds): a plan's statements, and a transaction's
   *   clock reset with its first statement, then take one round trip instead of one each.
   */
  constructor(private readonly multipleStatements = false) {
    super();
  }

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
          if (this.multipleStatements) return fn(new PlannedRunner(tx, true, true));
          await startClock(tx);
          return fn(new PlannedRunner(tx));
        });
      } catch (err) {
        if (attempt >= DEADLOCK_RETRIES || !isDeadlock(err)) throw err;
      }
    }
  }

  /**
   * The claim cycle's transaction: with multiple statements, `START TRANSACTION`, the clock reset, the
   * head's statements (each its plan) and, when the head is the whole transaction, `COMMIT` — one
   * round trip where the default sends each on its own; then `fn` on the same connection.
   */
  override async writeTransactionWith<T>(
    db: AnyKysely,
    head: () => TransactionHead,
    fn: (tx: QueryRunner | null, results: readonly QueryResult<Row>[]) => Promise<T>,
  ): Promise<T> {
    if (!this.multipleStatements) return super.writeTransactionWith(db, head, fn);
    for (let attempt = 0; ; attempt++) {
      try {
        return await db.connection().execute((conn) => this.#headed(conn, head(), fn));
      } catch (err) {
        if (attempt >= DEADLOCK_RETRIES || !isDeadlock(err)) throw err;
      }
    }
  }

  async #headed<T>(conn: AnyKysely, current: TransactionHead, fn: (tx: QueryRunner | null, results: readonly QueryResult<Row>[]) => Promise<T>): Promise<T> {
    const queries = [current.first, ...current.statements];
    const steps: PlannedStatement[] = [{ sql: "START TRANSACTION", params: [] }, { sql: START_CLOCK.sql, params: [] }];
    const parameters: unknown[] = [];
    const ends: { planned: MySQLStatementPlan; last: PlannedStatement }[] = [];
    let gated: string | null = null;
    for (const [at, query] of queries.entries()) {
      // The head's first statement (lease recovery): nobody reads its rows, so none are collected or read back.
      const planned = choosePlan(at === 0 ? planStatementWithoutRows(query.sql) : planStatement(query.sql), query.parameters);
      for (const step of planned.steps) {
        steps.push({ ...step, sql: gated === null ? step.sql : reprobeAfterGate(step.sql, gated), params: step.params.map((i) => parameters.length + i) });
        gated ??= gateRead(step);
      }
      parameters.push(...query.parameters);
      ends.push({ planned, last: steps[steps.length - 1] as PlannedStatement });
    }
    if (current.last) steps.push({ sql: "COMMIT", params: [] });
    const sent = foldResets(steps);
    let results: QueryResult<Row>[];
    try {
      const all = await conn.executeQuery<Row>(joined(sent, parameters));
      results = ends.slice(1).map(({ planned, last }) => finish(planned, pick(all, sent.indexOf(last))));
      if (current.last) return await fn(null, results);
      const runner = new PlannedRunner(conn, true, false, true);
      const value = await fn(runner, results);
      // The body's last batch carried the commit already (batchLast).
      if (!runner.committed) await conn.executeQuery(CompiledQuery.raw("COMMIT"));
      return value;
    } catch (err) {
      await conn.executeQuery(CompiledQuery.raw("ROLLBACK")).catch(() => {});
      throw err;
    }
  }

  /**
   * With multiple statements, `queries` (each its plan) in one round trip on the claim cycle's
   * transaction: the server runs them in order and stops at the first error, whose error the query
   * answers. The group draw's writes after its draw are one batch.
   */
  override batch(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]> {
    if (!(tx instanceof PlannedRunner) || !tx.multipleStatements) return super.batch(tx, queries);
    return tx.executeAll(queries, false);
  }

  /**
   * {@link MySQLExecutor.batch} with `COMMIT` after the queries, on a transaction this executor
   * commits itself ({@link MySQLExecutor.writeTransactionWith}'s): it then sends no `COMMIT` after
   * the body. Elsewhere a plain batch.
   */
  override batchLast(tx: QueryRunner, queries: readonly CompiledQuery<Row>[]): Promise<QueryResult<Row>[]> {
    if (!(tx instanceof PlannedRunner) || !tx.multipleStatements || !tx.commitsItself) return super.batchLast(tx, queries);
    return tx.executeAll(queries, true);
  }

  /** One statement outside a transaction; a deadlock victim (rolled back, so without effect) runs again. */
  async #run(db: AnyKysely, query: CompiledQuery<Row>): Promise<QueryResult<Row>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#runOnce(db, query);
      } catch (err) {
        if (attempt >= DEADLOCK_RETRIES || !isDeadlock(err)) throw err;
      }
    }
  }

  async #runOnce(db: AnyKysely, query: CompiledQuery<Row>): Promise<QueryResult<Row>> {
    const planned = choosePlan(planStatement(outsideTransaction(query.sql)), query.parameters);
    if (planned.steps.length === 1) return runPlanned(db, planned, query.parameters);
    if (!this.multipleStatements) return this.writeTransaction(db, (tx) => tx.executeQuery(query));
    // One round trip on one connection (the plan's steps share its session variables), without a transaction where the plan needs none.
    if (!planned.transactional) return db.connection().execute(async (conn) => finish(planned, pick(await conn.executeQuery<Row>(joined(planned.steps, query.parameters)), planned.steps.length - 1)));
    // One round trip: the plan between START TRANSACTION and COMMIT; a failure rolls back on the same connection.
    return db.connection().execute(async (conn) => {
      const steps = [{ sql: "START TRANSACTION", params: [] }, ...planned.steps, { sql: "COMMIT", params: [] }];
      try {
        return finish(planned, pick(await conn.executeQuery<Row>(joined(steps, query.parameters)), planned.steps.length));
      } catch (err) {
        await conn.executeQuery(CompiledQuery.raw("ROLLBACK")).catch(() => {});
        throw err;
      }
    });
  }
}

/** The recovery gate's read (`SELECT EXISTS (…) INTO @cq_cand`, see the statement plan's `gateUnboundedPicks`). */
const GATE = /^SELECT (EXISTS \([\s\S]*\)) INTO (@cq_cand)$/;
/** The read of a recovery gate without parameters (`EXISTS (…)`), or `null` for any other step. */
function gateRead(step: PlannedStatement): string | null {
  const gate = GATE.exec(step.sql);
  return gate === null || step.params.length > 0 ? null : (gate[1] as string);
}

/**
 * The claim's probe again (`ClaimInput.reprobe`: `SELECT EXISTS (<claimable>) OR EXISTS (<expired>) AS
 * found`, the last statement of a one-draw claim), sent after the recovery gate `read` in the same
 * transaction, with its expired-lease half read only when the gate found an expired lease: `… OR
 * (@cq_cand AND EXISTS (<expired>)) AS found`; the server skips the subquery when `@cq_cand` is 0
 * (one index read instead of two, `Handler_read_key`). The half is the gate's read, text for text,
 * and this transaction's recovery recovered what that read found: with none found, the probe again
 * answers as the gate read the leases, at the transaction's first statement, as the recovery did — a
 * lease expiring within the claim is found by the worker's next wake-up check or claim, as the
 * recovery leaves it to the next claim. The probe again of a one-row claim with nothing expired, in
 * the claim's transaction after its draw: 322 µs of server time before, 268 gated (MariaDB 10.11,
 * `SHOW PROFILES`, 300 alternated claims each, medians, on a loaded machine). Any other text is
 * returned as it is.
 */
export function reprobeAfterGate(sql: string, read: string): string {
  const tail = ` OR ${read} AS found`;
  if (!sql.startsWith("SELECT EXISTS (") || !sql.endsWith(tail)) return sql;
  return `${sql.slice(0, -tail.length)} OR (@cq_cand AND ${read}) AS found`;
}

/** A session variable's reset that a plan or the head sends as a statement of its own. */
const RESET = /^SET (@cq_\w+) = (NULL|''|_utf8mb4'' COLLATE utf8mb4_bin)$/;

/**
 * `steps` with the session-variable resets next to the recovery gate made part of its read: the
 * clock's reset just before it and the first `@cq_ids` reset after it (when no step between reads
 * `@cq_ids`) become values it selects `INTO` too — `SELECT NULL, EXISTS (…), _utf8mb4'' COLLATE utf8mb4_bin INTO @cq_tx_now,
 * @cq_cand, @cq_ids`. MariaDB answers every statement of a multi-statement query with a network
 * write of its own, and the claim head sent nine; a one-row claim as seven cost mysqld 917 / 1,050
 * µs of CPU per claim where nine cost 1,083 / 1,083 (two runs of 600 alternated claims, /proc).
 * Only a gate that does not read the variables it is given is folded; other steps are kept as
 * they are (the same objects, so a caller can find them again).
 */
export function foldResets(steps: readonly PlannedStatement[]): PlannedStatement[] {
  const at = steps.findIndex((step) => GATE.test(step.sql));
  const gate = steps[at];
  if (gate === undefined) return [...steps];
  const [, read, into] = GATE.exec(gate.sql) as RegExpExecArray;
  const values: string[] = [];
  const targets: string[] = [];
  const dropped = new Set<number>();
  const before = RESET.exec(steps[at - 1]?.sql ?? "");
  if (before !== null && !gate.sql.includes(before[1] as string)) {
    values.push(before[2] as string);
    targets.push(before[1] as string);
    dropped.add(at - 1);
  }
  values.push(read as string);
  targets.push(into as string);
  for (let i = at + 1; i < steps.length - 1; i++) {
    const sql = (steps[i] as PlannedStatement).sql;
    const reset = RESET.exec(sql);
    if (reset !== null && reset[1] === "@cq_ids" && !gate.sql.includes("@cq_ids")) {
      values.push(reset[2] as string);
      targets.push(reset[1]);
      dropped.add(i);
      break;
    }
    if (sql.includes("@cq_ids")) break;
  }
  if (dropped.size === 0) return [...steps];
  const folded = { ...gate, sql: `SELECT ${values.join(", ")} INTO ${targets.join(", ")}` };
  return steps.flatMap((step, i) => (dropped.has(i) ? [] : i === at ? [folded] : [step]));
}

/** A transaction's runner that plans each statement (the core's and the caller's alike). */
export class PlannedRunner implements QueryRunner {
  /**
   * @param tx - The open transaction.
   * @param multipleStatements - Send a plan's statements as one query.
   * @param resetClock - The transaction clock still needs clearing: sent with the first statement.
   */
  /** `COMMIT` went with a batch ({@link PlannedRunner.executeAll}): nothing is left to commit. */
  committed = false;

  /**
   * @param commitsItself - The executor commits this transaction with its own `COMMIT` (not Kysely's),
   *   which a last batch may carry instead.
   */
  constructor(
    private readonly tx: QueryRunner,
    readonly multipleStatements = false,
    private resetClock = false,
    readonly commitsItself = false,
  ) {}

  /** `queries` (each its plan), then `COMMIT` when `commit`, as one multi-statement query; each query's result. */
  async executeAll(queries: readonly CompiledQuery<Row>[], commit: boolean): Promise<QueryResult<Row>[]> {
    const steps: PlannedStatement[] = this.resetClock ? [{ sql: START_CLOCK.sql, params: [] }] : [];
    const parameters: unknown[] = [];
    const ends: { planned: MySQLStatementPlan; index: number }[] = [];
    for (const query of queries) {
      const planned = choosePlan(planStatement(query.sql), query.parameters);
      for (const step of planned.steps) steps.push({ ...step, params: step.params.map((i) => parameters.length + i) });
      parameters.push(...query.parameters);
      ends.push({ planned, index: steps.length - 1 });
    }
    if (commit) steps.push({ sql: "COMMIT", params: [] });
    if (steps.length < 2) {
      const results: QueryResult<Row>[] = [];
      for (const query of queries) results.push(await this.executeQuery(query));
      return results;
    }
    this.resetClock = false;
    const all = await this.tx.executeQuery<Row>(joined(steps, parameters));
    if (commit) this.committed = true;
    return ends.map(({ planned, index }) => finish(planned, pick(all, index)));
  }

  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> {
    const planned = choosePlan(planStatement(query.sql), query.parameters);
    if (!this.multipleStatements) return runPlanned(this.tx, planned, query.parameters) as Promise<QueryResult<R>>;
    const steps = this.resetClock ? [{ sql: START_CLOCK.sql, params: [] }, ...planned.steps] : planned.steps;
    const index = steps.length - 1;
    this.resetClock = false;
    if (steps.length === 1) return runPlanned(this.tx, planned, query.parameters) as Promise<QueryResult<R>>;
    return this.tx.executeQuery<Row>(joined(steps, query.parameters)).then((result) => finish(planned, pick(result, index))) as Promise<QueryResult<R>>;
  }
}

async function runPlanned(runner: QueryRunner, planned: MySQLStatementPlan, parameters: readonly unknown[]): Promise<QueryResult<Row>> {
  let result: QueryResult<Row> | undefined;
  for (const query of queriesOf(planned, parameters)) result = await runner.executeQuery<Row>(query);
  return finish(planned, result as QueryResult<Row>);
}

function finish(planned: MySQLStatementPlan, result: QueryResult<Row>): QueryResult<Row> {
  const done = asText(result);
  if (planned.capturedColumns !== undefined) return { ...done, rows: capturedRows(planned.capturedColumns, done.rows[0]?.cq_rows) };
  if (!planned.dropNullRows) return done;
  return { ...done, rows: done.rows.filter((row) => Object.values(row)[0] !== null) };
}

/** The rows a captured returning update recorded (`MySQLStatementPlan.capturedColumns`): a JSON array of value arrays. */
function capturedRows(columns: readonly string[], captured: unknown): Row[] {
  const rows = typeof captured === "string" ? (JSON.parse(captured) as unknown[][]) : [];
  return rows.map((values) => Object.fromEntries(columns.map((column, i) => [column, values[i] ?? null])));
}

/** `steps` as one multi-statement query, with the core statement's `parameters` in placeholder order. */
function joined(steps: readonly PlannedStatement[], parameters: readonly unknown[]): CompiledQuery<Row> {
  const readList = listReader();
  const bound = steps.map((step) => bindStep(step, parameters, readList));
  return CompiledQuery.raw(
    bound.map((step) => step.sql).join(";\n"),
    bound.flatMap((step) => step.values),
  );
}

/**
 * The result of statement `index` of a multi-statement query: the driver answers one result per
 * statement (rows, or an OK packet with the affected-row count), which Kysely hands back as `rows`.
 */
function pick(result: QueryResult<Row>, index: number): QueryResult<Row> {
  const each = result.rows as unknown[];
  const one = each[index];
  if (Array.isArray(one)) return { rows: one as Row[] };
  const affected = (one as { affectedRows?: unknown } | undefined)?.affectedRows;
  return { rows: [], ...(typeof affected === "number" ? { numAffectedRows: BigInt(affected) } : {}) };
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
