import type { Task, TaskRef } from "@cairnq/protocol";
import { LostLease } from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import type { CompiledQuery, QueryResult } from "kysely";
import type { StatementCompiler, StatementTemplate } from "./compiler.js";
import { BATCH_ROWS } from "./compiler.js";
import type { Row, SyncRunner } from "./executor.js";
import { decodeTask, decodeTaskRef, rowsById } from "./rows.js";
import { batchRowTransitionRefTemplate, batchRowTransitionTemplate, GET_MANY_TEMPLATE, rowTransitionRefTemplate, rowTransitionTemplate } from "./statements.js";
import type { BatchableWrite, MergedOutcome, PlannedWrite, WriteLatency } from "./write-batching.js";
import { paramBytes } from "./write-batching.js";

/**
 * An owned write (§5.0: heartbeat, progress, succeed, complete, fail — one
 * row transition guarded by ownership and the attempt fence) as a batchable
 * write. Its answer is the row the guard let through, decoded — the whole
 * task, or `{ id, status }` for `completeRef` — or `LostLease` when the guard
 * matched no row.
 *
 * @example
 * const complete = BatchableOwnedWrite.task(compiler, COMPLETE, "settlement");
 */
export class BatchableOwnedWrite<O> implements BatchableWrite<Params, O> {
  readonly #compiler: StatementCompiler;
  readonly #single: StatementTemplate;
  readonly #multi: StatementTemplate;
  readonly #plain: StatementTemplate;
  readonly #decode: (row: Row) => O;

  private constructor(
    readonly name: string,
    readonly latency: WriteLatency,
    compiler: StatementCompiler,
    rule: RowTransition,
    ref: boolean,
    decode: (row: Row) => O,
  ) {
    this.#compiler = compiler;
    this.#single = ref ? rowTransitionRefTemplate(rule) : rowTransitionTemplate(rule);
    this.#multi = ref ? batchRowTransitionRefTemplate(rule) : batchRowTransitionTemplate(rule);
    this.#plain = rowTransitionTemplate(rule, false);
    this.#decode = decode;
  }

  /** `rule` answering the whole row. */
  static task(compiler: StatementCompiler, rule: RowTransition, latency: WriteLatency): BatchableOwnedWrite<Task> {
    return new BatchableOwnedWrite(rule.op, latency, compiler, rule, false, decodeTask);
  }

  /** `rule` answering only `{ id, status }`: the same statement, guard and branches, `RETURNING id, status`. */
  static ref(compiler: StatementCompiler, rule: RowTransition, latency: WriteLatency): BatchableOwnedWrite<TaskRef> {
    return new BatchableOwnedWrite(`${rule.op}Ref`, latency, compiler, rule, true, decodeTaskRef);
  }

  key(params: Params): string {
    return String(params.taskId);
  }

  bytes(params: Params): number {
    return paramBytes(params);
  }

  /** The single-row `UPDATE … WHERE <guard> RETURNING …`. */
  one(params: Params): PlannedWrite<O> {
    return new OwnedPlan(this.#compiler.statement(this.#single, params).query(params), String(params.taskId), this.#decode);
  }

  /**
   * The rule's multi-row statement: each row passes its own guard; a caller whose id is not among
   * the returned rows lost its lease (or attempt), exactly as its own statement would have said.
   */
  many(items: readonly Params[]): PlannedWrite<MergedOutcome<O>[]> {
    const rows = { [BATCH_ROWS]: items };
    return {
      query: this.#compiler.statement(this.#multi, rows).query(rows),
      answer: (result) => {
        const byId = rowsById(result.rows);
        return items.map((params) => this.#outcome(byId, String(params.taskId)));
      },
    };
  }

  /**
   * Each row's own `UPDATE` without `RETURNING` (its own guard, the attempt fence, on its own
   * current values; zero rows changed → `LostLease`), then ONE read of the changed rows by id in the
   * same transaction, under the write lock — the rows `RETURNING` would have given, for less than
   * SQLite's `RETURNING` costs per statement. Distinct ids only: items holding one task twice throw
   * before anything runs, and each is then written on its own.
   */
  manyLocked(run: SyncRunner, items: readonly Params[]): MergedOutcome<O>[] {
    const ids = items.map((params) => String(params.taskId));
    if (new Set(ids).size !== ids.length) throw new Error("a merged owned write holds one task twice");
    const changed: string[] = [];
    for (const params of items) {
      const { numAffectedRows } = run(this.#compiler.statement(this.#plain, params).query(params));
      if (numAffectedRows !== undefined && numAffectedRows > 0n) changed.push(String(params.taskId));
    }
    const read = { taskIds: changed };
    const byId = changed.length === 0 ? new Map<string, Row>() : rowsById(run(this.#compiler.statement(GET_MANY_TEMPLATE, read).query(read)).rows);
    if (byId.size !== changed.length) throw new Error("a merged owned write could not read back every row it changed");
    return ids.map((taskId) => this.#outcome(byId, taskId));
  }

  #outcome(byId: ReadonlyMap<string, Row>, taskId: string): MergedOutcome<O> {
    const row = byId.get(taskId);
    return row === undefined ? { ok: false, error: new LostLease(taskId) } : { ok: true, value: this.#decode(row) };
  }
}

/** One owned write's statement, answering the row its guard let through, or `LostLease`. */
class OwnedPlan<O> implements PlannedWrite<O> {
  constructor(
    readonly query: CompiledQuery<Row>,
    private readonly taskId: string,
    private readonly decode: (row: Row) => O,
  ) {}

  answer(result: QueryResult<Row>): O {
    return ownedRow(result.rows[0], this.taskId, this.decode);
  }
}

/**
 * An owned write's answer: the row its guard let through, decoded, or `LostLease` when the guard
 * matched no row (§5.0).
 *
 * @example
 * const task = ownedRow((await tx.executeQuery(query)).rows[0], taskId, decodeTask);
 */
export function ownedRow<O>(row: Row | undefined, taskId: string, decode: (row: Row) => O): O {
  if (row === undefined) throw new LostLease(taskId);
  return decode(row);
}
