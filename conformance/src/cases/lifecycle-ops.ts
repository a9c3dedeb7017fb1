/**
 * The operations of the randomized lifecycle walk (`lifecycle-random.ts`):
 * each calls the store, predicts its answer with the rules of
 * `@cairnq/protocol` over the model's rows (`lifecycle-model.ts`), fails the
 * walk on any difference, and takes the store's rows into the model.
 */
import type { CompleteInput, Conflict, DebounceOptions, FailInput, ProgressInput, SubmitInput, SucceedInput, Task, TaskStatus } from "@cairnq/protocol";
import { AlreadyExists, LostLease } from "@cairnq/protocol";
import type { Params, RowTransition } from "@cairnq/protocol/adapter";
import {
  applyBranches,
  buildInsert,
  CANCEL,
  CANCEL_BATCH,
  cancelBatchParams,
  COMPLETE,
  completeParams,
  debounceUpdate,
  decideRow,
  DRAW,
  EXPIRED,
  FAIL,
  failParams,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  PROGRESS,
  progressParams,
  heartbeatBatchParams,
  heartbeatParams,
  holds,
  normalizeSubmit,
  PURGE,
  purgeParams,
  RECOVER,
  resolveDebounce,
  resolveKeyConflict,
  RETRY,
  RETRY_BATCH,
  retryBatchParams,
  retryParams,
  selectRows,
  SUBMIT,
  SUCCEED,
  succeedParams,
} from "@cairnq/protocol/adapter";
import { retryDelayMs } from "@cairnq/protocol/sdk";
import { EXPIRY_WAIT_MS, SHORT_LEASE_MS } from "../case.js";
import type { Entry } from "./lifecycle-model.js";
import { decoded, FAR_MS, instantsBetween, rowDiff, SLACK_MS, timed } from "./lifecycle-model.js";
import type { Walk } from "./lifecycle-random.js";

/** The lease of the walk's ordinary claims and heartbeats: longer than any walk, so only the walk's own expiry lets one run out. */
const WALK_LEASE_MS = 120_000;

let payloads = 0;

/** Checks `actual` against the rule's rows at the window's ends and takes it into the model. */
export function check(w: Walk, entry: Entry, atLo: Task, atHi: Task, actual: Task | null | undefined, what: string): void {
  if (actual === null || actual === undefined) w.fail(`${what}: ${entry.label} answered no row`);
  if (actual.id !== entry.row.id) w.fail(`${what}: answered ${actual.id}, expected ${entry.label} (${entry.row.id})`);
  const diff = rowDiff(atLo, atHi, actual);
  if (diff !== null) w.fail(`${what}: ${entry.label} ${diff}`);
  entry.row = actual;
}

/** Checks that `row` is exactly the model's row of `entry`. */
export function same(w: Walk, entry: Entry, row: Task | null, what: string): void {
  check(w, entry, entry.row, entry.row, row, what);
}

/** `entry`'s row as the store has it now, checked against `atLo`/`atHi` (the model's row when not given). */
export async function reread(w: Walk, entry: Entry, what: string, atLo = entry.row, atHi = atLo): Promise<void> {
  check(w, entry, atLo, atHi, await w.t.store.get(entry.row.id), what);
}

function isError(error: unknown, cls: typeof LostLease | typeof AlreadyExists): boolean {
  return error instanceof cls;
}

function thrown(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A single-row transition's call: its answer checked against `decideRow` at the window's ends. */
async function transition(w: Walk, entry: Entry | null, rule: RowTransition, params: Params, call: () => Promise<Task | null>, what: string): Promise<void> {
  const { value, error, window } = await timed(call);
  const row = entry?.row ?? null;
  const lo = decideRow(rule, row, params, window.lo);
  const hi = decideRow(rule, row, params, window.hi);
  const outcomes = [lo, hi];
  const landed = error === undefined && value !== null && value !== undefined;
  if (lo.kind !== hi.kind || (lo.kind === "applied" && hi.kind === "applied" && lo.branch !== hi.branch)) w.fail(`${what}: the walk let the outcome depend on the clock`);
  const want = outcomes[0] as (typeof outcomes)[0];
  w.log.push(`${what} -> ${error !== undefined ? thrown(error).split(":")[0] : landed ? (value).status : "null"}`);
  if (want.kind === "applied") {
    if (error !== undefined) w.fail(`${what} threw ${thrown(error)}, expected branch ${want.branch}`);
    if (!landed) w.fail(`${what} answered null, expected branch ${want.branch}`);
    check(w, entry as Entry, want.row, (hi as typeof want).row, value, what);
    return;
  }
  if (want.kind === "lost-lease") {
    if (!isError(error, LostLease)) w.fail(`${what}: expected LostLease, got ${error === undefined ? JSON.stringify(value?.status) : thrown(error)}`);
  } else {
    if (error !== undefined) w.fail(`${what} threw ${thrown(error)}, expected null`);
    if (value !== null) w.fail(`${what} answered ${value?.status ?? "?"}, expected null (nothing matched)`);
  }
  if (entry !== null) await reread(w, entry, `${what}: the row after a write that matched nothing`);
}

export interface SubmitSpec {
  readonly name: string;
  readonly queue: string;
  readonly priority: number;
  readonly maxAttempts: number;
  /** `runAtDelayMs`, or the debounce's `delayMs`. */
  readonly delayMs: number;
  readonly key: string | null;
  readonly conflict?: Conflict;
  readonly debounce?: Omit<DebounceOptions, "delayMs">;
}

/** A submit (keyed ones through `submitOutcome`), checked against `SUBMIT`, the key rule or the debounce rule. */
export async function submit(w: Walk, spec: SubmitSpec): Promise<void> {
  const input: SubmitInput = {
    name: spec.name,
    queue: spec.queue,
    priority: spec.priority,
    maxAttempts: spec.maxAttempts,
    payload: { n: ++payloads },
    ...(spec.key === null ? {} : { key: spec.key }),
    ...(spec.debounce === undefined ? { runAtDelayMs: spec.delayMs } : { debounce: { delayMs: spec.delayMs, ...spec.debounce } }),
    ...(spec.conflict === undefined ? {} : { conflict: spec.conflict }),
  };
  const existing = spec.key === null ? null : w.model.byKey(spec.key);
  const what =
    `submit ${spec.name.slice(spec.name.lastIndexOf("-") + 1)} ${spec.queue.slice(spec.queue.lastIndexOf("-") + 1)} p${spec.priority} max ${spec.maxAttempts}` +
    `${spec.key === null ? "" : ` key ${spec.key.slice(spec.key.lastIndexOf("-") + 1)} (${existing === null ? "free" : `${existing.label} ${existing.row.status}`})`}` +
    `${spec.debounce === undefined ? ` +${spec.delayMs}ms` : ` debounce ${spec.delayMs}/${spec.debounce.maxDelayMs ?? "-"}`}${spec.conflict === undefined ? "" : ` ${spec.conflict}`}`;
  const { value, error, window } = await timed(() => (spec.key === null ? w.t.store.submit(input).then((task) => ({ task, created: true })) : w.t.store.submitOutcome(input)));
  const normalized = normalizeSubmit(input, "task_PLACEHOLDER");
  const decision =
    spec.key === null
      ? ({ kind: "insert", cancelExisting: false } as const)
      : normalized.debounce !== null
        ? resolveDebounce(spec.name, existing?.row ?? null, false)
        : resolveKeyConflict(normalized.conflict, existing?.row ?? null);
  const logged = (): number => w.log.push(`${what} -> ${error !== undefined ? thrown(error).split(":")[0] : `${value?.created === true ? "new" : "same"} ${w.model.label(value?.task.id ?? "")}`}`);
  if (error !== undefined || value?.created !== true) logged();
  if (decision.kind === "reject") {
    if (!isError(error, AlreadyExists)) w.fail(`${what}: expected AlreadyExists, got ${error === undefined ? "a task" : thrown(error)}`);
    await reread(w, existing as Entry, `${what}: the key's task after the rejected submit`);
    return;
  }
  if (error !== undefined || value === undefined) return w.fail(`${what} threw ${thrown(error)}, expected ${decision.kind}`);
  const { task, created } = value;
  if (decision.kind === "reuse" || decision.kind === "update") {
    const entry = existing as Entry;
    if (created) w.fail(`${what}: created ${task.id}, expected the key's task ${entry.label} back (created: false)`);
    if (decision.kind === "reuse") return same(w, entry, task, what);
    const { rule, params } = debounceUpdate(normalized.debounce!, entry.row.id, JSON.stringify(input.payload));
    const lo = decideRow(rule, entry.row, decoded(params), window.lo);
    const hi = decideRow(rule, entry.row, decoded(params), window.hi);
    if (lo.kind !== "applied" || hi.kind !== "applied") return w.fail(`${what}: the model's debounce update matched nothing`);
    return check(w, entry, lo.row, hi.row, task, what);
  }
  if (!created) w.fail(`${what}: answered ${w.model.label(task.id)} with created: false, expected a new task`);
  if (w.model.tasks.has(task.id) || w.model.purged.has(task.id)) w.fail(`${what}: answered ${w.model.label(task.id)}, an existing task, as new`);
  const params = decoded({ ...normalizeSubmit(input, task.id).params });
  const entry = w.model.add(buildInsert(SUBMIT, params, window.lo), spec.key);
  logged();
  check(w, entry, buildInsert(SUBMIT, params, window.lo), buildInsert(SUBMIT, params, window.hi), task, what);
  if ("cancelExisting" in decision && decision.cancelExisting) {
    const old = existing as Entry;
    const lo = decideRow(CANCEL, old.row, { taskId: old.row.id }, window.lo);
    const hi = decideRow(CANCEL, old.row, { taskId: old.row.id }, window.hi);
    if (lo.kind !== "applied" || hi.kind !== "applied") return w.fail(`${what}: the model's cancel of the replaced task matched nothing`);
    await reread(w, old, `${what}: the task it replaced`, lo.row, hi.row);
  }
}

export interface ClaimSpec {
  readonly queues: readonly string[];
  readonly names: readonly string[] | null;
  readonly limit: number;
  readonly workerId: string;
  readonly leaseMs?: number;
}

/** The rows at `nowMs` after lease recovery (`RECOVER` on every expired row). */
function recoveredAt(rows: readonly Task[], nowMs: number): Task[] {
  return rows.map((row) => (holds(EXPIRED, { row: row as never, params: {}, nowMs }) ? applyBranches(RECOVER.branches, row, {}, nowMs).row : row));
}

/** A claim cycle: lease recovery, then one draw, checked against `RECOVER` and `DRAW` at every instant of its window where they can change. */
export async function claim(w: Walk, spec: ClaimSpec): Promise<Task[]> {
  const leaseMs = spec.leaseMs ?? WALK_LEASE_MS;
  const params = { queues: [...spec.queues], names: spec.names === null ? null : [...spec.names], limit: spec.limit, workerId: spec.workerId, leaseMs };
  const what = `claim [${spec.queues.map((q) => q.slice(q.lastIndexOf("-") + 1)).join(",")}] names ${spec.names === null ? "*" : spec.names.map((n) => n.slice(n.lastIndexOf("-") + 1)).join(",")} limit ${spec.limit} by ${w.worker(spec.workerId)}${leaseMs === WALK_LEASE_MS ? "" : ` lease ${leaseMs}ms`}`;
  const before = w.model.rows();
  const { value, error, window } = await timed(() => w.t.store.claim({ queues: spec.queues, names: spec.names, limit: spec.limit, workerId: spec.workerId, leaseMs }));
  if (error !== undefined || value === undefined) return w.fail(`${what} threw ${thrown(error)}`);
  const got = value.map((row) => row.id);
  w.log.push(`${what} -> ${w.model.labels(got)}`);
  if (new Set(got).size !== got.length) w.fail(`${what} returned a task twice: ${w.model.labels(got)}`);
  for (const id of got) if (!w.model.tasks.has(id)) w.fail(`${what} took ${id}, which the walk never submitted (or purged)`);
  const instants = [...new Set([...instantsBetween(window, before, "run_at_ms"), ...instantsBetween(window, before, "lease_until_ms")])].sort((a, b) => a - b);
  const key = (ids: readonly string[]): string => [...ids].sort().join(" ");
  const predictions: string[][] = [];
  let match: number | null = null;
  for (const nowMs of instants) {
    const taken = selectRows(DRAW.selection, recoveredAt(before, nowMs), params, nowMs).map((row) => row.id);
    predictions.push(taken);
    if (match === null && key(taken) === key(got)) match = nowMs;
  }
  if (match === null) w.fail(`${what} took ${w.model.labels(got)}, the rules give ${predictions.map((p) => w.model.labels(p)).join(" or ")}`);
  const recovered = before.filter((row) => holds(EXPIRED, { row: row as never, params: {}, nowMs: match }));
  if (recovered.length > 0) w.log.push(`  (recovers ${w.model.labels(recovered.map((row) => row.id))})`);
  const lease = (row: Task, nowMs: number): Task => applyBranches(DRAW.branches, row, params, nowMs).row;
  for (const row of value) {
    const entry = w.model.tasks.get(row.id) as Entry;
    const base = recovered.includes(entry.row) ? [applyBranches(RECOVER.branches, entry.row, {}, window.lo).row, applyBranches(RECOVER.branches, entry.row, {}, window.hi).row] : [entry.row, entry.row];
    check(w, entry, lease(base[0] as Task, window.lo), lease(base[1] as Task, window.hi), row, what);
  }
  for (const old of recovered) {
    if (got.includes(old.id)) continue;
    const entry = w.model.tasks.get(old.id) as Entry;
    await reread(w, entry, `${what}: lease recovery of ${entry.label}`, applyBranches(RECOVER.branches, old, {}, window.lo).row, applyBranches(RECOVER.branches, old, {}, window.hi).row);
  }
  return value;
}

/** An owned settlement of `entry` by its owner on its attempt: `complete` (the drain's), `succeed` or `fail`. */
export async function settle(w: Walk, entry: Entry, kind: "complete" | "succeed", workerId = entry.row.worker_id ?? w.t.w1, attempt: number | null = null): Promise<void> {
  const fence = attempt === null ? {} : { attempt };
  const who = `${w.worker(workerId)}${attempt === null ? "" : ` attempt ${attempt}`}`;
  if (kind === "complete") {
    const input: CompleteInput = { taskId: entry.row.id, workerId, result: { done: entry.label }, ...fence };
    await transition(w, entry, COMPLETE, decoded(completeParams(input)), () => w.t.store.complete(input), `complete ${entry.label} by ${who}`);
  } else {
    const input: SucceedInput = { taskId: entry.row.id, workerId, result: { raw: entry.label }, ...fence };
    await transition(w, entry, SUCCEED, decoded(succeedParams(input)), () => w.t.store.succeed(input), `succeed ${entry.label} by ${who}`);
  }
}

/** The worker (and attempt fence) an owned write uses: mostly the owner; sometimes another worker or a stale attempt (→ LostLease). */
function writer(w: Walk, entry: Entry): { workerId: string; attempt: number | null } {
  const owner = entry.row.worker_id ?? w.t.w1;
  const roll = w.rng.next();
  if (roll < 0.1) return { workerId: w.rng.pick(w.workers.filter((id) => id !== owner)), attempt: null };
  if (roll < 0.18) return { workerId: owner, attempt: entry.row.attempt - 1 };
  return { workerId: owner, attempt: w.rng.chance(0.5) ? entry.row.attempt : null };
}

/** A running task to settle: often one with a cancel requested, where "cancel wins" decides the branch. */
function settling(w: Walk): Entry | null {
  const flagged = w.rng.chance(0.5) ? w.pickEntry((e) => e.row.status === "running" && e.row.cancel_requested_at_ms !== null) : null;
  return flagged ?? w.pickEntry((e) => e.row.status === "running");
}

/** Complete (or, sometimes, the raw succeed) of a running task. */
export async function complete(w: Walk, entry = settling(w)): Promise<void> {
  if (entry === null) return;
  const { workerId, attempt } = writer(w, entry);
  await settle(w, entry, w.rng.chance(0.3) ? "succeed" : "complete", workerId, attempt);
}

/** Fail of a running task: retryable with a backoff delay (or none, or a far one), or final. */
export async function fail(w: Walk, entry = settling(w)): Promise<void> {
  const { rng } = w;
  if (entry === null) return;
  const { workerId, attempt } = writer(w, entry);
  const retryable = rng.chance(0.75);
  const delayMs = !retryable ? 0 : rng.chance(0.5) ? retryDelayMs(entry.row.attempt, 40, 160, () => rng.next()) : rng.chance(0.8) ? 0 : FAR_MS;
  const input: FailInput = { taskId: entry.row.id, workerId, error: { code: "walk", at: entry.label }, retryable, delayMs, ...(attempt === null ? {} : { attempt }) };
  const what = `fail ${entry.label} by ${w.worker(workerId)}${attempt === null ? "" : ` attempt ${attempt}`} ${retryable ? `retryable +${delayMs}ms` : "final"}`;
  await transition(w, entry, FAIL, decoded(failParams(input)), () => w.t.store.fail(input), what);
}

/** A heartbeat of `entry` (mostly by its owner). */
export async function heartbeatTask(w: Walk, entry: Entry): Promise<void> {
  const { workerId, attempt } = writer(w, entry);
  const input = { taskId: entry.row.id, workerId, leaseMs: WALK_LEASE_MS, ...(attempt === null ? {} : { attempt }) };
  await transition(w, entry, HEARTBEAT, heartbeatParams(input), () => w.t.store.heartbeat(input), `heartbeat ${entry.label} by ${w.worker(workerId)}${attempt === null ? "" : ` attempt ${attempt}`}`);
}

/** A heartbeat or a progress report of one running task, or a heartbeat batch over some of the running tasks as one worker. */
export async function heartbeat(w: Walk): Promise<void> {
  const { rng, t } = w;
  const running = w.model.of("running");
  if (running.length === 0) return;
  if (rng.chance(0.6)) return heartbeatTask(w, rng.pick(running));
  if (rng.chance(0.3)) {
    const entry = rng.pick(running);
    const { workerId, attempt } = writer(w, entry);
    const input: ProgressInput = { taskId: entry.row.id, workerId, progress: rng.chance(0.7) ? rng.int(0, 100) / 100 : null, message: rng.chance(0.6) ? `at ${w.log.length}` : null, ...(attempt === null ? {} : { attempt }) };
    const what = `progress ${entry.label} ${String(input.progress)} ${JSON.stringify(input.message)} by ${w.worker(workerId)}${attempt === null ? "" : ` attempt ${attempt}`}`;
    await transition(w, entry, PROGRESS, progressParams(input), () => t.store.progress(input), what);
    return;
  }
  const workerId = rng.pick(w.workers);
  const ids = running.filter(() => rng.chance(0.6)).map((e) => e.row.id);
  await heartbeatBatch(w, workerId, ids, WALK_LEASE_MS);
}

async function heartbeatBatch(w: Walk, workerId: string, ids: string[], leaseMs: number): Promise<void> {
  const input = { taskIds: ids, workerId, leaseMs };
  const params = heartbeatBatchParams(input);
  const before = w.model.rows();
  const what = `heartbeatBatch ${w.model.labels(ids)} by ${w.worker(workerId)}${leaseMs === WALK_LEASE_MS ? "" : ` lease ${leaseMs}ms`}`;
  const { value, error, window } = await timed(() => w.t.store.heartbeatBatch(input));
  if (error !== undefined || value === undefined) return w.fail(`${what} threw ${thrown(error)}`);
  w.log.push(`${what} -> ${w.model.labels(value.keys())}`);
  const got = [...value.entries()].map(([id, flag]) => `${id}:${flag}`).join(" ");
  const options = instantsBetween(window, before, "lease_until_ms").map((nowMs) =>
    selectRows(HEARTBEAT_BATCH.selection, before, params, nowMs)
      .sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))
      .map((row) => `${row.id}:${row.cancel_requested_at_ms !== null}`)
      .join(" "),
  );
  if (!options.includes(got)) w.fail(`${what} answered {${got}}, the rules give {${options.join("} or {")}}`);
  for (const id of value.keys()) {
    const entry = w.model.tasks.get(id) as Entry;
    const at = (nowMs: number): Task => applyBranches(HEARTBEAT_BATCH.branches, entry.row, params, nowMs).row;
    await reread(w, entry, `${what}: renewed ${entry.label}`, at(window.lo), at(window.hi));
  }
}

/**
 * A lease run out: a claim with a short lease, or a heartbeat shortening held leases; then the wait past them. The
 * old holder then settles one of them late (its lease is gone: `LostLease`, §5.0), a claim recovers them (`RECOVER`,
 * T12: requeued with the attempt counted, or failed at the last attempt, or canceled when flagged), and the old
 * holder's writes fenced on its old attempt are refused (`LostLease`), even when the claim that recovered a task was
 * its own and took it again.
 */
export async function expire(w: Walk): Promise<void> {
  const { rng } = w;
  const running = w.model.of("running");
  let held: Entry[];
  if (running.length > 0 && rng.chance(0.4)) {
    const workerId = (rng.pick(running).row.worker_id ?? w.t.w1);
    await heartbeatBatch(w, workerId, running.map((e) => e.row.id), SHORT_LEASE_MS);
    held = running.filter((e) => e.row.worker_id === workerId && e.row.lease_until_ms !== null && e.row.lease_until_ms < Date.now() + SHORT_LEASE_MS + 1000);
  } else {
    const rows = await claim(w, { queues: w.queues, names: null, limit: rng.int(1, 3), workerId: rng.pick(w.workers), leaseMs: SHORT_LEASE_MS });
    if (rows.length === 0) return;
    held = rows.map((row) => w.model.tasks.get(row.id) as Entry);
  }
  const holders = held.map((entry) => ({ entry, workerId: entry.row.worker_id as string, attempt: entry.row.attempt }));
  await w.t.sleep(EXPIRY_WAIT_MS);
  w.log.push(`sleep ${EXPIRY_WAIT_MS}ms: short leases run out`);
  if (holders.length === 0) return;
  const late = rng.pick(holders);
  await lateSettle(w, late.entry, late.workerId, rng.chance(0.5) ? late.attempt : null, "before recovery");
  const oldHolder = rng.chance(0.5);
  const recovering = await claim(w, { queues: w.queues, names: null, limit: rng.int(1, 3), workerId: oldHolder ? late.workerId : rng.pick(w.workers) });
  w.log.push(`  (the claim after the expiry took ${w.model.labels(recovering.map((row) => row.id))})`);
  for (const { entry, workerId, attempt } of holders) {
    if (w.model.tasks.get(entry.row.id) !== entry) continue;
    await lateSettle(w, entry, workerId, attempt, "after recovery");
  }
}

/** A settlement by a holder whose lease ran out, fenced on its old attempt (or not): the rules must refuse it. */
async function lateSettle(w: Walk, entry: Entry, workerId: string, attempt: number | null, when: string): Promise<void> {
  const { row } = entry;
  const owns = row.status === "running" && row.worker_id === workerId && (attempt === null || row.attempt === attempt) && (row.lease_until_ms ?? 0) > Date.now() - SLACK_MS;
  if (owns) return w.fail(`late settlement of ${entry.label} ${when}: the walk expected its lease gone, the model has it held by ${w.worker(workerId)}`);
  w.log.push(`  late settlement of ${entry.label} by its old holder ${w.worker(workerId)} ${when}:`);
  await settle(w, entry, w.rng.chance(0.5) ? "complete" : "succeed", workerId, attempt);
}

/** A cancel by id or by key: `CANCEL` on the task (queued, running, finished, or purged). */
export async function cancel(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  if (rng.chance(0.25)) {
    const key = rng.pick(w.keys);
    const entry = model.byKey(key);
    const id = entry?.row.id ?? "task_NONE";
    await transition(w, entry, CANCEL, { taskId: id }, () => t.store.cancelByKey(key), `cancelByKey ${key.slice(key.lastIndexOf("-") + 1)} (${entry?.label ?? "free"})`);
    return;
  }
  const running = rng.chance(0.5);
  const entry = w.pickEntry((e) => (running ? e.row.status === "running" : e.row.status === "queued" || rng.chance(0.2))) ?? w.pickEntry();
  if (entry === null) return;
  await cancelTask(w, entry);
}

/** A cancel of `entry` by id. */
export async function cancelTask(w: Walk, entry: Entry): Promise<void> {
  await transition(w, entry, CANCEL, { taskId: entry.row.id }, () => w.t.store.cancel(entry.row.id), `cancel ${entry.label} (${entry.row.status})`);
}

/** A retry by id or by key: `RETRY` on the task (failed and canceled ones mostly). */
export async function retry(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const resetAttempt = rng.chance(0.4);
  if (rng.chance(0.25)) {
    const key = rng.pick(w.keys);
    const entry = model.byKey(key);
    const params = retryParams(entry?.row.id ?? "task_NONE", { resetAttempt });
    await transition(w, entry, RETRY, params, () => t.store.retryByKey(key, { resetAttempt }), `retryByKey ${key.slice(key.lastIndexOf("-") + 1)} (${entry?.label ?? "free"})${resetAttempt ? " reset" : ""}`);
    return;
  }
  const entry = w.pickEntry((e) => e.row.status === "failed" || e.row.status === "canceled" || rng.chance(0.15));
  if (entry === null) return;
  await retryTask(w, entry, resetAttempt);
}

/** A retry of `entry` by id. */
export async function retryTask(w: Walk, entry: Entry, resetAttempt: boolean): Promise<void> {
  const what = `retry ${entry.label} (${entry.row.status})${resetAttempt ? " reset" : ""}`;
  await transition(w, entry, RETRY, retryParams(entry.row.id, { resetAttempt }), () => w.t.store.retry(entry.row.id, { resetAttempt }), what);
}

export interface BulkFilter {
  readonly name: string | null;
  readonly queue: string | null;
  readonly status: TaskStatus | null;
  readonly limit: number;
}

/** A bulk cancel or retry, batch after batch as the client loops, each batch checked against `CANCEL_BATCH` / `RETRY_BATCH`. */
export async function bulkRun(w: Walk, kind: "cancel" | "retry", filter: BulkFilter, resetAttempt = false): Promise<void> {
  if (filter.name === null && filter.queue === null) throw new Error("a walk's bulk operation names its name or queue: other walks share the store");
  const rule = kind === "cancel" ? CANCEL_BATCH : RETRY_BATCH;
  let afterId: string | null = null;
  for (;;) {
    const input = {
      ...(filter.name === null ? {} : { name: filter.name }),
      ...(filter.queue === null ? {} : { queue: filter.queue }),
      ...(filter.status === null ? {} : { status: filter.status }),
      limit: filter.limit,
      afterId,
      ...(kind === "retry" ? { resetAttempt } : {}),
    };
    const params = kind === "cancel" ? cancelBatchParams(input) : retryBatchParams(input);
    const what = `${kind}Batch ${JSON.stringify({ ...input, afterId: afterId === null ? null : w.model.label(afterId) }).replaceAll(`walk${w.seed}-`, "")}`;
    const { value, error, window } = await timed(() => (kind === "cancel" ? w.t.store.cancelBatch(input) : w.t.store.retryBatch(input)));
    if (error !== undefined || value === undefined) return w.fail(`${what} threw ${thrown(error)}`);
    w.log.push(`${what} -> ${w.model.labels(value)}`);
    const want = selectRows(rule.selection, w.model.rows(), params, window.lo).map((row) => row.id);
    if ([...value].sort().join(" ") !== want.join(" ")) w.fail(`${what} changed ${w.model.labels(value)}, the rules give ${w.model.labels(want)}`);
    for (const id of want) {
      const entry = w.model.tasks.get(id) as Entry;
      const row = entry.row;
      await reread(w, entry, `${what}: ${entry.label}`, applyBranches(rule.branches, row, params, window.lo).row, applyBranches(rule.branches, row, params, window.hi).row);
    }
    if (value.length < filter.limit) return;
    afterId = want[want.length - 1] as string;
  }
}

/** A bulk cancel or retry over this walk's name or queue, maybe with a status. */
export async function bulk(w: Walk): Promise<void> {
  const { rng } = w;
  const kind = rng.chance(0.5) ? "cancel" : "retry";
  const byName = rng.chance(0.5);
  const statuses: (TaskStatus | null)[] = kind === "cancel" ? [null, "queued", "running"] : [null, "failed", "canceled"];
  await bulkRun(
    w,
    kind,
    { name: byName ? rng.pick(w.names) : null, queue: byName && rng.chance(0.6) ? null : rng.pick(w.queues), status: rng.pick(statuses), limit: rng.pick([1, 2, 3, 100]) },
    rng.chance(0.4),
  );
}

/** A purge of finished tasks of a name or queue, checked against `PURGE` (oldest completion first, up to the limit). */
export async function purge(w: Walk): Promise<void> {
  const { rng, t, model } = w;
  const byName = rng.chance(0.5);
  const input = {
    ...(byName ? { name: rng.pick(w.names) } : {}),
    ...(!byName || rng.chance(0.3) ? { queue: rng.pick(w.queues) } : {}),
    ...(rng.chance(0.3) ? { status: rng.pick(["succeeded", "failed", "canceled"] as const) } : {}),
    olderThanMs: rng.pick([0, 0, 30]),
    limit: rng.pick([1, 2, 1000]),
  };
  const params = purgeParams(input);
  const before = model.rows();
  const what = `purge ${JSON.stringify(input).replaceAll(`walk${w.seed}-`, "")}`;
  const { value, error, window } = await timed(() => t.store.purge(input));
  if (error !== undefined || value === undefined) return w.fail(`${what} threw ${thrown(error)}`);
  w.log.push(`${what} -> ${model.labels(value)}`);
  const deleted = new Set(value);
  if (deleted.size !== value.length) w.fail(`${what} returned an id twice`);
  const fits = (nowMs: number): boolean => {
    const eligible = selectRows(PURGE.selection, before, { ...params, limit: null }, nowMs);
    if (deleted.size !== Math.min(params.limit, eligible.length)) return false;
    if (![...deleted].every((id) => eligible.some((row) => row.id === id))) return false;
    const kept = eligible.filter((row) => !deleted.has(row.id)).map((row) => row.completed_at_ms as number);
    const gone = eligible.filter((row) => deleted.has(row.id)).map((row) => row.completed_at_ms as number);
    return kept.length === 0 || gone.length === 0 || Math.max(...gone) <= Math.min(...kept);
  };
  if (!instantsBetween(window, before, "completed_at_ms", params.olderThanMs as number).some(fits)) {
    w.fail(`${what} deleted ${model.labels(value)}, not the oldest finished tasks the rules allow`);
  }
  for (const id of value) model.purge(id);
}

export { read } from "./lifecycle-reads.js";
