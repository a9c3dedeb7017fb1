/**
 * The durable-steps part of the `TaskStore` contract
 * (`capabilities.durableSteps`): the journal, park/wake and message
 * operations a store offers, beside the rules and inputs in `steps.ts`.
 */
import type { TaskStore } from "./store.js";
import type { ParkOutcome, ParkStepInput, RecordStepInput, SendInput, SendOutcome, SpawnStepInput, StepRecord } from "./steps.js";

/**
 * A store with durable steps (`capabilities.durableSteps`; see `steps.ts`).
 * The writes a worker makes for its own task (`recordStep`, `parkStep`,
 * `spawnStep`) are owned writes: they land only while the row is `running`,
 * owned by `workerId` on `attempt`, checked in the statement or transaction
 * that writes, and reject with `LostLease` otherwise, nothing written.
 * `parkStep` and `send` serialise per task, so a message is never missed by
 * a wait parking at the same moment.
 */
export interface TaskStepStore extends TaskStore {
  /** The task's journal, in the order entries were first recorded; `[]` for a task without steps or no task. Read-only. */
  steps(taskId: string): Promise<StepRecord[]>;
  /**
   * Writes a step's outcome (`done` or `failed`) to the journal in one fenced
   * statement; an entry already `done` is never overwritten. `LostLease` when
   * the fence fails.
   */
  recordStep(input: RecordStepInput): Promise<void>;
  /**
   * Parks the task on a sleep, wait or join, in one transaction under the
   * task's lock: a wait whose message is already there (the oldest of its
   * name not yet taken and, when `untilMs` is given, sent before it), a wait
   * `expired` without such a message (`null`), or a join whose children are
   * all terminal, is recorded `done` and answered `ready` without parking;
   * otherwise the entry is recorded `waiting` and the task parked
   * ({@link ParkOutcome}). `LostLease` when the fence fails.
   */
  parkStep(input: ParkStepInput): Promise<ParkOutcome>;
  /**
   * Submits the child and records its id as the step's result in one
   * transaction, once per journal key: when the entry exists, its recorded
   * child id is returned and nothing is submitted. The child's `parentId` is
   * the task, its `rootId` the task's root. `LostLease` when the fence fails.
   */
  spawnStep(input: SpawnStepInput): Promise<string>;
  /**
   * Stores a message for the task (kept until a wait consumes it) and, when
   * the task is parked waiting for that name, makes it due now with the
   * usual `queued` push signal. Rejects with `InvalidArgument` when no task
   * has this id. Works inside `withTransaction` like any write.
   */
  send(input: SendInput): Promise<SendOutcome>;
  /**
   * Whether a message of `name` is stored for the task and not yet taken by a
   * wait — sent before `sentBeforeMs` when that is given, as a wait with a
   * deadline takes only messages sent before it (`parkStep`); `false` for no
   * such task. Read-only, and optional: a task parked on a wait keeps its
   * entry `waiting` until a worker resumes it, so only this read tells a wait
   * whose message has arrived (the task due, waiting for a worker) from one
   * still waiting; `explain` and a wait's `TaskTimeout` say which when the
   * store has it (`messageArrived` in `steps.ts`).
   *
   * @throws InvalidArgument for an empty `taskId` or `name`, or a `sentBeforeMs` that is not an integer ≥ 0 (`hasMessageParams`).
   */
  hasMessage?(taskId: string, name: string, sentBeforeMs?: number): Promise<boolean>;
  /**
   * Makes `parentId` due now when it is parked on a join (called after a
   * child became terminal); `true` when it woke it. The parent checks its
   * children again when it resumes. A worker calls it after it settles a
   * child; the store itself does the same after its `cancel`,
   * `cancelByKey` and `cancelBatch` end a child (no worker settles those),
   * with the same `queued` push signal.
   */
  wakeJoin(parentId: string): Promise<boolean>;
}
