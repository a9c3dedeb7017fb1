/**
 * An in-memory `TaskStore`, written only against `@cairnq/protocol`'s public
 * exports: the same rule definitions the SQL stores compile, evaluated on
 * plain objects. It passes the conformance suite, which is the proof that the
 * kit works for adapters other than ours, and it is handy in unit tests of
 * code that uses a store. One process only; nothing is durable.
 */
/* eslint-disable @typescript-eslint/require-await -- methods are async so that validation errors
   and LostLease reject the returned promise, as the TaskStore contract's callers expect, instead of
   throwing synchronously; most bodies have nothing else to await. */
import type {
  BulkBatchInput,
  ClaimInput,
  CompleteInput,
  FailInput,
  HeartbeatBatchInput,
  HeartbeatInput,
  ListInput,
  ProgressInput,
  PurgeInput,
  QueueDepthGate,
  QueueStats,
  RetryBatchInput,
  RetryOptions,
  ScheduleSlotsInput,
  ScheduleSlotsResult,
  ScheduleTaskStore,
  StoreCapabilities,
  StoreSignal,
  SubmitInput,
  SubmitOutcome,
  SucceedInput,
  Task,
  TaskRef,
} from "@cairnq/protocol";
import type { ParkOutcome, ParkStepInput, RecordStepInput, SendInput, SendOutcome, SpawnStepInput, StepRecord, TaskStepStore } from "@cairnq/protocol";
import { MemoryRows } from "./memory-rows.js";
import { MemorySteps } from "./memory-steps.js";
import type { Expr, GroupCandidates, NormalizedFlowControl, Params, RowTransition, SetTransition } from "@cairnq/protocol/adapter";
import { AlreadyExists, CairnQError, InvalidArgument, LostLease, RATE_LIMIT_SCOPES, scheduleSlotKey, STATUSES } from "@cairnq/protocol";
import type { FlowReadStore, GroupCounts, GroupReadStore, RateLimit, RateLimitScope, RateWindow, RateWindows, TaskGroupInfo } from "@cairnq/protocol";
import {
  answerReprobe,
  applyBranches,
  buildInsert,
  CANCEL,
  CANCEL_BATCH,
  cancelBatchParams,
  claimFlowControl,
  COMPLETE,
  completeParams,
  debounceConflict,
  debounceReadsJournal,
  debounceUpdate,
  decideRow,
  DRAW,
  drawParams,
  FAIL,
  failParams,
  flowAllowance,
  flowLimitedDraws,
  GROUP_HEAD_ROWS,
  groupAllowance,
  groupClaimsInWindow,
  rateWindowAt,
  hasGroupLimits,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  heartbeatBatchParams,
  heartbeatBatchResult,
  heartbeatParams,
  holds,
  inRateWindow,
  joinParentsToWake,
  LIST_ROWS,
  newTaskId,
  normalizeClaim,
  normalizeList,
  normalizeScheduleSlots,
  normalizeSubmit,
  PROBE,
  probeParams,
  PROGRESS,
  progressParams,
  PURGE,
  purgeParams,
  QUEUE_DEPTH_ROWS,
  queueDepthArgs,
  RECOVER,
  requireKey,
  requireLimitedText,
  requireName,
  resolveDebounce,
  resolveKeyConflict,
  RETRY,
  RETRY_BATCH,
  retryBatchParams,
  retryParams,
  rotateGroups,
  RUNNING_OF_NAME,
  SCHEDULED_SUBMIT,
  selectRows,
  slotsToSubmit,
  sortGroupCounts,
  STATS_ROWS,
  SUBMIT,
  SUCCEED,
  succeedParams,
} from "@cairnq/protocol/adapter";

const JSON_PARAMS = ["payload", "metadata", "result", "error"] as const;

/** Decodes the JSON parameters the rules bind as text, as a database would store them. */
function decoded(params: Params): Params {
  const out: Record<string, unknown> = { ...params };
  for (const name of JSON_PARAMS) {
    const value = out[name];
    if (typeof value === "string") out[name] = JSON.parse(value);
  }
  return out;
}

function copy<T>(value: T): T {
  return structuredClone(value);
}

/**
 * A `TaskStore` kept in a `Map`.
 *
 * @example
 * const store = new MemoryStore();
 * const task = await store.submit({ name: "email", payload: { to: "a@b.c" } });
 */
export class MemoryStore implements ScheduleTaskStore, TaskStepStore, GroupReadStore, FlowReadStore {
  readonly capabilities: StoreCapabilities = {
    pushWakeups: false,
    transactionalComplete: false,
    databaseClock: false,
    flowControl: true,
    schedules: true,
    claimReprobe: true,
    durableSteps: true, groups: true,
  };
  queueDepthGate: QueueDepthGate | null = null;
  #closed = false;

  /** The rows, indexed by status (`memory-rows.ts`): a claim reads only the statuses its rules require. */
  readonly #tasks = new MemoryRows();
  readonly #keys = new Map<string, { task_id: string; created_at_ms: number; updated_at_ms: number }>();
  readonly #clock: () => number;
  /** Recorded claims of rate-limited names (the `cairnq_ext_rate_claims` of the SQL stores). */
  #rateClaims: { name: string; claimed_at_ms: number }[] = [];
  /** The group of each task submitted with one (the `cairnq_ext_task_groups` of the SQL stores). */
  readonly #taskGroups = new Map<string, string>();
  /** When each `name\u0000group` was last served (the `served_seq` of `cairnq_ext_groups`); absent = never. */
  readonly #served = new Map<string, number>();
  /** The `groupConcurrency` last enforced per `name\u0000group` (the `concurrency_limit` of `cairnq_ext_groups`). */
  readonly #groupLimits = new Map<string, number | null>();
  /** Recorded claims of rate-limited groups (the `cairnq_ext_group_rate_claims` of the SQL stores). */
  #groupClaims: { name: string; group: string; claimed_at_ms: number }[] = [];
  /** The limit the last claim recording claims under it enforced, per `<scope>\u0000name` (the `cairnq_ext_rate_limits` of the SQL stores). */
  readonly #rateLimits = new Map<string, RateLimit>();
  /** Last submitted slot per schedule (the `cairnq_ext_schedules` of the SQL stores). */
  readonly #lastSlots = new Map<string, number>();

  /** @param options.clock The store's clock in epoch ms. @default Date.now */
  constructor(options: { clock?: () => number } = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#steps = new MemorySteps({
      get: (id) => this.#tasks.get(id),
      set: (row) => this.#tasks.set(row),
      now: () => this.#clock(),
      check: (input) => normalizeSubmit(input, newTaskId()),
      insert: (submit, rootId) => {
        const row = buildInsert(SUBMIT, decoded({ ...submit.params, rootId }), this.#clock());
        this.#tasks.set(row);
        // A grouped child is in its group as a grouped submit's task is.
        if (submit.group !== null) this.#taskGroups.set(row.id, submit.group);
        return row;
      },
    });
  }

  /** Durable steps (`memory-steps.ts`). */
  readonly #steps: MemorySteps;

  async steps(taskId: string): Promise<StepRecord[]> {
    this.#open();
    return this.#steps.steps(taskId);
  }

  async recordStep(input: RecordStepInput): Promise<void> {
    this.#open();
    this.#steps.recordStep(input);
  }

  async parkStep(input: ParkStepInput): Promise<ParkOutcome> {
    this.#open();
    return this.#steps.parkStep(input);
  }

  async spawnStep(input: SpawnStepInput): Promise<string> {
    this.#open();
    return this.#steps.spawnStep(input);
  }

  async send(input: SendInput): Promise<SendOutcome> {
    this.#open();
    return this.#steps.send(input);
  }

  async hasMessage(taskId: string, name: string, sentBeforeMs?: number): Promise<boolean> {
    this.#open();
    return this.#steps.hasMessage(taskId, name, sentBeforeMs);
  }

  async wakeJoin(parentId: string): Promise<boolean> {
    this.#open();
    return this.#steps.wakeJoin(parentId);
  }

  /** Rejects once the store is closed, as every later call does. */
  async connect(): Promise<void> {
    this.#open();
  }

  /**
   * Closes the store: every later call rejects with a fatal `CairnQError`, as
   * a closed SQL store's do, except the wake-up waits (plain sleeps, as on
   * SQLite) and `subscribe`, which stay as they were. Idempotent.
   */
  async close(): Promise<void> {
    this.#closed = true;
  }

  /** Throws once closed; fatal, so a worker whose store was closed under it stops instead of retrying for ever. */
  #open(): void {
    if (this.#closed) {
      throw new CairnQError("this memory store is closed, so the call was not run; create a new MemoryStore (the rows of a closed one are gone with it)", { fatal: true });
    }
  }

  async submit(input: SubmitInput): Promise<Task> {
    return (await this.submitOutcome(input)).task;
  }

  async submitOutcome(input: SubmitInput): Promise<SubmitOutcome> {
    this.#open();
    const submit = normalizeSubmit(input, newTaskId());
    if (this.queueDepthGate !== null) {
      await this.queueDepthGate.acquire(submit.queue, this);
      // The store may have closed while the gate held the submit: it writes nothing then.
      this.#open();
    }
    const now = this.#clock();
    if (submit.key !== null && submit.debounce !== null) {
      const existing = this.#keyTask(submit.key);
      const name = submit.params.name as string;
      const journaled = debounceReadsJournal(name, existing) && this.#steps.steps((existing as Task).id).length > 0;
      const debounced = resolveDebounce(name, existing, journaled);
      if (debounced.kind === "reject") throw debounceConflict(submit.key, name, existing as Task);
      if (debounced.kind === "update") {
        const { rule, params } = debounceUpdate(submit.debounce, debounced.taskId, submit.params.payload as string);
        const row = this.#applyRow(rule, debounced.taskId, params, now);
        if (row !== null) return { task: row, created: false };
      }
    } else if (submit.key !== null) {
      const existing = this.#keyTask(submit.key);
      const decision = resolveKeyConflict(submit.conflict, existing);
      if (decision.kind === "reject") throw new AlreadyExists(submit.key);
      if (decision.kind === "reuse") return { task: copy(existing as Task), created: false };
      if (decision.cancelExisting && existing !== null) this.#applyRow(CANCEL, existing.id, { taskId: existing.id }, now);
    }
    const row = buildInsert(SUBMIT, decoded(submit.params), now);
    this.#tasks.set(row);
    if (submit.key !== null) this.#upsertKey(submit.key, row.id, now);
    if (submit.group !== null) this.#taskGroups.set(row.id, submit.group);
    return { task: copy(row), created: true };
  }

  /** Points `key` at `taskId` (the SQL stores' key upsert): a reused key keeps its `created_at_ms`. */
  #upsertKey(key: string, taskId: string, now: number): void {
    const entry = this.#keys.get(key);
    this.#keys.set(key, { task_id: taskId, created_at_ms: entry?.created_at_ms ?? now, updated_at_ms: now });
  }

  #keyTask(key: string): Task | null {
    const entry = this.#keys.get(key);
    return entry === undefined ? null : (this.#tasks.get(entry.task_id) ?? null);
  }

  async get(id: string): Promise<Task | null> {
    this.#open();
    const row = this.#tasks.get(requireName(id, "id"));
    return row === undefined ? null : copy(row);
  }

  async getByKey(key: string): Promise<Task | null> {
    this.#open();
    const row = this.#keyTask(requireKey(key));
    return row === null ? null : copy(row);
  }

  async getStatus(id: string): Promise<TaskRef | null> {
    this.#open();
    const row = this.#tasks.get(requireName(id, "id"));
    return row === undefined ? null : { id: row.id, status: row.status };
  }

  async getStatusByKey(key: string): Promise<TaskRef | null> {
    this.#open();
    const row = this.#keyTask(requireKey(key));
    return row === null ? null : { id: row.id, status: row.status };
  }

  async list(input: ListInput = {}): Promise<Task[]> {
    this.#open();
    const q = normalizeList(input);
    const params = q as unknown as Params;
    const rows = this.#tasks.candidates(LIST_ROWS, params).filter((t) => holds(LIST_ROWS, { row: t as never, params, nowMs: 0 }));
    const byId = (a: Task, b: Task): number => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
    rows.sort(q.order === "id" ? byId : (a, b) => b.created_at_ms - a.created_at_ms || byId(a, b));
    return rows.slice(q.offset, q.offset + q.limit).map(copy);
  }

  async stats(queue?: string): Promise<QueueStats> {
    this.#open();
    const wanted = queue === undefined ? null : requireLimitedText(queue, "queue");
    const out: QueueStats = {};
    const zero = () => Object.fromEntries(STATUSES.map((s) => [s, 0])) as QueueStats[string];
    if (wanted !== null) out[wanted] = zero();
    const params = { queue: wanted };
    for (const t of this.#tasks.values()) {
      if (!holds(STATS_ROWS, { row: t as never, params, nowMs: 0 })) continue;
      const counts = (out[t.queue] ??= zero());
      counts[t.status] += 1;
    }
    return out;
  }

  async queueDepth(queue: string, maxDepth: number): Promise<number> {
    this.#open();
    const args = queueDepthArgs(queue, maxDepth);
    let queued = 0;
    for (const t of this.#tasks.candidates(QUEUE_DEPTH_ROWS, args)) {
      if (queued >= args.maxDepth) break;
      if (holds(QUEUE_DEPTH_ROWS, { row: t as never, params: args, nowMs: 0 })) queued += 1;
    }
    return args.maxDepth - Math.min(args.maxDepth, queued);
  }

  #applyRow(transition: RowTransition, id: string, params: Params, now: number): Task | null {
    const decision = decideRow(transition, this.#tasks.get(id) ?? null, decoded(params), now);
    switch (decision.kind) {
      case "applied":
        this.#tasks.set(decision.row);
        return copy(decision.row);
      case "lost-lease":
        throw new LostLease(id);
      case "not-matched":
        return null;
    }
  }

  #owned(transition: RowTransition, params: Params): Task {
    return this.#applyRow(transition, params.taskId as string, params, this.#clock()) as Task;
  }

  async cancel(id: string): Promise<Task | null> {
    this.#open();
    const row = this.#applyRow(CANCEL, requireName(id, "id"), { taskId: id }, this.#clock());
    if (row !== null) this.#wakeJoinsOf([row]);
    return row;
  }

  /** A child a cancel ended (no worker settles it) makes its parent due now when it is parked on a join, as a settlement's wake would. */
  #wakeJoinsOf(rows: readonly Task[]): void {
    for (const parentId of joinParentsToWake(rows)) this.#steps.wakeJoin(parentId);
  }

  async cancelByKey(key: string): Promise<Task | null> {
    this.#open();
    const row = this.#keyTask(requireKey(key));
    return row === null ? null : this.cancel(row.id);
  }

  async retry(id: string, options?: RetryOptions): Promise<Task | null> {
    this.#open();
    return this.#applyRow(RETRY, requireName(id, "id"), retryParams(id, options), this.#clock());
  }

  async retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    this.#open();
    const row = this.#keyTask(requireKey(key));
    return row === null ? null : this.retry(row.id, options);
  }

  async cancelBatch(input?: BulkBatchInput): Promise<string[]> {
    this.#open();
    const ids = this.#batch(CANCEL_BATCH, cancelBatchParams(input));
    this.#wakeJoinsOf(ids.map((id) => this.#tasks.get(id) as Task));
    return ids;
  }

  async retryBatch(input?: RetryBatchInput): Promise<string[]> {
    this.#open();
    return this.#batch(RETRY_BATCH, retryBatchParams(input));
  }

  /** The batch's selection, then the single rule's branches on each picked row, through the rule evaluator. */
  #batch(rule: SetTransition, params: Params): string[] {
    const now = this.#clock();
    const picked = selectRows(rule.selection, this.#tasks.candidates(rule.selection.where, params), params, now);
    for (const row of picked) this.#tasks.set(applyBranches(rule.branches, row, params, now).row);
    return picked.map((row) => row.id);
  }

  async purge(input?: PurgeInput): Promise<string[]> {
    this.#open();
    const params = purgeParams(input);
    const doomed = selectRows(PURGE.selection, this.#tasks.values(), params, this.#clock());
    for (const row of doomed) {
      this.#tasks.delete(row.id);
      for (const [key, entry] of this.#keys) if (entry.task_id === row.id) this.#keys.delete(key);
    }
    return doomed.map((row) => row.id);
  }

  async claim(input: ClaimInput): Promise<Task[]> {
    this.#open();
    const claim = normalizeClaim(input);
    const limits = claimFlowControl(input);
    const now = this.#clock();
    // Each rule is handed the rows with the statuses it requires (memory-rows.ts), and still evaluated in full on them.
    const rows = (where: Expr, params: Params): Task[] => this.#tasks.candidates(where, params);
    const probe = probeParams(claim);
    const anything = (): boolean =>
      rows(PROBE.claimable, probe).some((t) => holds(PROBE.claimable, { row: t as never, params: probe, nowMs: now })) ||
      rows(PROBE.expired, probe).some((t) => holds(PROBE.expired, { row: t as never, params: probe, nowMs: now }));
    if (!anything()) {
      answerReprobe(claim, false);
      return [];
    }
    for (const row of selectRows(RECOVER.selection, rows(RECOVER.selection.where, {}), {}, now)) {
      this.#tasks.set(applyBranches(RECOVER.branches, row, {}, now).row);
    }
    const claimed: Task[] = [];
    let draws = claim.draws;
    if (limits !== null) {
      const allowance = new Map<string, number>();
      for (const [name, limit] of limits) {
        const running = rows(RUNNING_OF_NAME, { name }).filter((t) => holds(RUNNING_OF_NAME, { row: t as never, params: { name }, nowMs: now })).length;
        const perMs = limit.rateLimit?.perMs ?? 0;
        const inWindow = this.#rateClaims.filter((c) => c.name === name && inRateWindow(c.claimed_at_ms, now, perMs)).length;
        allowance.set(name, flowAllowance(limit, running, inWindow));
      }
      draws = flowLimitedDraws(draws, allowance);
    }
    for (let index = 0; ; index += 1) {
      const draw = draws(claimed, index);
      if (draw === null) break;
      const params = drawParams(claim, draw.names, draw.limit);
      if (params === null) continue;
      const single = draw.names !== null && draw.names.length === 1 ? (draw.names[0] as string) : null;
      const grouped = single === null ? undefined : limits?.get(single);
      if (single !== null && hasGroupLimits(grouped)) {
        claimed.push(...this.#groupDraw(single, grouped as NormalizedFlowControl, params, now));
        continue;
      }
      for (const row of selectRows(DRAW.selection, rows(DRAW.selection.where, params), params, now)) {
        const next = applyBranches(DRAW.branches, row, params, now).row;
        this.#tasks.set(next);
        claimed.push(copy(next));
      }
    }
    if (limits !== null) {
      for (const row of claimed) {
        const rate = limits.get(row.name)?.rateLimit ?? null;
        if (rate !== null) this.#rateClaims.push({ name: row.name, claimed_at_ms: now });
        if (rate !== null) this.#rateLimits.set(`${RATE_LIMIT_SCOPES.name}\u0000${row.name}`, rate);
      }
      this.#rateClaims = this.#rateClaims.filter((c) => {
        const perMs = limits.get(c.name)?.rateLimit?.perMs;
        return perMs === undefined || inRateWindow(c.claimed_at_ms, now, perMs);
      });
    }
    answerReprobe(claim, claim.reprobe !== null && anything());
    return claimed;
  }

  /** The group of task `taskId` with its counts (`GroupReadStore.taskGroup`), or `null`. */
  async taskGroup(taskId: string): Promise<TaskGroupInfo | null> {
    this.#open();
    const task = this.#tasks.get(requireName(taskId, "taskId"));
    const group = this.#taskGroups.get(taskId);
    if (task === undefined || group === undefined) return null;
    const counts = this.#groupCounts(task.name).find((g) => g.group === group) ?? { queued: 0, running: 0 };
    return { group, queued: counts.queued, running: counts.running, groupConcurrency: this.#groupLimits.get(`${task.name}\u0000${group}`) ?? null };
  }

  /** The rate windows of `name` and of its group `group` under their recorded limits (`FlowReadStore.rateWindows`). */
  async rateWindows(name: string, group: string | null): Promise<RateWindows> {
    this.#open();
    const checked = requireLimitedText(name, "name");
    const groupKey = group === null ? null : requireName(group, "group");
    const now = this.#clock();
    const nameClaims = this.#rateClaims.filter((c) => c.name === checked).map((c) => c.claimed_at_ms);
    const groupClaims = this.#groupClaims.filter((c) => c.name === checked && c.group === groupKey).map((c) => c.claimed_at_ms);
    return {
      name: this.#rateWindow(RATE_LIMIT_SCOPES.name, checked, nameClaims, now),
      group: groupKey === null ? null : this.#rateWindow(RATE_LIMIT_SCOPES.group, checked, groupClaims, now),
    };
  }

  #rateWindow(scope: RateLimitScope, name: string, claimedAtMs: readonly number[], now: number): RateWindow | null {
    const limit = this.#rateLimits.get(`${scope}\u0000${name}`);
    return limit === undefined ? null : rateWindowAt(limit, claimedAtMs, now);
  }

  /** Queued and running tasks of `name` per group (`GroupReadStore.groupStats`). */
  async groupStats(name: string, options: { readonly limit?: number } = {}): Promise<GroupCounts[]> {
    this.#open();
    const checked = requireLimitedText(name, "name");
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidArgument("limit", `groupStats limit must be an integer ≥ 1, got ${String(limit)}`);
    return sortGroupCounts(this.#groupCounts(checked), limit);
  }

  #groupCounts(name: string): GroupCounts[] {
    const byGroup = new Map<string, { group: string; queued: number; running: number }>();
    for (const t of this.#tasks.values()) {
      const group = this.#taskGroups.get(t.id);
      if (group === undefined || t.name !== name || (t.status !== "queued" && t.status !== "running")) continue;
      const entry = byGroup.get(group) ?? { group, queued: 0, running: 0 };
      if (t.status === "queued") entry.queued += 1;
      else entry.running += 1;
      byGroup.set(group, entry);
    }
    return [...byGroup.values()];
  }

  /** One draw of a grouped name: the rotation of `groups.ts` over the tasks' groups, as the SQL stores' group draw. */
  #groupDraw(name: string, limits: NormalizedFlowControl, params: Params, now: number): Task[] {
    const groupLimits = { groupConcurrency: limits.groupConcurrency ?? null, groupRateLimit: limits.groupRateLimit ?? null };
    const running = new Map<string, number>();
    for (const t of this.#tasks.values()) {
      const group = this.#taskGroups.get(t.id);
      if (group !== undefined && t.name === name && t.status === "running") running.set(group, (running.get(group) ?? 0) + 1);
    }
    const drawAll = { ...params, limit: null };
    const due = selectRows(DRAW.selection, this.#tasks.candidates(DRAW.selection.where, drawAll), drawAll, now);
    const ungrouped = due.slice(0, GROUP_HEAD_ROWS).filter((t) => !this.#taskGroups.has(t.id)).map((t) => t.id);
    const byGroup = new Map<string, Task[]>();
    for (const t of due) {
      const group = this.#taskGroups.get(t.id);
      if (group === undefined) continue;
      let list = byGroup.get(group);
      if (list === undefined) byGroup.set(group, (list = []));
      list.push(t);
    }
    const servedOf = (group: string): number => this.#served.get(`${name}\u0000${group}`) ?? 0;
    const rate = groupLimits.groupRateLimit;
    const allowanceOf = (group: string): number => {
      const inWindow = rate === null ? 0 : groupClaimsInWindow(this.#groupClaims.filter((c) => c.name === name && c.group === group).map((c) => c.claimed_at_ms), now, rate.perMs);
      return groupAllowance(groupLimits, running.get(group) ?? 0, inWindow);
    };
    const eligible: GroupCandidates[] = [...byGroup.keys()]
      .sort((a, b) => servedOf(a) - servedOf(b) || (a < b ? -1 : a > b ? 1 : 0))
      .map((group) => {
        const tasks = (byGroup.get(group) as Task[]).sort((a, b) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        return { group, taskIds: tasks.map((t) => t.id), allowance: allowanceOf(group) };
      })
      .filter((g) => g.allowance > 0);
    const rotation = rotateGroups(ungrouped, eligible, params.limit as number);
    const out: Task[] = [];
    for (const id of rotation.taskIds) {
      const next = applyBranches(DRAW.branches, this.#tasks.get(id) as Task, params, now).row;
      this.#tasks.set(next);
      out.push(copy(next));
      const group = rotation.groupOf.get(id);
      if (group !== undefined && rate !== null) this.#groupClaims.push({ name, group, claimed_at_ms: now });
      if (group !== undefined && rate !== null) this.#rateLimits.set(`${RATE_LIMIT_SCOPES.group}\u0000${name}`, rate);
    }
    let highest = 0;
    for (const [key, seq] of this.#served) if (key.startsWith(`${name}\u0000`)) highest = Math.max(highest, seq);
    for (const group of rotation.served) {
      this.#served.set(`${name}\u0000${group}`, highest + 1);
      this.#groupLimits.set(`${name}\u0000${group}`, groupLimits.groupConcurrency);
    }
    // A draw that gave no group work passes the groups with room whose queued tasks are none of them due, in any queue:
    // they go to the back of the served order (groups.ts), so they never come before groups with due work.
    if (ungrouped.length < (params.limit as number) && eligible.length === 0) {
      const waiting = new Set<string>();
      const dueSomewhere = new Set<string>();
      for (const t of this.#tasks.values()) {
        const group = this.#taskGroups.get(t.id);
        if (group === undefined || t.name !== name || t.status !== "queued") continue;
        waiting.add(group);
        if (t.run_at_ms <= now) dueSomewhere.add(group);
      }
      for (const group of waiting) if (!dueSomewhere.has(group) && allowanceOf(group) > 0) this.#served.set(`${name}\u0000${group}`, highest + 1);
    }
    if (rate !== null) this.#groupClaims = this.#groupClaims.filter((c) => c.name !== name || inRateWindow(c.claimed_at_ms, now, rate.perMs));
    return out;
  }

  async submitScheduleSlots(input: ScheduleSlotsInput): Promise<ScheduleSlotsResult> {
    this.#open();
    const batch = normalizeScheduleSlots(input);
    const prepared = batch.slotsMs.map((slotMs) => {
      const key = scheduleSlotKey(batch.schedule, slotMs);
      return { slotMs, key, submit: normalizeSubmit({ ...batch.task, key, conflict: "reject" }, newTaskId()) };
    });
    const now = this.#clock();
    const last = this.#lastSlots.get(batch.schedule) ?? null;
    const todo = new Set(slotsToSubmit(batch.slotsMs, last));
    const submitted: Task[] = [];
    for (const slot of prepared) {
      if (!todo.has(slot.slotMs) || this.#keyTask(slot.key) !== null) continue;
      const row = buildInsert(SCHEDULED_SUBMIT, decoded({ ...slot.submit.params, runAtMs: slot.slotMs }), now);
      this.#tasks.set(row);
      this.#upsertKey(slot.key, row.id, now);
      if (slot.submit.group !== null) this.#taskGroups.set(row.id, slot.submit.group);
      submitted.push(copy(row));
    }
    const latest = batch.slotsMs[batch.slotsMs.length - 1];
    if (todo.size === 0 || latest === undefined) return { submitted, lastSlotMs: last };
    // `todo` holds only slots after `last`, so the batch's latest is the new last slot.
    this.#lastSlots.set(batch.schedule, latest);
    return { submitted, lastSlotMs: latest };
  }

  async heartbeat(input: HeartbeatInput): Promise<Task> {
    this.#open();
    return this.#owned(HEARTBEAT, heartbeatParams(input));
  }

  async heartbeatBatch(input: HeartbeatBatchInput): Promise<Map<string, boolean>> {
    this.#open();
    const params = heartbeatBatchParams(input);
    if (params.taskIds.length === 0) return new Map();
    const now = this.#clock();
    const renewed: Task[] = [];
    for (const row of selectRows(HEARTBEAT_BATCH.selection, this.#tasks.candidates(HEARTBEAT_BATCH.selection.where, params), params, now)) {
      const next = applyBranches(HEARTBEAT_BATCH.branches, row, params, now).row;
      this.#tasks.set(next);
      renewed.push(next);
    }
    return heartbeatBatchResult(params.taskIds, renewed);
  }

  async progress(input: ProgressInput): Promise<Task> {
    this.#open();
    return this.#owned(PROGRESS, progressParams(input));
  }

  async succeed(input: SucceedInput): Promise<Task> {
    this.#open();
    return this.#owned(SUCCEED, succeedParams(input));
  }

  async complete(input: CompleteInput): Promise<Task> {
    this.#open();
    return this.#owned(COMPLETE, completeParams(input));
  }

  async fail(input: FailInput): Promise<Task> {
    this.#open();
    return this.#owned(FAIL, failParams(input));
  }

  async claimWake(_queues: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    await sleep(timeoutMs, signal);
  }

  async taskDoneWake(_taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    await sleep(timeoutMs, signal);
  }

  subscribe(_listener: (signal: StoreSignal) => void): () => void {
    return () => {};
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true || ms <= 0) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref?.();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
