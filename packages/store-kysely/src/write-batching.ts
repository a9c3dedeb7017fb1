/**
 * Write batching: how concurrent single-row writes of one kind (unkeyed
 * submits, each owned-write rule, `completeRef`) reach the database — each as
 * its own statement, or several sharing one statement or one transaction.
 * The store core describes each kind of write once ({@link BatchableWrite});
 * the dialect's {@link WriteBatching} decides how to send it, so the core
 * never asks which backend it runs on.
 *
 * Terminology:
 * - **kind**: one operation whose writes may be batched, with every form it
 *   can be written in: alone (`one`), as one multi-row statement (`many`),
 *   or as several statements under a write lock (`manyLocked`);
 * - **plan**: a statement built when it runs, with how to read the caller's
 *   outcome from its result ({@link PlannedWrite});
 * - **writer**: what the batching builds once per kind and the core calls for
 *   every write; it settles after the write committed, with the caller's own
 *   outcome — its row, or its own error (`LostLease` for its own task).
 *
 * Three batchings exist: {@link SingleWrites} (the default: every write its
 * own statement), `CombiningWrites` (concurrent writes gathered into
 * multi-row statements across an event-loop tick or turn — Postgres), and
 * `@cairnq/store-sqlite`'s group-commit merging (adjacent writes of one kind
 * inside the write queue's group commit).
 */
import type { Params } from "@cairnq/protocol/adapter";
import type { CompiledQuery, QueryResult } from "kysely";
import type { AnyKysely, Row, StoreExecutor, SyncRunner } from "./executor.js";

/** One caller's outcome inside a batch: its value, or its own error (e.g. `LostLease`). */
export type MergedOutcome<O> = { readonly ok: true; readonly value: O } | { readonly ok: false; readonly error: unknown };

/** A statement to run, and how the caller's outcome is read from its result. */
export interface PlannedWrite<O> {
  readonly query: CompiledQuery<Row>;
  /** The caller's outcome from the statement's result; throws the caller's error (e.g. `LostLease`). */
  answer(result: QueryResult<Row>): O;
}

/**
 * Who waits for a write of a kind, for a batching that delays writes to gather them:
 * - `"interactive"`: the caller waits for it (a submit inside an API request);
 * - `"settlement"`: it ends an attempt, on the latency path of `call()`;
 * - `"background"`: nobody waits on its latency (heartbeats, progress reports).
 */
export type WriteLatency = "interactive" | "settlement" | "background";

/**
 * One kind of write the store core hands to its dialect's {@link WriteBatching}, in every form it
 * can be written. Built by the core; a batching only calls it.
 */
export interface BatchableWrite<I, O> {
  /** The operation, for messages: `"submit"`, `"complete"`, `"completeRef"`, … */
  readonly name: string;
  /** Who waits for it; see {@link WriteLatency}. */
  readonly latency: WriteLatency;
  /** What two items in one statement may not share (the task id): the second waits for the first's outcome. */
  key(item: I): string;
  /** The item's size for a batching's byte bounds: its string parameters (encoded JSON included) plus a fixed row overhead. */
  bytes(item: I): number;
  /**
   * The item on its own: its single-row statement. Call it when the statement runs — it reads a
   * bound `now` then (§2.1).
   */
  one(item: I): PlannedWrite<O>;
  /**
   * Two or more items with distinct keys as ONE multi-row statement (the syntax's `batchSource`):
   * every item's outcome, in the order given, matched by key — each row passes or fails its own
   * guard. Call it when the statement runs.
   */
  many(items: readonly I[]): PlannedWrite<MergedOutcome<O>[]>;
  /**
   * Two or more items run synchronously inside a write transaction that holds the database's
   * write lock (a single-writer group commit), possibly as several statements that cost less there
   * than {@link BatchableWrite.many} (SQLite: each guarded `UPDATE` without `RETURNING`, then one
   * read of the changed rows): every item's outcome, in the order given. Throws when it failed;
   * the caller then undoes what it ran and writes each item with {@link BatchableWrite.one}.
   */
  manyLocked(run: SyncRunner, items: readonly I[]): MergedOutcome<O>[];
}

/**
 * A write's size for {@link BatchableWrite.bytes}: its string parameters (encoded JSON included) plus
 * a fixed row overhead.
 */
export function paramBytes(params: Params): number {
  let bytes = 64;
  // `for…in`, not `Object.values`: no array per write (every settlement passes here).
  for (const key in params) {
    const value = params[key];
    if (typeof value === "string") bytes += value.length;
  }
  return bytes;
}

/** The function a {@link WriteBatching} builds for one kind of write: one call per write, settled after its commit. */
export type BatchedWriter<I, O> = (item: I) => Promise<O>;

/**
 * How a dialect sends the store core's batchable writes: a dialect
 * collaborator, {@link SingleWrites} by default.
 *
 * @example
 * class MyDialect extends BaseStoreDialect {
 *   override readonly writes = new CombiningWrites({ maxRows: 64, splittable: (error) => isDataError(error) });
 * }
 */
export interface WriteBatching {
  /**
   * The writer of `kind`, built once per store and kind: every write of that kind goes through it,
   * so it may gather concurrent writes. Each caller must get exactly what `kind.one` run alone would
   * give it: its own row, or its own error.
   *
   * @param db - The store's Kysely instance.
   * @param executor - The dialect's executor, to run statements through.
   */
  writer<I, O>(db: AnyKysely, executor: StoreExecutor, kind: BatchableWrite<I, O>): BatchedWriter<I, O>;
  /**
   * Optional: the settlements (writes of `"settlement"` kinds) waiting in this batching, taken for a
   * claim cycle to run in its transaction and commit with it (one commit fewer); `null` when none
   * waits. Without it, claims carry no settlements. `CombiningWrites` has it with `settleWithClaims`.
   */
  takeSettlements?(): TakenWrites | null;
}

/**
 * Settlements taken from a {@link WriteBatching} to run inside another write transaction (a claim
 * cycle's): their statements, then either their results after the transaction committed, or its error.
 */
export interface TakenWrites {
  /** How many writes were taken. */
  readonly count: number;
  /** Their statements, built when the transaction runs (each reads a bound `now` then; again on a replay). */
  queries(): CompiledQuery<Row>[];
  /** The transaction committed: each caller gets its outcome from its statement's result (`results` in `queries()` order). */
  settle(results: readonly QueryResult<Row>[]): void;
  /**
   * The transaction failed with `error`: each write goes again on its own when nothing was applied
   * (then `true`: the claim may run again without them), else its caller gets `error` (`false`).
   */
  fail(error: unknown): boolean;
}

/**
 * `item` written alone: `kind.one(item)` as one autocommit statement through
 * `executor.write`, its plan built when the statement runs.
 *
 * @example
 * const task = await writeAlone(db, executor, submitKind, params);
 */
export function writeAlone<I, O>(db: AnyKysely, executor: StoreExecutor, kind: BatchableWrite<I, O>, item: I): Promise<O> {
  let plan: PlannedWrite<O> | null = null;
  let written: Promise<QueryResult<Row>>;
  try {
    written = executor.write(db, () => (plan = kind.one(item)).query);
  } catch (error) {
    // An executor that builds the statement at once throws what building it threw: the caller gets a rejection either way.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller gets exactly what was thrown
    return Promise.reject(error);
  }
  // One reaction rather than an async function's frame: every lone write of a combining store passes here.
  return written.then((result) => {
    if (plan === null) throw new Error("the executor's write settled without building its statement");
    return plan.answer(result);
  });
}

/**
 * The default {@link WriteBatching}: every write its own autocommit statement
 * ({@link writeAlone}), nothing gathered — right for any backend, and for a
 * store view on the caller's transaction.
 *
 * @example
 * class MyDialect extends BaseStoreDialect { override readonly writes = new SingleWrites(); }
 */
export class SingleWrites implements WriteBatching {
  writer<I, O>(db: AnyKysely, executor: StoreExecutor, kind: BatchableWrite<I, O>): BatchedWriter<I, O> {
    return (item) => writeAlone(db, executor, kind, item);
  }
}
