/**
 * A step's record (durable steps, `steps-journal.ts`) as a batchable write,
 * so the dialect's write batching treats it as it treats settlements:
 * concurrent records of different tasks share one multi-row statement on
 * Postgres, and one merged run inside SQLite's group commit. Each row is
 * still fenced on its own (the task row's ownership and attempt, read in the
 * statement that writes), so a caller whose task is not among the returned
 * rows lost its lease, exactly as its own statement would have said.
 */
import { LostLease } from "@cairnq/protocol";
import type { Params } from "@cairnq/protocol/adapter";
import type { QueryResult } from "kysely";
import type { StatementCompiler, StatementTemplate } from "./compiler.js";
import { BATCH_ROWS } from "./compiler.js";
import type { Row, SyncRunner } from "./executor.js";
import type { BatchableWrite, MergedOutcome, PlannedWrite, WriteLatency } from "./write-batching.js";
import { paramBytes } from "./write-batching.js";

/** See the module comment. */
export class BatchableStepRecord implements BatchableWrite<Params, void> {
  readonly name = "recordStep";
  /** A record is on the handler's path, as a settlement is. */
  readonly latency: WriteLatency = "settlement";

  /**
   * @param compiler - The store's statement compiler.
   * @param single - The one-row fenced `INSERT … SELECT … RETURNING task_id, name`.
   * @param multi - The same over the bound rows (`perRow`), one row per task.
   */
  constructor(
    private readonly compiler: StatementCompiler,
    private readonly single: StatementTemplate,
    private readonly multi: StatementTemplate,
  ) {}

  key(params: Params): string {
    return String(params.taskId);
  }

  bytes(params: Params): number {
    return paramBytes(params);
  }

  one(params: Params): PlannedWrite<void> {
    const taskId = String(params.taskId);
    return {
      query: this.compiler.statement(this.single, params).query(params),
      answer: (result: QueryResult<Row>) => {
        if (result.rows.length === 0) throw new LostLease(taskId);
      },
    };
  }

  many(items: readonly Params[]): PlannedWrite<MergedOutcome<void>[]> {
    const rows = { [BATCH_ROWS]: items };
    return {
      query: this.compiler.statement(this.multi, rows).query(rows),
      answer: (result) => {
        const written = new Set(result.rows.map((row) => String(row.task_id)));
        return items.map((params) => outcome(written.has(String(params.taskId)), String(params.taskId)));
      },
    };
  }

  /** Each record's own fenced statement, under the write lock SQLite's group commit holds. */
  manyLocked(run: SyncRunner, items: readonly Params[]): MergedOutcome<void>[] {
    return items.map((params) => outcome(run(this.compiler.statement(this.single, params).query(params)).rows.length > 0, String(params.taskId)));
  }
}

function outcome(written: boolean, taskId: string): MergedOutcome<void> {
  return written ? { ok: true, value: undefined } : { ok: false, error: new LostLease(taskId) };
}
