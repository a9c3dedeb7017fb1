import type { QueryResult } from "kysely";
import type { AnyKysely, Row, StoreExecutor } from "./executor.js";
import type { BatchableWrite, BatchedWriter, MergedOutcome, PlannedWrite, WriteBatching } from "./write-batching.js";
import { writeAlone } from "./write-batching.js";
import type { CombinedWrite, WriteCombinerOptions } from "./write-combiner.js";
import { WriteCombiner } from "./write-combiner.js";

/** Options of {@link CombiningWrites}: the combiner's bounds, and which statement errors may be split. */
export interface CombiningWritesOptions extends WriteCombinerOptions {
  /**
   * True when `error`, thrown by a multi-row statement, means the database
   * rejected the statement and applied none of it (a data error in one row,
   * a deadlock): its rows are then re-sent in halves until each caller has
   * the outcome its own statement would have had. Anything else — above all
   * a connection lost with the outcome unknown — fails every caller of the
   * statement with that error, exactly as their own statements would have,
   * and nothing is re-sent.
   */
  splittable(error: unknown): boolean;
}

/**
 * Write combining, for a pooled server where every autocommit statement is a
 * round trip and a commit (Postgres): concurrent writes of one kind and one
 * store are gathered by a {@link WriteCombiner} into ONE multi-row statement
 * (`kind.many`, over the syntax's `batchSource`), group-commit style.
 *
 * - A lone write of an `"interactive"` kind runs its own statement at once
 *   when nothing of its kind is pending or in flight (`runAlone`); one of a
 *   `"settlement"` kind flushes at the end of the current tick, so every
 *   promise chain of one burst shares it; a `"background"` one at the end of
 *   the event-loop turn. Writes arriving while a statement runs go together
 *   when it returns.
 * - A flush of one write runs `kind.one`, exactly its own statement. More
 *   run as `kind.many`, rows sorted by key (so two statements lock shared rows
 *   in one order); each caller gets its own row or its own error.
 * - A multi-row statement the database rejected whole (`splittable`) is
 *   re-sent in halves, down to single rows, which get exactly their own
 *   statement's outcome; any other error fails that statement's callers and
 *   nothing is re-sent.
 *
 * @example
 * class MyServerDialect extends BaseStoreDialect {
 *   override readonly writes = new CombiningWrites({ maxRows: 128, splittable: (error) => /^(22|23|40)/.test(String((error as { code?: unknown }).code)) });
 * }
 */
export class CombiningWrites implements WriteBatching {
  /** @param options - The combiner's bounds and the split rule; see {@link CombiningWritesOptions}. */
  constructor(readonly options: CombiningWritesOptions) {}

  writer<I, O>(db: AnyKysely, executor: StoreExecutor, kind: BatchableWrite<I, O>): BatchedWriter<I, O> {
    const combiner = new WriteCombiner<I, O>((batch) => this.#flush(db, executor, kind, batch), this.options, kind.latency === "settlement" ? "tick" : "turn");
    if (kind.latency === "interactive") {
      // Alone (nothing of its kind pending or in flight) the write runs its own statement at once; writes
      // arriving meanwhile gather behind it and go as one multi-row statement when it returns.
      return (item) => combiner.runAlone(() => writeAlone(db, executor, kind, item)) ?? combiner.add(item, kind.key(item), kind.bytes(item));
    }
    return (item) => combiner.add(item, kind.key(item), kind.bytes(item));
  }

  /** One flush (distinct keys): see the class comment. Settles every entry. */
  async #flush<I, O>(db: AnyKysely, executor: StoreExecutor, kind: BatchableWrite<I, O>, batch: readonly CombinedWrite<I, O>[]): Promise<void> {
    if (batch.length === 1) {
      const entry = batch[0] as CombinedWrite<I, O>;
      await writeAlone(db, executor, kind, entry.item).then(
        (value) => entry.resolve(value),
        (error: unknown) => entry.reject(error),
      );
      return;
    }
    const sorted = [...batch].sort(byKey);
    let plan: PlannedWrite<MergedOutcome<O>[]> | null = null;
    let result: QueryResult<Row>;
    try {
      result = await executor.write(db, () => (plan = kind.many(sorted.map((entry) => entry.item))).query);
    } catch (error) {
      await this.#splitOrFail(sorted, error, (half) => this.#flush(db, executor, kind, half));
      return;
    }
    // Assigned inside the thunk, which TypeScript cannot see run.
    const planned = plan as PlannedWrite<MergedOutcome<O>[]> | null;
    if (planned === null) throw new Error("the executor's write settled without building its statement");
    const outcomes = planned.answer(result);
    sorted.forEach((entry, i) => {
      const outcome = outcomes[i];
      if (outcome === undefined) entry.reject(new Error(`the multi-row ${kind.name} statement gave no outcome for this write`));
      else if (outcome.ok) entry.resolve(outcome.value);
      else entry.reject(outcome.error);
    });
  }

  /**
   * After a multi-row statement failed: when the database rejected it whole ({@link CombiningWritesOptions.splittable}),
   * re-send the rows in two halves; otherwise every caller gets the error.
   */
  async #splitOrFail<I, O>(batch: readonly CombinedWrite<I, O>[], error: unknown, flush: (half: readonly CombinedWrite<I, O>[]) => Promise<void>): Promise<void> {
    if (!this.options.splittable(error)) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    const middle = Math.ceil(batch.length / 2);
    await flush(batch.slice(0, middle));
    await flush(batch.slice(middle));
  }
}

function byKey<I, O>(a: CombinedWrite<I, O>, b: CombinedWrite<I, O>): number {
  const x = a.key ?? "";
  const y = b.key ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}
