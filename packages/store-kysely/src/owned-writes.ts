import type { CompleteInput, FailInput, HeartbeatBatchInput, HeartbeatInput, OwnedInput, ProgressInput, SucceedInput, Task, TaskRef } from "@cairnq/protocol";
import { UnsupportedBackend } from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import {
  COMPLETE,
  completeParams,
  FAIL,
  failParams,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  heartbeatBatchParams,
  heartbeatBatchResult,
  heartbeatParams,
  PROGRESS,
  progressParams,
  SUCCEED,
  succeedParams,
} from "@cairnq/protocol/adapter";
import type { QueryRunner } from "./executor.js";
import { BatchableOwnedWrite, ownedRow } from "./batchable-owned-write.js";
import { decodeTask } from "./rows.js";
import { rowTransitionTemplate, setTransitionTemplate } from "./statements.js";
import type { StoreLifecycle } from "./store-lifecycle.js";
import type { SettlementsInFlight } from "./settlements-in-flight.js";
import { settlementFence } from "./settlements-in-flight.js";
import type { StoreStatements } from "./store-statements.js";
import type { BatchedWriter } from "./write-batching.js";

const HEARTBEAT_BATCH_TEMPLATE = setTransitionTemplate(HEARTBEAT_BATCH, ["id", "cancel_requested_at_ms"]);

/**
 * The worker's writes to the tasks it holds (§5.11–§5.16): heartbeats,
 * progress, settlements. Each is ownership-checked by its rule's guard (the
 * worker id and the attempt fence) in the statement itself; `LostLease` when
 * the guard matches no row. The single-row ones go through the dialect's
 * write batching, one writer per rule. Every method returns a promise: an
 * invalid input rejects, with nothing written, rather than throwing at the call.
 */
export class OwnedWrites {
  readonly #statements: StoreStatements;
  readonly #lifecycle: StoreLifecycle;
  readonly #writers = new Map<RowTransition, BatchedWriter<Params, Task>>();
  readonly #completeRef: BatchedWriter<Params, TaskRef>;
  readonly #inFlight: SettlementsInFlight | null;
  readonly #requeued: ((taskIds: readonly string[]) => Promise<void>) | null;

  /**
   * @param statements - The store's statements.
   * @param lifecycle - The store's gate for calls.
   * @param inFlight - Follows the settlements until they are answered, for claims that must not count them as running; `null`: not followed.
   * @param requeued - Told the task a `fail` requeued, before the fail answers (`markRequeued`: its group row is marked); `null`: nobody.
   */
  constructor(
    statements: StoreStatements,
    lifecycle: StoreLifecycle,
    inFlight: SettlementsInFlight | null = null,
    requeued: ((taskIds: readonly string[]) => Promise<void>) | null = null,
  ) {
    this.#statements = statements;
    this.#lifecycle = lifecycle;
    this.#inFlight = inFlight;
    this.#requeued = requeued;
    const { db, dialect, compiler } = statements;
    for (const rule of [HEARTBEAT, PROGRESS, SUCCEED, COMPLETE, FAIL]) {
      // Settlements end an attempt, on the latency path of `call()`; heartbeats and progress nobody waits for.
      const latency = rule === HEARTBEAT || rule === PROGRESS ? "background" : "settlement";
      this.#writers.set(rule, dialect.writes.writer(db, dialect.executor, BatchableOwnedWrite.task(compiler, rule, latency)));
    }
    this.#completeRef = dialect.writes.writer(db, dialect.executor, BatchableOwnedWrite.ref(compiler, COMPLETE, "settlement"));
  }

  /** §5.11: extends the lease; the full row, or `LostLease`. */
  heartbeat(input: HeartbeatInput): Promise<Task> {
    return this.#owned(HEARTBEAT, heartbeatParams, input);
  }

  /**
   * §5.12: one statement renews every listed lease still owned. Returns id → cancel requested, in
   * requested-id order; a missing id lost its lease (not an error). Empty `taskIds` runs no statement.
   */
  async heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>> {
    const params = heartbeatBatchParams(input);
    if (params.taskIds.length === 0) return new Map();
    return this.#lifecycle.run(async () => heartbeatBatchResult(params.taskIds, (await this.#statements.write(HEARTBEAT_BATCH_TEMPLATE, params)).rows));
  }

  /** §5.13: `null` keeps the previous value; the row, or `LostLease`. */
  progress(input: ProgressInput): Promise<Task> {
    return this.#owned(PROGRESS, progressParams, input);
  }

  /** T5 (§5.14), the raw primitive: ignores the cancel flag. */
  succeed(input: SucceedInput): Promise<Task> {
    return this.#owned(SUCCEED, succeedParams, input);
  }

  /** T6/T7 (§5.15): succeeds, or ends canceled when a cancel was requested. */
  complete(input: CompleteInput): Promise<Task> {
    return this.#owned(COMPLETE, completeParams, input);
  }

  /** §5.15 exactly as {@link OwnedWrites.complete}, answering only `{ id, status }` (not `async`: see `#owned`). */
  completeRef(input: CompleteInput): Promise<TaskRef> {
    let params: Params;
    try {
      params = completeParams(input);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller gets exactly what was thrown
      return Promise.reject(error);
    }
    return this.#settling(params, this.#lifecycle.runWith(this.#completeRef, params));
  }

  /** T8/T9/T10 (§5.16): cancel wins, then requeue while attempts remain, else failed. */
  fail(input: FailInput): Promise<Task> {
    const failed = this.#owned(FAIL, failParams, input);
    const requeued = this.#requeued;
    if (requeued === null) return failed;
    // A requeued task waits in its group again (`group-requeue.ts`): marked before the fail answers.
    return failed.then(async (task) => {
      if (task.status === "queued") await this.#lifecycle.run(() => requeued([task.id]));
      return task;
    });
  }

  /**
   * `rule`'s write of `paramsOf(input)`. Not `async` (nor are the methods above): an async function's
   * own promise, adopting the write's, cost two more promises per settlement; an invalid input still
   * rejects, with nothing written.
   */
  #owned<I>(rule: RowTransition, paramsOf: (input: I) => Params, input: I): Promise<Task> {
    let params: Params;
    try {
      params = paramsOf(input);
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller gets exactly what was thrown
      return Promise.reject(error);
    }
    const written = this.#lifecycle.runWith(this.#writers.get(rule) as BatchedWriter<Params, Task>, params);
    // Heartbeats and progress leave the task running: only settlements free a slot a claim counts.
    return rule === HEARTBEAT || rule === PROGRESS ? written : this.#settling(params, written);
  }

  /** `settlement`, followed until answered when the claims of this store must know it is in flight (`SettlementsInFlight`). */
  #settling<T>(params: Params, settlement: Promise<T>): Promise<T> {
    // Without an attempt the settlement names no attempt a claim could tell apart from a later one.
    if (this.#inFlight === null || params.attempt === null) return settlement;
    return this.#inFlight.track(settlement, settlementFence(params));
  }

  /**
   * `complete_in` (§5.15): runs `fn` in one write transaction, then `complete` with its return
   * value as the last statement; zero rows → `LostLease` and everything rolls back. Only for a
   * dialect with `transactionalComplete` (else `UnsupportedBackend`).
   */
  async completeIn<R>(input: OwnedInput, fn: (tx: QueryRunner) => Promise<R>): Promise<{ task: Task; result: R }> {
    const { db, dialect } = this.#statements;
    if (!dialect.capabilities.transactionalComplete) throw new UnsupportedBackend("completeIn", dialect.name);
    completeParams({ ...input, result: null });
    return this.#lifecycle.run(() =>
      dialect.executor.writeTransaction(db, async (tx) => {
        const result = await fn(tx);
        const params = completeParams({ ...input, result });
        const row = (await this.#statements.exec(tx, rowTransitionTemplate(COMPLETE), params)).rows[0];
        return { task: ownedRow(row, String(params.taskId), decodeTask), result };
      }),
    );
  }
}
