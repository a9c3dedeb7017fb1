import type { CompiledQuery, QueryResult } from "kysely";
import type { AnyKysely, Row, StoreExecutor } from "./executor.js";
import type { BatchableWrite, BatchedWriter, MergedOutcome, PlannedWrite, TakenWrites, WriteBatching } from "./write-batching.js";
import { writeAlone } from "./write-batching.js";
import type { CombinedWrite, FlushAt, WriteCombinerOptions } from "./write-combiner.js";
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
  /**
   * A claim cycle's transaction carries the settlements waiting in this batching
   * ({@link CombiningWrites.takeSettlements}): their statements run in the claim's transaction,
   * before its draws, and commit with it — one commit and one round trip where they would have
   * cost their own. Settlements then flush on their own at the end of the event-loop turn rather
   * than the tick, so the claim a worker starts in the same turn carries them. For a server where
   * every commit waits for a flush to disk (MySQL/MariaDB).
   * @default false
   */
  settleWithClaims?: boolean;
  /**
   * With {@link CombiningWritesOptions.settleWithClaims}: up to this many writes of one settlement kind
   * taken by a claim go in its transaction as their own statements (`kind.one` each), more as the
   * multi-row statement. For a server where a multi-row statement has a fixed cost that a few single-row
   * ones undercut (MySQL/MariaDB: see its dialect).
   * @default 1
   */
  settleAloneUpTo?: number;
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
 *   promise chain of one burst shares it (at the end of the turn with
 *   `settleWithClaims`, so the claim started in the same turn carries it);
 *   a `"background"` one at the end of the event-loop turn. Writes arriving
 *   while a statement runs go together when it returns.
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
  /** The combiners of the settlement kinds, for {@link CombiningWrites.takeSettlements}. */
  readonly #settlements: SettlementCombiner[] = [];

  /**
   * With {@link CombiningWritesOptions.settleWithClaims} only (absent otherwise, so claims take the
   * plain path): the settlements waiting to be flushed (each settlement kind's next batch, no task of
   * a flush in flight), taken to run inside a claim's transaction; `null` when none waits.
   */
  readonly takeSettlements?: () => TakenWrites | null;

  /** @param options - The combiner's bounds, the split rule, and whether claims carry settlements; see {@link CombiningWritesOptions}. */
  constructor(readonly options: CombiningWritesOptions) {
    const aloneUpTo = options.settleAloneUpTo ?? 1;
    if (!Number.isInteger(aloneUpTo) || aloneUpTo < 1) throw new RangeError(`settleAloneUpTo must be a positive integer, got ${String(aloneUpTo)}`);
    if (options.settleWithClaims === true) this.takeSettlements = () => this.#takeSettlements(aloneUpTo);
  }

  writer<I, O>(db: AnyKysely, executor: StoreExecutor, kind: BatchableWrite<I, O>): BatchedWriter<I, O> {
    const combiner = new WriteCombiner<I, O>((batch) => this.#flush(db, executor, kind, batch), this.options, flushAtOf(kind, this.takeSettlements !== undefined));
    if (kind.latency === "settlement" && this.takeSettlements !== undefined) {
      this.#settlements.push({ kind, combiner } as unknown as SettlementCombiner);
    }
    if (kind.latency === "interactive") {
      // Alone (nothing of its kind pending or in flight) the write runs its own statement at once; writes
      // arriving meanwhile gather behind it and go as one multi-row statement when it returns.
      return (item) => combiner.runAlone(() => writeAlone(db, executor, kind, item)) ?? combiner.add(item, kind.key(item), kind.bytes(item));
    }
    return (item) => combiner.add(item, kind.key(item), kind.bytes(item));
  }

  /** See {@link CombiningWrites.takeSettlements}. */
  #takeSettlements(aloneUpTo: number): TakenWrites | null {
    const groups: TakenGroup[] = [];
    for (const { kind, combiner } of this.#settlements) {
      const entries = combiner.takePending();
      if (entries.length > 0) groups.push({ kind, combiner, entries: [...entries].sort(byKey) });
    }
    return groups.length === 0 ? null : new TakenSettlements(groups, aloneUpTo, (error) => this.options.splittable(error));
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

/** A settlement kind and its combiner, for {@link CombiningWrites.takeSettlements}. */
interface SettlementCombiner {
  readonly kind: BatchableWrite<unknown, unknown>;
  readonly combiner: WriteCombiner<unknown, unknown>;
}

/** One settlement kind's entries taken for a claim's transaction. */
interface TakenGroup {
  readonly kind: BatchableWrite<unknown, unknown>;
  readonly combiner: WriteCombiner<unknown, unknown>;
  readonly entries: readonly CombinedWrite<unknown, unknown>[];
}

/** One statement of {@link TakenSettlements}: the writes it carries (one for `kind.one`, more for `kind.many`). */
interface TakenPart {
  readonly kind: BatchableWrite<unknown, unknown>;
  readonly entries: readonly CombinedWrite<unknown, unknown>[];
}

/** {@link CombiningWrites.takeSettlements}' answer: per kind, each write's own statement (up to `aloneUpTo` writes) or the multi-row one. */
class TakenSettlements implements TakenWrites {
  /** The statements, in `queries()` order. */
  readonly #parts: TakenPart[] = [];
  /** The plans of the last `queries()` (a transaction replayed after a deadlock builds them again). */
  #plans: PlannedWrite<unknown>[] = [];

  constructor(
    readonly groups: readonly TakenGroup[],
    aloneUpTo: number,
    readonly splittable: (error: unknown) => boolean,
  ) {
    for (const { kind, entries } of groups) {
      if (entries.length <= aloneUpTo) for (const entry of entries) this.#parts.push({ kind, entries: [entry] });
      else this.#parts.push({ kind, entries });
    }
  }

  get count(): number {
    return this.groups.reduce((n, group) => n + group.entries.length, 0);
  }

  queries(): CompiledQuery<Row>[] {
    this.#plans = this.#parts.map(({ kind, entries }) =>
      entries.length === 1 ? kind.one((entries[0] as CombinedWrite<unknown, unknown>).item) : kind.many(entries.map((entry) => entry.item)),
    );
    return this.#plans.map((plan) => plan.query);
  }

  settle(results: readonly QueryResult<Row>[]): void {
    this.#parts.forEach(({ kind, entries }, i) => {
      const plan = this.#plans[i];
      const result = results[i];
      if (plan === undefined || result === undefined) {
        for (const entry of entries) entry.reject(new Error(`the claim carrying this ${kind.name} gave no result for it`));
        return;
      }
      if (entries.length === 1) {
        const entry = entries[0] as CombinedWrite<unknown, unknown>;
        try {
          entry.resolve(plan.answer(result));
        } catch (error) {
          entry.reject(error);
        }
        return;
      }
      let outcomes: MergedOutcome<unknown>[];
      try {
        outcomes = (plan as PlannedWrite<MergedOutcome<unknown>[]>).answer(result);
      } catch (error) {
        for (const entry of entries) entry.reject(error);
        return;
      }
      entries.forEach((entry, j) => {
        const outcome = outcomes[j];
        if (outcome === undefined) entry.reject(new Error(`the multi-row ${kind.name} statement gave no outcome for this write`));
        else if (outcome.ok) entry.resolve(outcome.value);
        else entry.reject(outcome.error);
      });
    });
  }

  fail(error: unknown): boolean {
    // Rejected whole, nothing applied: the writes go again on their own, for their own outcome. Otherwise
    // (the outcome unknown: a lost connection) each caller gets the error, as from its own statement.
    const requeued = this.splittable(error);
    for (const { combiner, entries } of this.groups) {
      if (requeued) combiner.requeue(entries);
      else for (const entry of entries) entry.reject(error);
    }
    return requeued;
  }
}

/**
 * When a kind's idle combiner flushes its first write: a settlement at the end of the tick, so every promise
 * chain of one burst shares its statement — or, where claims carry settlements, at the end of the turn, so the
 * claim a worker starts in the same turn (its claim loop's answer to the slots its handlers just freed) takes
 * them. Measured on MariaDB, a worker with concurrency 1 and a prefetch of 1 draining 1,500 tasks over 1,502
 * claims: 2,436 commits at the end of the tick (934 settlements flushed on their own, the claim after them carrying
 * the rest), 1,499 at the end of the turn (every settlement carried). Other kinds at the end of the turn.
 */
function flushAtOf(kind: BatchableWrite<unknown, unknown>, settleWithClaims: boolean): FlushAt {
  return kind.latency === "settlement" && !settleWithClaims ? "tick" : "turn";
}

function byKey<I, O>(a: CombinedWrite<I, O>, b: CombinedWrite<I, O>): number {
  const x = a.key ?? "";
  const y = b.key ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}
