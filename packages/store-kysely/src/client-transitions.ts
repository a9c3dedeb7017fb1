import type { BulkBatchInput, PurgeInput, RetryBatchInput, RetryOptions, Task } from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import { CANCEL, CANCEL_BATCH, cancelBatchParams, joinParentsToWake, PURGE, purgeParams, requireKey, requireName, RETRY, RETRY_BATCH, retryBatchParams, retryParams } from "@cairnq/protocol/adapter";
import { nextBatchCursor } from "@cairnq/protocol/sdk";
import { rowsPerWrite } from "./capabilities.js";
import type { StatementTemplate } from "./compiler.js";
import type { Row } from "./executor.js";
import { decodeTask } from "./rows.js";
import { batchTransitionTemplate, deleteTemplate, KEY_TASK_ID_TEMPLATE, rowTransitionTemplate } from "./statements.js";
import type { StoreLifecycle } from "./store-lifecycle.js";
import type { StoreStatements } from "./store-statements.js";

const PURGE_TEMPLATE = deleteTemplate(PURGE);
const CANCEL_BATCH_TEMPLATE = batchTransitionTemplate(CANCEL_BATCH);
const RETRY_BATCH_TEMPLATE = batchTransitionTemplate(RETRY_BATCH);

/**
 * What a client does to tasks it does not hold (§5.7–§5.9): cancel and retry
 * by id or by key, their bulk batches, purge. Each is one conditional
 * statement (by key: inside a key-locked write transaction), never combined
 * with other writes; a bulk batch or purge whose `limit` is above the
 * dialect's `maxRowsPerWrite` is several, in order. Every method is `async`:
 * an invalid input rejects.
 */
export class ClientTransitions {
  readonly #statements: StoreStatements;
  readonly #lifecycle: StoreLifecycle;
  readonly #wakeJoins: (parentIds: readonly string[]) => Promise<unknown>;
  readonly #requeued: (taskIds: readonly string[]) => Promise<void>;

  /**
   * @param statements - The store's statements.
   * @param lifecycle - The store's gate for calls.
   * @param wakeJoins - Makes parents parked on a join due now (`StepJournal.wakeJoins`): called after a
   *   cancel ended children, which no worker settles, so their joins wake as promptly as on a settlement.
   * @param requeued - Told the tasks a retry requeued (`markRequeued`: their group rows are marked).
   */
  constructor(
    statements: StoreStatements,
    lifecycle: StoreLifecycle,
    wakeJoins: (parentIds: readonly string[]) => Promise<unknown>,
    requeued: (taskIds: readonly string[]) => Promise<void> = async () => {},
  ) {
    this.#statements = statements;
    this.#lifecycle = lifecycle;
    this.#wakeJoins = wakeJoins;
    this.#requeued = requeued;
  }

  /** T3/T4 (§5.7): the post-update row, or `null` when terminal or missing. */
  async cancel(id: string): Promise<Task | null> {
    return this.#transition(CANCEL, { taskId: requireName(id, "id") });
  }

  /** Key lock, resolve the key, cancel that task (§5.7); `null` for an unknown key. */
  async cancelByKey(key: string): Promise<Task | null> {
    return this.#byKey(requireKey(key), {}, CANCEL);
  }

  /** T14 (§5.8): the post-update row, or `null` unless failed or canceled. */
  async retry(id: string, options?: RetryOptions): Promise<Task | null> {
    return this.#transition(RETRY, retryParams(requireName(id, "id"), options));
  }

  /** Key lock, resolve the key, retry that task (§5.8); `null` for an unknown key. */
  async retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    // retryParams validates the options; the task id comes from the key inside the transaction.
    return this.#byKey(requireKey(key), retryParams(key, options), RETRY);
  }

  /**
   * One batch of a bulk cancel: `CANCEL`'s branches on up to `limit` queued or running rows
   * matching the filters, in id order after `afterId`, as one statement that re-checks each row's
   * guard as it writes it. Returns the ids it changed.
   */
  async cancelBatch(input?: BulkBatchInput): Promise<string[]> {
    const params = cancelBatchParams(input);
    return this.#lifecycle.run(() => this.#inWrites(CANCEL_BATCH_TEMPLATE, params, true, (rows) => this.#wakeJoins(joinParentsToWake(rows))));
  }

  /** One batch of a bulk retry: `RETRY`'s branch on failed or canceled rows; as {@link ClientTransitions.cancelBatch}. */
  async retryBatch(input?: RetryBatchInput): Promise<string[]> {
    const params = retryBatchParams(input);
    return this.#lifecycle.run(() => this.#inWrites(RETRY_BATCH_TEMPLATE, params, true, (_rows, ids) => this.#requeued(ids)));
  }

  /** T15 (§5.9): deletes up to `limit` terminal rows completed before the cutoff; returns their ids. */
  async purge(input?: PurgeInput): Promise<string[]> {
    const params = purgeParams(input);
    // No cursor: the rows a write deleted are gone, so the next one picks the oldest that are left.
    return this.#lifecycle.run(() => this.#inWrites(PURGE_TEMPLATE, params, false));
  }

  /**
   * `template` for up to `params.limit` rows as autocommit writes of at most the dialect's
   * `maxRowsPerWrite` rows each (one write without it), in order, until one changes no row or the limit
   * is reached. A write that changed fewer rows than it asked for does not end it (its picks skip rows
   * another transaction holds, `SKIP LOCKED`, so more may match once they are free), at the cost of one
   * empty write at the end. With `cursor`, each write after the first continues after the
   * greatest id the previous one changed (`afterId`). `after`, if any, runs on each write's rows (and their ids) once it
   * committed, before the next write, so the follow-up of the writes done stands if a later one fails.
   * Returns the ids of every write's rows, in order.
   */
  async #inWrites(template: StatementTemplate, params: Params & { limit: number }, cursor: boolean, after?: (rows: readonly Row[], ids: readonly string[]) => Promise<unknown>): Promise<string[]> {
    const perWrite = rowsPerWrite(this.#statements.dialect.capabilities);
    const ids: string[] = [];
    let left = params.limit;
    let next = params;
    for (;;) {
      const limit = Math.min(left, perWrite);
      const rows = (await this.#statements.write(template, { ...next, limit })).rows;
      const written = rows.map((row) => String(row.id));
      if (rows.length > 0) await after?.(rows, written);
      for (const id of written) ids.push(id);
      left -= rows.length;
      if (rows.length === 0 || left === 0 || perWrite === Number.POSITIVE_INFINITY) return ids;
      if (cursor) next = { ...next, afterId: nextBatchCursor(written) };
    }
  }

  #transition(rule: RowTransition, params: Params): Promise<Task | null> {
    return this.#lifecycle.run(async () => {
      const row = (await this.#statements.write(rowTransitionTemplate(rule), params)).rows[0];
      return row === undefined ? null : this.#ended(decodeTask(row));
    });
  }

  /** After a cancel: a child it ended wakes its joining parent. After a retry: the task waits in its group again. */
  async #ended(task: Task): Promise<Task> {
    if (task.status === "queued") await this.#requeued([task.id]);
    else await this.#wakeJoins(joinParentsToWake([task]));
    return task;
  }

  #byKey(key: string, extra: Params, rule: RowTransition): Promise<Task | null> {
    const { db, dialect } = this.#statements;
    return this.#lifecycle.run(() =>
      dialect.executor.writeTransaction(db, async (tx) => {
        await dialect.keyLock.acquire(tx, key);
        const found = (await this.#statements.exec(tx, KEY_TASK_ID_TEMPLATE, { key })).rows[0];
        if (found === undefined) return null;
        const row = (await this.#statements.exec(tx, rowTransitionTemplate(rule), { ...extra, taskId: String(found.task_id) })).rows[0];
        return row === undefined ? null : decodeTask(row);
      }).then((task) => (task === null ? null : this.#ended(task))),
    );
  }
}
