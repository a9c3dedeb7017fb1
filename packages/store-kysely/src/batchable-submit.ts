import type { Task } from "@cairnq/protocol";
import type { Params } from "@cairnq/protocol/adapter";
import { buildInsert, SUBMIT } from "@cairnq/protocol/adapter";
import type { CompiledQuery, QueryResult } from "kysely";
import type { CompiledStatement, StatementCompiler } from "./compiler.js";
import { BATCH_ROWS } from "./compiler.js";
import type { Row, SyncRunner } from "./executor.js";
import { decodeTask, rowsById } from "./rows.js";
import { batchInsertTemplate, insertTemplate } from "./statements.js";
import type { BatchableWrite, MergedOutcome, PlannedWrite, WriteLatency } from "./write-batching.js";
import { paramBytes } from "./write-batching.js";

/** SUBMIT for a database clock: returns only the columns the database computed (see {@link BatchableSubmit.one}). */
const SUBMIT_COMPUTED_TEMPLATE = insertTemplate(SUBMIT, "computed");
const SUBMIT_PLAIN_TEMPLATE = insertTemplate(SUBMIT, false);
const SUBMIT_BATCH_TEMPLATE = batchInsertTemplate(SUBMIT);
const SUBMIT_BATCH_PLAIN_TEMPLATE = batchInsertTemplate(SUBMIT, false);

/**
 * The SUBMIT insert (T1, §5.1) as a batchable write: the unkeyed submit's
 * writes, and the insert inside a keyed submit's transaction ({@link BatchableSubmit.one}).
 *
 * The row each caller gets is the row the database holds. With the process
 * clock, `now` is one bound parameter, so every column of the new row is
 * known before the insert runs and the insert skips `RETURNING` (≈ 3× the
 * cost of a plain insert on SQLite): the row is the protocol's
 * `buildInsert(SUBMIT, params, now)` over the very parameters and `now` the
 * statement bound. With a database clock (Postgres) the columns only the
 * database knows come back from `RETURNING`.
 */
export class BatchableSubmit implements BatchableWrite<Params, Task> {
  readonly name = "submit";
  readonly latency: WriteLatency = "interactive";
  readonly #compiler: StatementCompiler;
  /** Whether SUBMIT's `now` is the process clock, bound as one parameter. */
  readonly #processClock: boolean;

  /** @param compiler - The store's compiled-statement cache. */
  constructor(compiler: StatementCompiler) {
    this.#compiler = compiler;
    this.#processClock = compiler.clock.nowSql(SUBMIT.clock) === null;
  }

  key(params: Params): string {
    return String(params.taskId);
  }

  bytes(params: Params): number {
    return paramBytes(params);
  }

  /** The single-row insert; on the process clock it reads `now` here, so call it when the statement runs. */
  one(params: Params): PlannedWrite<Task> {
    if (!this.#processClock) return new ComputedInsert(this.#compiler.statement(SUBMIT_COMPUTED_TEMPLATE, params), params);
    const nowMs = this.#compiler.clock.nowMs();
    return { query: this.#compiler.statement(SUBMIT_PLAIN_TEMPLATE, params).query(params, nowMs), answer: () => inserted(params, nowMs) };
  }

  /** One multi-row insert (rows with distinct ids); each caller gets the row with its id. */
  many(items: readonly Params[]): PlannedWrite<MergedOutcome<Task>[]> {
    const rows = { [BATCH_ROWS]: items };
    if (this.#processClock) {
      const nowMs = this.#compiler.clock.nowMs();
      return { query: this.#compiler.statement(SUBMIT_BATCH_PLAIN_TEMPLATE, rows).query(rows, nowMs), answer: () => items.map((params) => ({ ok: true, value: inserted(params, nowMs) })) };
    }
    return {
      query: this.#compiler.statement(SUBMIT_BATCH_TEMPLATE, rows).query(rows),
      answer: (result) => {
        const byId = rowsById(result.rows);
        return items.map((params): MergedOutcome<Task> => {
          const row = byId.get(String(params.taskId));
          if (row === undefined) return { ok: false, error: new Error("the multi-row insert returned no row for this task although RETURNING guarantees one") };
          return { ok: true, value: decodeTask(row) };
        });
      },
    };
  }

  /**
   * {@link BatchableSubmit.many} run synchronously: ONE multi-row insert. It either inserts every row or
   * fails whole, so a bad row fails the run and, written alone again, only its own caller.
   */
  manyLocked(run: SyncRunner, items: readonly Params[]): MergedOutcome<Task>[] {
    const plan = this.many(items);
    return plan.answer(run(plan.query));
  }
}

/** SUBMIT on a database clock, answering with its `RETURNING` of the computed columns. */
class ComputedInsert implements PlannedWrite<Task> {
  readonly query: CompiledQuery<Row>;

  constructor(
    statement: CompiledStatement,
    private readonly params: Params,
  ) {
    this.query = statement.query(params);
  }

  /**
   * The columns only the database knows (the clock's, the stored JSON), as its `RETURNING` gave them,
   * laid over `buildInsert` of the same parameters, which gives every other column exactly as stored —
   * so the task is the row a later `get()` reads.
   */
  answer(result: QueryResult<Row>): Task {
    const row = result.rows[0];
    if (row === undefined) throw new Error("the statement returned no row although RETURNING guarantees one; is the driver dropping RETURNING rows?");
    return decodeTask({ ...(buildInsert(SUBMIT, this.params, 0) as unknown as Row), ...row });
  }
}

/** The row SUBMIT inserted with `nowMs`, decoded exactly as the same row read back from the database. */
function inserted(params: Params, nowMs: number): Task {
  return decodeTask(buildInsert(SUBMIT, params, nowMs) as unknown as Row);
}
