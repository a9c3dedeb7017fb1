/**
 * A `TaskStore` decorator that checks every answer of the store under test:
 * every row against the §4 invariants, every status probe, stats, depth and
 * purge shapes, and what claim and heartbeat_batch may return. Cases talk to
 * the store through it, so each case also checks every row it reads.
 */
import type {
  BulkBatchInput,
  ClaimInput,
  CompleteInput,
  FailInput,
  HeartbeatBatchInput,
  HeartbeatInput,
  ListInput,
  OwnedInput,
  ProgressInput,
  PurgeInput,
  QueueDepthGate,
  QueueStats,
  RefCompleteTaskStore,
  RetryBatchInput,
  RetryOptions,
  ScheduleSlotsInput,
  ScheduleSlotsResult,
  ScheduleTaskStore,
  StoreCapabilities,
  StoreSignal,
  StoreSignalReason,
  SubmitInput,
  SubmitOutcome,
  SucceedInput,
  Task,
  TaskRef,
  TaskStore,
  TransactionalTaskStore,
} from "@cairnq/protocol";
import { isTerminal, STATUSES } from "@cairnq/protocol";
import { TASK_ID_PATTERN } from "@cairnq/protocol/adapter";
import { assertInvariants, assertTaskRef, InvariantViolation } from "./invariants.js";

/** Everything the checked store saw, for cases that reason over a whole run. */
export interface Observations {
  /** Every status any returned row or probe had. */
  readonly statuses: Set<string>;
  /** Every task id any answer contained. */
  readonly ids: Set<string>;
}

export class CheckedStore implements TaskStore {
  readonly #inner: TaskStore;
  readonly observed: Observations = { statuses: new Set(), ids: new Set() };

  constructor(inner: TaskStore) {
    this.#inner = inner;
  }

  /** The store under test, unwrapped. */
  get inner(): TaskStore {
    return this.#inner;
  }

  get capabilities(): StoreCapabilities {
    return this.#inner.capabilities;
  }

  get queueDepthGate(): QueueDepthGate | null {
    return this.#inner.queueDepthGate;
  }

  set queueDepthGate(gate: QueueDepthGate | null) {
    this.#inner.queueDepthGate = gate;
  }

  #row(row: unknown, where: string): Task {
    assertInvariants(row, where);
    this.observed.statuses.add(row.status);
    this.observed.ids.add(row.id);
    return row;
  }

  #maybeRow(row: unknown, where: string): Task | null {
    if (row === null) return null;
    return this.#row(row, where);
  }

  #ref(ref: unknown, where: string): TaskRef | null {
    if (ref === null) return null;
    assertTaskRef(ref, where);
    this.observed.statuses.add(ref.status);
    return ref;
  }

  connect(): Promise<void> {
    return this.#inner.connect();
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  async submit(input: SubmitInput): Promise<Task> {
    const row = this.#row(await this.#inner.submit(input), "submit()");
    if (row.status !== "queued" && (input.key === undefined || input.key === null)) {
      throw new InvariantViolation("submit-queued", `an unkeyed submit returned a '${row.status}' row (T1 inserts 'queued')`, row, "submit()");
    }
    return row;
  }

  async submitOutcome(input: SubmitInput): Promise<SubmitOutcome> {
    const out = await this.#inner.submitOutcome(input);
    if (typeof out !== "object" || out === null || typeof out.created !== "boolean") {
      throw new InvariantViolation("submit-outcome-shape", "submitOutcome() must return { task, created: boolean }", out, "submitOutcome()");
    }
    const row = this.#row(out.task, "submitOutcome().task");
    if (out.created && row.status !== "queued") {
      throw new InvariantViolation("submit-created-queued", `submitOutcome() said created but returned a '${row.status}' row (T1 inserts 'queued')`, row, "submitOutcome()");
    }
    if (!out.created && (input.key === undefined || input.key === null)) {
      throw new InvariantViolation("submit-unkeyed-created", "an unkeyed submit always creates its task; submitOutcome() said created: false", out, "submitOutcome()");
    }
    return { task: row, created: out.created };
  }

  async get(id: string): Promise<Task | null> {
    return this.#maybeRow(await this.#inner.get(id), "get()");
  }

  async getByKey(key: string): Promise<Task | null> {
    return this.#maybeRow(await this.#inner.getByKey(key), "getByKey()");
  }

  async getStatus(id: string): Promise<TaskRef | null> {
    return this.#ref(await this.#inner.getStatus(id), "getStatus()");
  }

  async getStatusByKey(key: string): Promise<TaskRef | null> {
    return this.#ref(await this.#inner.getStatusByKey(key), "getStatusByKey()");
  }

  async list(input?: ListInput): Promise<Task[]> {
    const rows = await this.#inner.list(input);
    if (!Array.isArray(rows)) throw new InvariantViolation("list-array", "list() must return an array of rows", rows, "list()");
    return rows.map((row, i) => this.#row(row, `list()[${i}]`));
  }

  async stats(queue?: string): Promise<QueueStats> {
    const stats = await this.#inner.stats(queue);
    for (const [name, counts] of Object.entries(stats)) {
      const keys = Object.keys(counts).sort();
      if (keys.join() !== [...STATUSES].sort().join()) {
        throw new InvariantViolation("stats-zero-filled", `queue '${name}' counts ${keys.join(", ")}; every status must be present (§5.5)`, stats, "stats()");
      }
      for (const status of STATUSES) {
        const n = counts[status];
        if (!Number.isInteger(n) || n < 0) throw new InvariantViolation("stats-counts", `queue '${name}' ${status} = ${String(n)}`, stats, "stats()");
      }
    }
    return stats;
  }

  async queueDepth(queue: string, maxDepth: number): Promise<number> {
    const depth = await this.#inner.queueDepth(queue, maxDepth);
    if (!Number.isInteger(depth) || depth < 0 || depth > maxDepth) {
      throw new InvariantViolation("depth-range", `queueDepth('${queue}', ${maxDepth}) = ${String(depth)}; headroom is an integer in [0, maxDepth] (§5.6)`, depth, "queueDepth()");
    }
    return depth;
  }

  async cancel(id: string): Promise<Task | null> {
    return this.#maybeRow(await this.#inner.cancel(id), "cancel()");
  }

  async cancelByKey(key: string): Promise<Task | null> {
    return this.#maybeRow(await this.#inner.cancelByKey(key), "cancelByKey()");
  }

  async retry(id: string, options?: RetryOptions): Promise<Task | null> {
    return this.#maybeRow(await this.#inner.retry(id, options), "retry()");
  }

  async retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    return this.#maybeRow(await this.#inner.retryByKey(key, options), "retryByKey()");
  }

  async cancelBatch(input?: BulkBatchInput): Promise<string[]> {
    return this.#batchIds(await this.#inner.cancelBatch(input), input, "cancelBatch()");
  }

  async retryBatch(input?: RetryBatchInput): Promise<string[]> {
    return this.#batchIds(await this.#inner.retryBatch(input), input, "retryBatch()");
  }

  #batchIds(ids: unknown, input: BulkBatchInput | undefined, where: string): string[] {
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== "string" || !TASK_ID_PATTERN.test(id)) || new Set(ids).size !== ids.length) {
      throw new InvariantViolation("batch-ids", `${where} must return the distinct ids of the rows it changed`, ids, where);
    }
    const limit = input?.limit ?? 1000;
    if (ids.length > limit) throw new InvariantViolation("batch-limit", `${where} changed ${ids.length} rows, over its limit ${limit}`, ids, where);
    const after = input?.afterId;
    if (typeof after === "string" && ids.some((id: string) => id <= after)) {
      throw new InvariantViolation("batch-after", `${where} changed a row whose id does not sort after afterId ${after}`, ids, where);
    }
    for (const id of ids as string[]) this.observed.ids.add(id);
    return ids as string[];
  }

  async purge(input?: PurgeInput): Promise<string[]> {
    const ids = await this.#inner.purge(input);
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== "string" || !TASK_ID_PATTERN.test(id)) || new Set(ids).size !== ids.length) {
      throw new InvariantViolation("purge-ids", "purge() must return the distinct ids of the deleted rows (§5.9)", ids, "purge()");
    }
    return ids;
  }

  async claim(input: ClaimInput): Promise<Task[]> {
    const rows = await this.#inner.claim(input);
    if (!Array.isArray(rows)) throw new InvariantViolation("claim-array", "claim() must return an array of rows", rows, "claim()");
    const seen = new Set<string>();
    return rows.map((raw, i) => {
      const row = this.#row(raw, `claim()[${i}]`);
      if (row.status !== "running" || row.worker_id !== input.workerId) {
        throw new InvariantViolation("claimed-running", `a claimed row must be running and owned by the claimer '${input.workerId}' (T2)`, row, `claim()[${i}]`);
      }
      if (seen.has(row.id)) throw new InvariantViolation("claimed-once", `claim() returned ${row.id} twice`, rows, "claim()");
      seen.add(row.id);
      return row;
    });
  }

  async heartbeat(input: HeartbeatInput): Promise<Task> {
    return this.#owned(await this.#inner.heartbeat(input), input, "heartbeat()", true);
  }

  async heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>> {
    const out = await this.#inner.heartbeatBatch(input);
    if (!(out instanceof Map)) throw new InvariantViolation("batch-map", "heartbeatBatch() must return a Map of task id → cancel flag (§5.12)", out, "heartbeatBatch()");
    const requested = [...input.taskIds];
    let cursor = 0;
    for (const [id, flag] of out) {
      const at = requested.indexOf(id, cursor);
      if (at < 0) {
        throw new InvariantViolation("batch-requested-order", `id ${id} is not requested, repeated, or out of the requested order (§14: one entry per renewed id, in request order)`, [...out], "heartbeatBatch()");
      }
      cursor = at + 1;
      if (typeof flag !== "boolean") throw new InvariantViolation("batch-flag-boolean", `the flag of ${id} is ${String(flag)}, not a boolean`, [...out], "heartbeatBatch()");
    }
    return out;
  }

  async progress(input: ProgressInput): Promise<Task> {
    return this.#owned(await this.#inner.progress(input), input, "progress()", true);
  }

  async succeed(input: SucceedInput): Promise<Task> {
    return this.#owned(await this.#inner.succeed(input), input, "succeed()", false);
  }

  async complete(input: CompleteInput): Promise<Task> {
    return this.#owned(await this.#inner.complete(input), input, "complete()", false);
  }

  async fail(input: FailInput): Promise<Task> {
    return this.#owned(await this.#inner.fail(input), input, "fail()", false);
  }

  #owned(raw: unknown, input: OwnedInput, where: string, stillRunning: boolean): Task {
    const row = this.#row(raw, where);
    if (row.id !== input.taskId) throw new InvariantViolation("owned-same-task", `${where} for ${input.taskId} returned row ${row.id}`, row, where);
    if (stillRunning && (row.status !== "running" || row.worker_id !== input.workerId)) {
      throw new InvariantViolation("owned-still-running", `${where} must leave the task running and owned by '${input.workerId}'`, row, where);
    }
    return row;
  }

  claimWake(queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.#inner.claimWake(queues, timeoutMs, signal);
  }

  /** `taskDoneWake`; a row it resolves with (a wake that read the task) must be that task's, terminal, and a valid row. */
  async taskDoneWake(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Task | void> {
    const woke: unknown = await this.#inner.taskDoneWake(taskId, timeoutMs, signal);
    if (woke === undefined) return undefined;
    const row = this.#row(woke, "taskDoneWake()");
    if (row.id !== taskId || !isTerminal(row)) {
      throw new InvariantViolation("done-wake-row", `taskDoneWake(${taskId}) may resolve with that task's terminal row only; got ${row.id} (${row.status})`, row, "taskDoneWake()");
    }
    return row;
  }

  subscribe(listener: (signal: StoreSignal) => void, reasons?: readonly StoreSignalReason[]): () => void {
    return this.#inner.subscribe(listener, reasons);
  }

  /** `submitScheduleSlots` of a schedule store: every inserted row checked, queued, keyed by its slot. */
  async submitScheduleSlots(input: ScheduleSlotsInput): Promise<ScheduleSlotsResult> {
    const inner = this.#inner as Partial<ScheduleTaskStore>;
    if (typeof inner.submitScheduleSlots !== "function") throw new TypeError("the store under test has no submitScheduleSlots method");
    const out = await inner.submitScheduleSlots(input);
    if (typeof out !== "object" || out === null || !Array.isArray(out.submitted)) {
      throw new InvariantViolation("schedule-result", "submitScheduleSlots() must return { submitted: Task[], lastSlotMs }", out, "submitScheduleSlots()");
    }
    const submitted = out.submitted.map((raw, i) => {
      const row = this.#row(raw, `submitScheduleSlots().submitted[${i}]`);
      if (row.status !== "queued" || row.attempt !== 0) throw new InvariantViolation("schedule-queued", "a submitted slot task must be queued with attempt 0 (T1)", row, "submitScheduleSlots()");
      return row;
    });
    return { submitted, lastSlotMs: out.lastSlotMs };
  }

  /**
   * `completeRef` of a store declaring `capabilities.completeRef`: a task ref of the completed task,
   * `succeeded`, or `canceled` when a cancel was requested (§5.15: the terminal statuses `complete` writes).
   */
  async completeRef(input: CompleteInput): Promise<TaskRef> {
    const inner = this.#inner as Partial<RefCompleteTaskStore>;
    if (typeof inner.completeRef !== "function") throw new TypeError("the store under test has no completeRef method");
    const ref = this.#ref(await inner.completeRef(input), "completeRef()");
    if (ref === null) throw new InvariantViolation("complete-ref-result", "completeRef() must return { id, status }, not null", ref, "completeRef()");
    if (ref.id !== input.taskId) throw new InvariantViolation("owned-same-task", `completeRef() for ${input.taskId} returned ref ${ref.id}`, ref, "completeRef()");
    if (ref.status !== "succeeded" && ref.status !== "canceled") {
      throw new InvariantViolation("complete-ref-terminal", "completeRef() must answer the status complete wrote: succeeded, or canceled when a cancel was requested", ref, "completeRef()");
    }
    return ref;
  }

  /** `completeIn` of a transactional store, checked like `complete`. */
  async completeIn<R>(input: OwnedInput, fn: (tx: unknown) => Promise<R>): Promise<{ task: Task; result: R }> {
    const inner = this.#inner as Partial<TransactionalTaskStore>;
    if (typeof inner.completeIn !== "function") throw new TypeError("the store under test has no completeIn method");
    const out = await inner.completeIn(input, fn);
    return { task: this.#owned(out.task, input, "completeIn()", false), result: out.result };
  }
}
