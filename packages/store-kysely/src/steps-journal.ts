/**
 * Durable steps in the SQL store (the extension described in
 * `@cairnq/protocol` `steps.ts`): the journal in `cairnq_ext_steps`, messages
 * in `cairnq_ext_messages`, and the `PARK` transition on the task row.
 *
 * - **record** is ONE statement, `INSERT INTO cairnq_ext_steps … SELECT …
 *   FROM cairnq_tasks WHERE id = ? AND <OWNER> ON CONFLICT … DO UPDATE …
 *   WHERE status <> 'done' RETURNING name`: the fence (running, this worker,
 *   this attempt, lease not expired) is checked by the statement that writes,
 *   so a zombie's record never lands, and a `done` entry is never rewritten.
 * - **park**, **spawn**, **send** and a join's **wake** are short write
 *   transactions that take the task's step lock (`cairnq:steps:<task id>`
 *   through the dialect's key lock; SQLite's `BEGIN IMMEDIATE` already
 *   serialises them) before anything else, so a `send` and a wait parking on
 *   the same task are decided one after the other: either the wait sees the
 *   message, or the send sees the parked wait and makes the task due; and
 *   likewise a join parking and the wake after a child's settlement.
 * - A write that makes a queued task due without changing its status sends
 *   the `queued` push signal itself (`SqlSyntax.queuedSignal`): the v1 notify
 *   trigger only fires on a status change.
 */
import type { ParkOutcome, ParkStepInput, RecordStepInput, SendInput, SendOutcome, SpawnStepInput, StepRecord, Task } from "@cairnq/protocol";
import { LostLease } from "@cairnq/protocol";
import { missingTable } from "./missing-table.js";
import { TransactionViewDialect } from "./dialect.js";
import type { Params } from "@cairnq/protocol/adapter";
import { decodeStepRow, encodeJson, hasMessageParams, holdsJoin, newTaskId, normalizeSubmit, OWNER, PARAMS, PARK, parkStepParams, recordStepParams, requireName, requireSendTarget, requireSpawnChild, sendParams, SUBMIT, x } from "@cairnq/protocol/adapter";
import { CompiledQuery } from "kysely";
import type { StatementTemplate } from "./compiler.js";
import type { QueryRunner } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, MESSAGES_TABLE, STEPS_TABLE } from "./extension-tables.js";
import { recordTaskGroup } from "./group-submit.js";
import { BatchableStepRecord } from "./batchable-step-record.js";
import { markRequeued } from "./group-requeue.js";
import { decodeTask } from "./rows.js";
import type { BatchedWriter } from "./write-batching.js";
import { GET_MANY_TEMPLATE, insertTemplate, rowTransitionTemplate, TASKS_TABLE } from "./statements.js";

const P = {
  taskId: PARAMS.taskId,
  stepName: x.param("stepName", "text"),
  seq: x.param("seq", "int"),
  kind: x.param("kind", "text"),
  stepStatus: x.param("stepStatus", "text"),
  result: x.param("result", "text"),
  error: x.param("error", "text"),
  untilMs: x.param("untilMs", "int"),
  delayMs: PARAMS.delayMs,
  waitingFor: x.param("waitingFor", "text"),
  name: x.param("name", "text"),
  payload: x.param("payload", "text"),
  messageSeq: x.param("messageSeq", "int"),
  messagesBeforeMs: x.param("messagesBeforeMs", "int"),
} as const;

const OWNED_TASK = x.and(x.eq(x.col("id"), P.taskId), OWNER);
const OWNER_PARAMS = [PARAMS.workerId, PARAMS.attempt];
const COLUMNS = "task_id, name, seq, kind, status, result, error, attempt, at_ms, wake_at_ms, waiting_for";
const UPSERT_TAIL =
  ` ON CONFLICT (task_id, name) DO UPDATE SET status = excluded.status, result = excluded.result, error = excluded.error, ` +
  `attempt = excluded.attempt, at_ms = excluded.at_ms, wake_at_ms = excluded.wake_at_ms, waiting_for = excluded.waiting_for ` +
  `WHERE ${STEPS_TABLE}.status <> 'done' RETURNING task_id, name`;

/** A final outcome (`done` / `failed`), fenced by the task row in the same statement. */
const RECORD_TEMPLATE: StatementTemplate = {
  params: [P.taskId, PARAMS.workerId, PARAMS.attempt, P.stepName, P.seq, P.kind, P.stepStatus, P.result, P.error],
  clock: "transaction",
  build: (c) =>
    `INSERT INTO ${STEPS_TABLE} (${COLUMNS}) SELECT id, ${c.value(P.stepName)}, ${c.value(P.seq)}, ${c.value(P.kind)}, ${c.value(P.stepStatus)}, ` +
    `${c.value(P.result)}, ${c.value(P.error)}, attempt, ${c.now()}, NULL, NULL FROM ${TASKS_TABLE} WHERE ${c.condition(OWNED_TASK) ?? "1 = 1"}` +
    UPSERT_TAIL,
};

/** A `waiting` entry of a parking sleep, wait or join (inside the park transaction, after the fence was checked). */
const WAITING_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.stepName, P.seq, P.kind, P.untilMs, P.delayMs, P.waitingFor],
  clock: "transaction",
  build: (c) =>
    `INSERT INTO ${STEPS_TABLE} (${COLUMNS}) SELECT id, ${c.value(P.stepName)}, ${c.value(P.seq)}, ${c.value(P.kind)}, 'waiting', NULL, NULL, attempt, ${c.now()}, ` +
    `${c.value(x.coalesce(P.untilMs, x.add(x.now, P.delayMs)))}, ${c.value(P.waitingFor)} FROM ${TASKS_TABLE} WHERE id = ${c.value(P.taskId)}` +
    UPSERT_TAIL,
};

const RECORD_PARAMS = [P.taskId, ...OWNER_PARAMS, P.stepName, P.seq, P.kind, P.stepStatus, P.result, P.error];

/**
 * {@link RECORD_TEMPLATE} over many tasks at once (one row each), for the write combiner: the bound
 * rows `b` joined to their task rows, each fenced on its own.
 */
const RECORD_MANY_TEMPLATE: StatementTemplate = {
  params: RECORD_PARAMS,
  clock: "transaction",
  perRow: true,
  build: (c) => {
    const source = c.batchSource(RECORD_PARAMS);
    return (
      `INSERT INTO ${STEPS_TABLE} (${COLUMNS}) SELECT id, ${c.value(P.stepName)}, ${c.value(P.seq)}, ${c.value(P.kind)}, ${c.value(P.stepStatus)}, ` +
      `${c.value(P.result)}, ${c.value(P.error)}, attempt, ${c.now()}, NULL, NULL FROM ${source}, ${TASKS_TABLE} WHERE ${c.condition(OWNED_TASK) ?? "1 = 1"}` +
      UPSERT_TAIL
    );
  },
};

/** A sleep's `waiting` entry, fenced in the statement itself: a sleep needs no step lock (no message or child decides it). */
const FENCED_WAITING_TEMPLATE: StatementTemplate = {
  params: [P.taskId, ...OWNER_PARAMS, P.stepName, P.seq, P.kind, P.untilMs, P.delayMs, P.waitingFor],
  clock: "transaction",
  build: (c) =>
    `INSERT INTO ${STEPS_TABLE} (${COLUMNS}) SELECT id, ${c.value(P.stepName)}, ${c.value(P.seq)}, ${c.value(P.kind)}, 'waiting', NULL, NULL, attempt, ${c.now()}, ` +
    `${c.value(x.coalesce(P.untilMs, x.add(x.now, P.delayMs)))}, ${c.value(P.waitingFor)} FROM ${TASKS_TABLE} WHERE ${c.condition(OWNED_TASK) ?? "1 = 1"}` +
    UPSERT_TAIL,
};

/** A `done` entry written inside a transaction that already checked the fence (a satisfied wait or join, a spawn). */
const DONE_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.stepName, P.seq, P.kind, P.result],
  clock: "transaction",
  build: (c) =>
    `INSERT INTO ${STEPS_TABLE} (${COLUMNS}) SELECT id, ${c.value(P.stepName)}, ${c.value(P.seq)}, ${c.value(P.kind)}, 'done', ${c.value(P.result)}, NULL, attempt, ` +
    `${c.now()}, NULL, NULL FROM ${TASKS_TABLE} WHERE id = ${c.value(P.taskId)}` +
    UPSERT_TAIL,
};

/** The fence inside a transaction: the task row, if this attempt still holds it. */
const FENCE_TEMPLATE: StatementTemplate = {
  params: [P.taskId, ...OWNER_PARAMS],
  clock: "transaction",
  build: (c) => `SELECT id, queue, root_id FROM ${TASKS_TABLE} WHERE ${c.condition(OWNED_TASK) ?? "1 = 1"}`,
};

/** The journal; a sleep whose wake time has come reads as `done` (nothing is written when it ends: see `steps.ts`). */
const JOURNAL_TEMPLATE: StatementTemplate = {
  params: [P.taskId],
  clock: "statement",
  build: (c) =>
    `SELECT task_id, name, seq, kind, CASE WHEN kind = 'sleep' AND status = 'waiting' AND wake_at_ms <= ${c.now()} THEN 'done' ELSE status END AS status, ` +
    `result, error, attempt, at_ms, wake_at_ms, waiting_for FROM ${STEPS_TABLE} WHERE task_id = ${c.value(P.taskId)} ORDER BY seq, name`,
};

/** Whether the task has any entry (a debounced submit leaves a task that has begun alone: `debounce.ts`). */
export const HAS_JOURNAL_TEMPLATE: StatementTemplate = {
  params: [P.taskId],
  clock: null,
  build: (c) => `SELECT 1 AS one FROM ${STEPS_TABLE} WHERE task_id = ${c.value(P.taskId)} LIMIT 1`,
};

const ENTRY_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.stepName],
  clock: null,
  build: (c) => `SELECT ${COLUMNS} FROM ${STEPS_TABLE} WHERE task_id = ${c.value(P.taskId)} AND name = ${c.value(P.stepName)}`,
};

/** The message a wait takes: the oldest of its name not yet taken, sent before the wait's deadline (`parkStepParams`). */
const OLDEST_MESSAGE_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.name, P.messagesBeforeMs],
  clock: null,
  build: (c) =>
    `SELECT seq, payload FROM ${MESSAGES_TABLE} WHERE task_id = ${c.value(P.taskId)} AND name = ${c.value(P.name)} AND consumed_by IS NULL ` +
    `AND at_ms < ${c.value(P.messagesBeforeMs)} ORDER BY seq LIMIT 1`,
};

/** Whether a message of the name waits untaken, sent before the bound (`TaskStepStore.hasMessage`). */
const HAS_MESSAGE_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.name, P.messagesBeforeMs],
  clock: null,
  build: (c) =>
    `SELECT 1 AS one FROM ${MESSAGES_TABLE} WHERE task_id = ${c.value(P.taskId)} AND name = ${c.value(P.name)} AND consumed_by IS NULL ` +
    `AND at_ms < ${c.value(P.messagesBeforeMs)} LIMIT 1`,
};

const CONSUME_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.name, P.messageSeq, P.stepName],
  clock: null,
  build: (c) =>
    `UPDATE ${MESSAGES_TABLE} SET consumed_by = ${c.value(P.stepName)} WHERE task_id = ${c.value(P.taskId)} AND name = ${c.value(P.name)} AND seq = ${c.value(P.messageSeq)}`,
};

const TASK_QUEUE_TEMPLATE: StatementTemplate = {
  params: [P.taskId],
  clock: null,
  build: (c) => `SELECT status, queue FROM ${TASKS_TABLE} WHERE id = ${c.value(P.taskId)}`,
};

const INSERT_MESSAGE_TEMPLATE: StatementTemplate = {
  params: [P.taskId, P.name, P.payload],
  clock: "transaction",
  build: (c) =>
    `INSERT INTO ${MESSAGES_TABLE} (task_id, name, seq, payload, at_ms, consumed_by) SELECT ${c.value(P.taskId)}, ${c.value(P.name)}, ` +
    `COALESCE(MAX(seq), 0) + 1, ${c.value(P.payload)}, ${c.now()}, NULL FROM ${MESSAGES_TABLE} WHERE task_id = ${c.value(P.taskId)} AND name = ${c.value(P.name)}`,
};

/** Makes a parked task due now when a `waiting` entry of `kind` (and `waitingFor`, when given) is there. */
function wakeTemplate(kind: "wait" | "join"): StatementTemplate {
  return {
    params: [P.taskId, P.waitingFor],
    clock: "transaction",
    build: (c) =>
      `UPDATE ${TASKS_TABLE} SET run_at_ms = ${c.now()}, updated_at_ms = ${c.now()} WHERE id = ${c.value(P.taskId)} AND status = 'queued' AND run_at_ms > ${c.now()} ` +
      `AND EXISTS (SELECT 1 FROM ${STEPS_TABLE} s WHERE s.task_id = ${c.value(P.taskId)} AND s.kind = '${kind}' AND s.status = 'waiting'` +
      `${c.has(P.waitingFor) ? ` AND s.waiting_for = ${c.value(P.waitingFor)}` : ""}) RETURNING queue`,
  };
}
const WAKE_WAIT_TEMPLATE = wakeTemplate("wait");
const WAKE_JOIN_TEMPLATE = wakeTemplate("join");

const PARK_TEMPLATE = rowTransitionTemplate(PARK);
const CHILD_INSERT_TEMPLATE = insertTemplate(SUBMIT);

/** The step lock of a task: taken first by every transaction that parks, sends to or spawns from it. */
function stepLockKey(taskId: string): string {
  return `cairnq:steps:${taskId}`;
}

/** See the module comment. */
export class StepJournal {
  /** Records go through the dialect's write batching, like settlements (`batchable-step-record.ts`). */
  readonly #record: BatchedWriter<Params, void>;

  constructor(private readonly ext: StoreExtensions) {
    const { db, dialect, compiler } = ext.statements;
    this.#record = dialect.writes.writer(db, dialect.executor, new BatchableStepRecord(compiler, RECORD_TEMPLATE, RECORD_MANY_TEMPLATE));
  }

  async #ready(): Promise<void> {
    await this.ext.ensure(STEPS_TABLE);
    await this.ext.ensure(MESSAGES_TABLE);
  }

  /** The task's journal in recording order. */
  async steps(taskId: string): Promise<StepRecord[]> {
    const id = requireName(taskId, "taskId");
    try {
      return (await this.ext.statements.read(JOURNAL_TEMPLATE, { taskId: id })).rows.map(decodeStepRow);
    } catch (err) {
      // A read creates nothing (`cairnq get`, `explain` and the dashboard read every task): no table, no journal.
      if (this.ext.dialect.missingTable?.(err) ?? missingTable(err)) return [];
      throw err;
    }
  }

  /** Whether an untaken message of `name` is stored for the task (sent before `sentBeforeMs`, when given). */
  async hasMessage(taskId: string, name: string, sentBeforeMs?: number): Promise<boolean> {
    const params = hasMessageParams(taskId, name, sentBeforeMs);
    try {
      return (await this.ext.statements.read(HAS_MESSAGE_TEMPLATE, params)).rows.length > 0;
    } catch (err) {
      // A read creates nothing, as `steps` does: no table, no message.
      if (this.ext.dialect.missingTable?.(err) ?? missingTable(err)) return false;
      throw err;
    }
  }

  /** One fenced statement; `LostLease` when it wrote nothing. */
  async recordStep(input: RecordStepInput): Promise<void> {
    const params = recordStepParams(input);
    await this.#ready();
    await this.#record(params);
  }

  /** The park transaction (see the module comment). */
  async parkStep(input: ParkStepInput): Promise<ParkOutcome> {
    const normalized = parkStepParams(input);
    await this.#ready();
    const { dialect, db } = this.ext;
    // The entry's wake time and the row's run_at_ms must be one instant. A database clock reads one `now` per
    // transaction; a process clock is read per statement, so the instant is fixed here, once per attempt.
    const fixed = (): typeof normalized =>
      normalized.untilMs === null && dialect.clock.nowSql("transaction") === null ? { ...normalized, untilMs: dialect.clock.nowMs() + normalized.delayMs } : normalized;
    if (normalized.kind === "sleep") {
      // Two statements, no lock: the entry (fenced) and PARK (fenced again by its guard).
      return dialect.executor.writeTransaction(db, async (tx) => {
        const params = fixed();
        if ((await this.ext.exec(tx, FENCED_WAITING_TEMPLATE, params)).rows.length === 0) throw new LostLease(String(params.taskId));
        return this.#parkRow(tx, params);
      });
    }
    return dialect.executor.writeTransaction(db, async (tx) => {
      const params = fixed();
      await this.#fence(tx, params);
      if (params.kind === "wait") {
        const message = (await this.ext.exec(tx, OLDEST_MESSAGE_TEMPLATE, { taskId: params.taskId, name: params.message, messagesBeforeMs: normalized.messagesBeforeMs })).rows[0];
        if (message !== undefined) {
          await this.ext.exec(tx, CONSUME_TEMPLATE, { taskId: params.taskId, name: params.message, messageSeq: Number(message.seq), stepName: params.stepName });
          const payload = String(message.payload);
          await this.#done(tx, params, payload);
          return { kind: "ready", result: JSON.parse(payload) as unknown };
        }
        if (normalized.expired) {
          // The deadline passed with no message sent before it: timed out, without parking.
          await this.#done(tx, params, "null");
          return { kind: "ready", result: null };
        }
      } else if (params.kind === "join") {
        const rows = await this.#children(tx, params.childIds);
        if (!rows.some(holdsJoin)) {
          const encoded = encodeJson(rows, "join result");
          await this.#done(tx, params, encoded);
          return { kind: "ready", result: JSON.parse(encoded) as unknown };
        }
      }
      await this.ext.exec(tx, WAITING_TEMPLATE, params);
      return this.#parkRow(tx, params);
    });
  }

  /** `PARK` on the task row; `LostLease` when its guard matched nothing (everything rolls back). */
  async #parkRow(tx: QueryRunner, params: Params): Promise<ParkOutcome> {
    const row = (await this.ext.exec(tx, PARK_TEMPLATE, params)).rows[0];
    if (row === undefined) throw new LostLease(String(params.taskId));
    const status = decodeTask(row).status === "canceled" ? "canceled" : "queued";
    // A parked task waits in its group again (`group-requeue.ts`).
    if (status === "queued") await markRequeued(this.ext, [String(params.taskId)], tx);
    return { kind: "parked", status };
  }

  /** Child insert and journal entry in one fenced transaction; a recorded entry returns its child. */
  async spawnStep(input: SpawnStepInput): Promise<string> {
    const params = recordStepParams({ ...input, kind: "spawn", status: "done", result: null });
    const childId = newTaskId();
    // Checked before anything is written; the root is the parent row's, read under the fence below.
    const child = normalizeSubmit({ ...requireSpawnChild(input.child), parentId: String(params.taskId), rootId: null }, childId);
    await this.#ready();
    // A grouped child is written as a grouped submit writes it (`group-submit.ts`); the tables are created outside the transaction.
    if (child.group !== null) await this.ext.ensure(GROUP_TABLES);
    const { dialect, db } = this.ext;
    return dialect.executor.writeTransaction(db, async (tx) => {
      const parent = await this.#fence(tx, params);
      const existing = (await this.ext.exec(tx, ENTRY_TEMPLATE, params)).rows[0];
      if (existing !== undefined && existing.status === "done") return decodeStepRow(existing).result as string;
      await this.ext.exec(tx, CHILD_INSERT_TEMPLATE, { ...child.params, rootId: String(parent.root_id ?? params.taskId) });
      if (child.group !== null) await recordTaskGroup(this.ext, tx, { id: childId, name: String(child.params.name), priority: Number(child.params.priority) }, child.group);
      await this.#done(tx, params, JSON.stringify(childId));
      return childId;
    });
  }

  /** Stores the message and wakes a task parked waiting for it. */
  async send(input: SendInput): Promise<SendOutcome> {
    const params = sendParams(input);
    await this.#ready();
    const { dialect, db } = this.ext;
    return dialect.executor.writeTransaction(db, async (tx) => {
      await dialect.keyLock.acquire(tx, stepLockKey(params.taskId));
      const task = (await this.ext.exec(tx, TASK_QUEUE_TEMPLATE, params)).rows[0];
      requireSendTarget(params.taskId, params.name, task);
      await this.ext.exec(tx, INSERT_MESSAGE_TEMPLATE, params);
      const woke = await this.#wake(tx, WAKE_WAIT_TEMPLATE, { taskId: params.taskId, waitingFor: JSON.stringify(params.name) });
      return { taskId: params.taskId, name: params.name, woke };
    });
  }

  /** Makes a parent parked on a join due now. */
  async wakeJoin(parentId: string): Promise<boolean> {
    return (await this.wakeJoins([requireName(parentId, "parentId")])) > 0;
  }

  /**
   * Makes each of `parentIds` that is parked on a join due now, with the `queued` push signal, in one
   * write transaction; how many it woke. Called by the store itself after a transition ended children
   * without a worker settling them (a cancel of a queued child), so their joins are pushed as a
   * settlement's are, not found by the re-check.
   */
  async wakeJoins(parentIds: readonly string[]): Promise<number> {
    if (parentIds.length === 0) return 0;
    await this.#ready();
    const { dialect, db } = this.ext;
    return dialect.executor.writeTransaction(db, async (tx) => {
      let woke = 0;
      // Under each parent's step lock, as a park takes it: a join parking meanwhile has either seen the child
      // terminal (ready, nothing to wake) or committed its `waiting` entry before the wake looks. Without it,
      // a wake between the park's read of the children and its commit saw a running parent and woke nothing
      // (Postgres, READ COMMITTED), leaving the join to its re-check 30 s later. Sorted: one lock order.
      // Not in a transaction view (`withTransaction`): there the wake runs in the caller's transaction after
      // its cancel, which may hold the parent's row (a cancel that flagged it), and a park holding the step
      // lock waits for that row at PARK: waiting for the step lock would deadlock. There, as before the lock,
      // a join parking at that moment is found by its re-check.
      const locking = !(dialect instanceof TransactionViewDialect);
      for (const taskId of [...new Set(parentIds)].sort()) {
        if (locking) await dialect.keyLock.acquire(tx, stepLockKey(taskId));
        if (await this.#wake(tx, WAKE_JOIN_TEMPLATE, { taskId, waitingFor: null })) woke += 1;
      }
      return woke;
    });
  }

  async #wake(tx: QueryRunner, template: StatementTemplate, params: Params): Promise<boolean> {
    const woken = (await this.ext.exec(tx, template, params)).rows[0];
    if (woken === undefined) return false;
    const signal = this.ext.dialect.syntax.queuedSignal?.("$1") ?? null;
    if (signal !== null) await tx.executeQuery(CompiledQuery.raw(signal, [String(woken.queue)]));
    return true;
  }

  /** Takes the task's step lock and checks the fence; the task row's id, queue and root. */
  async #fence(tx: QueryRunner, params: Params): Promise<{ queue: unknown; root_id: unknown }> {
    await this.ext.dialect.keyLock.acquire(tx, stepLockKey(String(params.taskId)));
    const row = (await this.ext.exec(tx, FENCE_TEMPLATE, params)).rows[0];
    if (row === undefined) throw new LostLease(String(params.taskId));
    return row as { queue: unknown; root_id: unknown };
  }

  async #done(tx: QueryRunner, params: Params, result: string): Promise<void> {
    await this.ext.exec(tx, DONE_TEMPLATE, { ...params, result });
  }

  /** The children's rows in the order given; `null` for an id with no task (purged). */
  async #children(tx: QueryRunner, ids: readonly string[]): Promise<(Task | null)[]> {
    if (ids.length === 0) return [];
    const rows = (await this.ext.exec(tx, GET_MANY_TEMPLATE, { taskIds: ids })).rows.map(decodeTask);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => byId.get(id) ?? null);
  }
}
