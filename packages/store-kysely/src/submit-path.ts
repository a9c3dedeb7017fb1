import type { QueueDepthGate, SubmitInput, SubmitOutcome, Task, TaskStore } from "@cairnq/protocol";
import { AlreadyExists } from "@cairnq/protocol";
import type { NormalizedSubmit, Params } from "@cairnq/protocol/adapter";
import { CANCEL, debounceConflict, debounceReadsJournal, debounceUpdate, newTaskId, normalizeSubmit, resolveDebounce, resolveKeyConflict } from "@cairnq/protocol/adapter";
import type { QueryRunner } from "./executor.js";
import { decodeTask } from "./rows.js";
import { GET_BY_KEY_TEMPLATE, rowTransitionTemplate, UPSERT_KEY_TEMPLATE } from "./statements.js";
import type { StoreLifecycle } from "./store-lifecycle.js";
import type { StoreStatements } from "./store-statements.js";
import { BatchableSubmit } from "./batchable-submit.js";
import type { BatchedWriter } from "./write-batching.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, STEPS_TABLE } from "./extension-tables.js";
import { HAS_JOURNAL_TEMPLATE } from "./steps-journal.js";
import { recordTaskGroup } from "./group-submit.js";
import { KeyTurns } from "./key-turns.js";

/** The store a submit belongs to: the backpressure gate it passes, and the store the gate reads. */
export interface GatedStore extends TaskStore {
  readonly queueDepthGate: QueueDepthGate | null;
}

/**
 * T1 (§5.1): validates and encodes first, then passes the backpressure gate
 * (§5.6), then inserts. Without a key, one insert through the dialect's write
 * batching (concurrent ones may share a statement). With a key, one write
 * transaction: key lock, read the key's task, `resolveKeyConflict`, then
 * reuse, reject (`AlreadyExists`, nothing written) or cancel-and-insert with
 * the key upserted — the store's one read-then-decide step, under the key
 * lock. Keyed submits of one key from this instance reach the key lock in the
 * order they were called (see `key-turns.ts`), so the last one issued is the
 * last one a debounce or `replace` applies.
 */
export class SubmitPath {
  readonly #statements: StoreStatements;
  readonly #lifecycle: StoreLifecycle;
  readonly #store: GatedStore;
  readonly #insert: BatchableSubmit;
  readonly #unkeyed: BatchedWriter<Params, Task>;
  readonly #extensions: StoreExtensions | null;
  readonly #turns = new KeyTurns();

  /**
   * @param statements - The store's statements.
   * @param lifecycle - The store's gate for calls.
   * @param store - The store whose `queueDepthGate` every submit passes.
   * @param extensions - The extension tables a submit with a `group` writes; `null` = groups unsupported.
   */
  constructor(statements: StoreStatements, lifecycle: StoreLifecycle, store: GatedStore, extensions: StoreExtensions | null = null) {
    this.#extensions = extensions;
    this.#statements = statements;
    this.#lifecycle = lifecycle;
    this.#store = store;
    this.#insert = new BatchableSubmit(statements.compiler);
    const { db, dialect } = statements;
    this.#unkeyed = dialect.writes.writer(db, dialect.executor, this.#insert);
  }

  /**
   * The submit, also saying whether this call inserted the row (`created`) or a keyed submit
   * reused an existing task. Validation errors throw at the call (before anything runs).
   */
  submit(input: SubmitInput): Promise<SubmitOutcome> {
    const submit = normalizeSubmit(input, newTaskId());
    if (submit.key === null) return this.#run(submit, null);
    // Taken at the call, before any await, so that call order is the order the key lock sees.
    const turn = this.#turns.take(submit.key);
    return this.#run(submit, turn.ready).finally(() => turn.release());
  }

  /** {@link SubmitPath.submit} after validation; a keyed submit opens its transaction once `turn` settles. */
  #run(submit: NormalizedSubmit, turn: Promise<void> | null): Promise<SubmitOutcome> {
    return this.#lifecycle.run(async () => {
      const gate = this.#store.queueDepthGate;
      if (gate !== null) await gate.acquire(submit.queue, this.#store);
      if (submit.group !== null) await this.#groupTables().ensure(GROUP_TABLES);
      // A debounced submit reads the key's task's step journal (under the key lock: no table may be created there).
      if (submit.debounce !== null) await this.#groupTables().ensure(STEPS_TABLE);
      if (submit.key !== null) {
        // Waits outside any transaction, so a submit waiting for its turn holds no pool connection.
        await turn;
        return this.#keyed(submit, submit.key);
      }
      if (submit.group === null) return { task: await this.#unkeyed(submit.params), created: true };
      const { db, dialect } = this.#statements;
      const group = submit.group;
      return dialect.executor.writeTransaction(db, async (tx) => {
        const task = await this.#insertIn(tx, submit.params);
        await recordTaskGroup(this.#groupTables(), tx, task, group);
        return { task, created: true };
      });
    });
  }

  #keyed(submit: NormalizedSubmit, key: string): Promise<SubmitOutcome> {
    const { db, dialect } = this.#statements;
    return dialect.executor.writeTransaction(db, async (tx): Promise<SubmitOutcome> => {
      await dialect.keyLock.acquire(tx, key);
      const found = (await this.#statements.exec(tx, GET_BY_KEY_TEMPLATE, { key })).rows[0];
      const existing = found === undefined ? null : decodeTask(found);
      if (submit.debounce !== null) {
        const name = submit.params.name as string;
        const journaled = debounceReadsJournal(name, existing) && (await this.#statements.exec(tx, HAS_JOURNAL_TEMPLATE, { taskId: (existing as Task).id })).rows.length > 0;
        const debounced = resolveDebounce(name, existing, journaled);
        if (debounced.kind === "reject") throw debounceConflict(key, name, existing as Task);
        if (debounced.kind === "update") {
          const { rule, params } = debounceUpdate(submit.debounce, debounced.taskId, submit.params.payload as string);
          const row = (await this.#statements.exec(tx, rowTransitionTemplate(rule), params)).rows[0];
          // Claimed between the read and the update (claims take no key lock): a new task, as for a running one.
          if (row !== undefined) return { task: decodeTask(row), created: false };
        }
        return this.#insertKeyed(tx, submit, key);
      }
      const decision = resolveKeyConflict(submit.conflict, existing);
      switch (decision.kind) {
        case "reject":
          throw new AlreadyExists(key);
        case "reuse":
          return { task: existing as Task, created: false };
        case "insert": {
          if (decision.cancelExisting && existing !== null) {
            await this.#statements.exec(tx, rowTransitionTemplate(CANCEL), { taskId: existing.id });
          }
          return this.#insertKeyed(tx, submit, key);
        }
      }
    });
  }

  /** Inserts the task, points `key` at it and records its group, inside the keyed submit's transaction. */
  async #insertKeyed(tx: QueryRunner, submit: NormalizedSubmit, key: string): Promise<SubmitOutcome> {
    const inserted = await this.#insertIn(tx, submit.params);
    await this.#statements.exec(tx, UPSERT_KEY_TEMPLATE, { key, taskId: inserted.id });
    if (submit.group !== null) await recordTaskGroup(this.#groupTables(), tx, inserted, submit.group);
    return { task: inserted, created: true };
  }

  #groupTables(): StoreExtensions {
    if (this.#extensions === null) throw new Error("this SubmitPath was built without extension tables, so it cannot record a task's group");
    return this.#extensions;
  }

  /** SUBMIT inside a write transaction; the inserted row. */
  async #insertIn(tx: QueryRunner, params: Params): Promise<Task> {
    const plan = this.#insert.one(params);
    return plan.answer(await tx.executeQuery(plan.query));
  }
}
