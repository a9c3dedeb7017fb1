/**
 * Validation and normalization of operation inputs into the parameters the
 * rules read. Shared by every store so that bad input fails the same way
 * everywhere, before anything is written: a clear `InvalidArgument`, never a
 * silent coercion.
 */
import type { NormalizedDebounce } from "./debounce.js";
import { normalizeDebounce } from "./debounce.js";
import type { Conflict } from "./conflict.js";
import { CONFLICTS, isConflict } from "./conflict.js";
import type { Params } from "./decide.js";
import { MAX_DELAY_MS, requireDelayMs } from "./delay.js";
import { InvalidArgument } from "./errors.js";
import { describe, isPlainObject } from "./describe.js";
import { fallbackEnvelope } from "./envelope.js";
import { encodeJson, unstorableText } from "./json.js";
import { isTaskStatus, isTerminalStatus, TERMINAL_STATUSES, STATUSES } from "./statuses.js";
import type { TerminalStatus } from "./statuses.js";
import type {
  ClaimInput,
  CompleteInput,
  FailInput,
  HeartbeatBatchInput,
  HeartbeatInput,
  ListInput,
  ListOrder,
  OwnedInput,
  ProgressInput,
  PurgeInput,
  RetryOptions,
  SubmitInput,
  SucceedInput,
} from "./store.js";

/** Default lease (§5.10, §8.1). */
export const DEFAULT_LEASE_MS = 30_000;
/** Default `list` page (§5.4). */
export const DEFAULT_LIST_LIMIT = 100;
/** Default purge batch (§5.9). */
export const DEFAULT_PURGE_LIMIT = 1000;
/** Default attempts (§5.1). */
export const DEFAULT_MAX_ATTEMPTS = 3;
/** Default queue (§3.1). */
export const DEFAULT_QUEUE = "default";
/** Default priority (§3.1): higher is claimed first, so 0 sits between urgent and background work. */
export const DEFAULT_PRIORITY = 0;

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

function fail(argument: string, message: string): never {
  throw new InvalidArgument(argument, message);
}

/**
 * The longest `name`, `queue`, `key`, `correlationId`, `parentId` and
 * `rootId` accepted, in UTF-8 bytes, checked before anything is written.
 *
 * They are sized for Postgres, the tighter backend, so that one input means
 * the same on every backend: a btree index row must fit in a third of a page
 * (2704 bytes), and `cairnq_tasks_claim_name_idx` holds `queue` and `name`
 * together (256 + 1024 bytes plus the status, priority, run time and id
 * leave room to spare); `cairnq_task_keys`' primary key holds `key`,
 * `cairnq_tasks_correlation_idx` and `cairnq_tasks_root_idx` hold
 * `correlation_id` and `root_id`; and a `cairnq_queued` NOTIFY carries the
 * queue (at most 8000 bytes). SQLite would accept more, but a database
 * must stay usable by a Postgres deployment of the same code.
 */
export const TEXT_LIMITS = Object.freeze({
  /** A task name (`cairnq_tasks.name`). */
  name: 1024,
  /** A queue (`cairnq_tasks.queue`; also the NOTIFY payload). */
  queue: 256,
  /** A business key (`cairnq_task_keys.key`). */
  key: 1024,
  /** A correlation id (`cairnq_tasks.correlation_id`). */
  correlationId: 1024,
  /** A parent task id given explicitly (`cairnq_tasks.parent_id`). */
  parentId: 1024,
  /** A root task id given explicitly (`cairnq_tasks.root_id`). */
  rootId: 1024,
});

/** A field whose length {@link TEXT_LIMITS} bounds. */
export type LimitedTextField = keyof typeof TEXT_LIMITS;

/** The length of `text` in UTF-8 bytes (a lone surrogate counts as the 3 bytes of U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * A non-empty string every backend stores exactly as given: no U+0000 and no
 * lone UTF-16 surrogate (Postgres cannot store the first and would turn the
 * second into U+FFFD, so two different inputs could become one).
 */
export function requireName(value: unknown, argument: string): string {
  if (typeof value !== "string" || value.length === 0) {
    fail(argument, `${argument} must be a non-empty string, got ${describe(value)}`);
  }
  return requireStorable(value, argument);
}

/** `value` unchanged when every backend stores it exactly, else `InvalidArgument`. */
function requireStorable(value: string, argument: string): string {
  const problem = unstorableText(value);
  if (problem !== null) fail(argument, `${argument} cannot be stored: ${problem}`);
  return value;
}

/**
 * {@link requireName}, and at most `TEXT_LIMITS[field]` UTF-8 bytes long.
 * Reads (`getByKey`, list filters, …) check it too: a value that cannot be
 * written can never be found, and saying so beats an empty answer.
 *
 * @param argument - How the input is named in the error. @default field
 */
export function requireLimitedText(value: unknown, field: LimitedTextField, argument: string = field): string {
  const text = requireName(value, argument);
  const limit = TEXT_LIMITS[field];
  // Every code unit is at least one byte: only long strings need counting.
  if (text.length > limit / 3) {
    const bytes = utf8Length(text);
    if (bytes > limit) {
      fail(
        argument,
        `${argument} is ${bytes} bytes long in UTF-8, over the limit of ${limit} bytes (TEXT_LIMITS.${field}, sized so every index row fits on Postgres); use a shorter value, e.g. a hash of it`,
      );
    }
  }
  return text;
}

/** A business key: {@link requireLimitedText} for `key`. */
export function requireKey(value: unknown, argument = "key"): string {
  return requireLimitedText(value, "key", argument);
}

/** {@link requireLimitedText}, or `null` for an absent value (`undefined` or `null`). */
export function optionalText(value: unknown, field: LimitedTextField, argument: string = field): string | null {
  if (value === undefined || value === null) return null;
  return requireLimitedText(value, field, argument);
}

/** A message written to the `message` column, or `null`. */
function optionalMessage(value: unknown): string | null {
  const message = value ?? null;
  if (message === null) return null;
  if (typeof message !== "string") fail("message", `message must be a string or null, got ${describe(message)}`);
  return requireStorable(message, "message");
}

/** An integer in `[min, max]`. */
export function requireInt(value: unknown, argument: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
    fail(argument, `${argument} must be ${range}, got ${describe(value)}`);
  }
  return value;
}

function intOr(value: unknown, fallback: number, argument: string, min: number, max?: number): number {
  return value === undefined || value === null ? fallback : requireInt(value, argument, min, max);
}

/** A delay ({@link requireDelayMs}: at most `MAX_DELAY_MS`), `0` when absent. */
function delayOr(value: unknown, argument: string): number {
  return value === undefined || value === null ? 0 : requireDelayMs(value, argument);
}

/** The input object of an operation; `null` or a primitive is rejected, not dereferenced. */
function objectInput<T>(input: T, argument = "input"): NonNullable<T> {
  if (input === null || typeof input !== "object") fail(argument, `${argument} must be an object, got ${describe(input)}`);
  return input;
}

/**
 * `InvalidArgument` naming the first key of `given` (set, not `undefined`)
 * that is not in `keys`: a misspelt or unsupported filter silently ignored
 * would widen a read or a bulk change to every task.
 */
export function requireKnownKeys(given: object, keys: readonly string[], op: string): void {
  const record = given as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (record[key] !== undefined && !keys.includes(key)) {
      fail(key, `'${key}' is not an option of ${op}; the options are ${keys.join(", ")}`);
    }
  }
}

/**
 * A submit's `metadata`: a plain object, `{}` when absent or `null`. An array,
 * a primitive or a class instance (a `Map`, a `Date`) is refused rather than
 * stored as JSON would turn it (`{}`, `{"0": …}`, a string), so that whatever
 * is added to metadata before the store writes it (the trace carrier) cannot
 * hide a value the submit would otherwise refuse.
 *
 * @throws InvalidArgument naming `metadata`.
 */
export function requireMetadata(value: unknown): Record<string, unknown> {
  const metadata = value ?? {};
  if (!isPlainObject(metadata)) fail("metadata", `metadata must be a plain object, got ${describe(metadata)}`);
  return metadata;
}

function stringList(value: unknown, argument: string, field: LimitedTextField | null = null): string[] {
  if (!Array.isArray(value)) fail(argument, `${argument} must be an array of non-empty strings, got ${describe(value)}`);
  return value.map((item, i) =>
    field === null ? requireName(item, `${argument}[${i}]`) : requireLimitedText(item, field, `${argument}[${i}]`),
  );
}

/** A normalized submit: the insert's parameters, plus the key handling. */
export interface NormalizedSubmit {
  readonly key: string | null;
  /** The task's group (an extension, see `groups.ts`), or `null`. */
  readonly group: string | null;
  /** The submit's debounce (an extension, see `debounce.ts`), or `null`. */
  readonly debounce: NormalizedDebounce | null;
  readonly conflict: Conflict;
  readonly queue: string;
  /** Parameters of the `SUBMIT` rule; `taskId` is filled by the caller. */
  readonly params: Params & { readonly taskId: string };
}

/**
 * Validates a submit and encodes its JSON. Generate `taskId` before any
 * transaction opens (§2.4): a replayed transaction must reuse it.
 */
export function normalizeSubmit(input: SubmitInput, taskId: string): NormalizedSubmit {
  objectInput(input);
  const name = requireLimitedText(input.name, "name");
  const queue = input.queue === undefined || input.queue === null ? DEFAULT_QUEUE : requireLimitedText(input.queue, "queue");
  const conflict = input.conflict ?? "reuse";
  if (!isConflict(conflict)) {
    fail("conflict", `conflict must be one of ${CONFLICTS.map((c) => `'${c}'`).join(", ")}, got ${describe(conflict)}`);
  }
  const key = optionalText(input.key, "key");
  const maxAttempts = intOr(input.maxAttempts, DEFAULT_MAX_ATTEMPTS, "maxAttempts", 1, INT32_MAX);
  const priority = intOr(input.priority, DEFAULT_PRIORITY, "priority", INT32_MIN, INT32_MAX);
  const debounce = normalizeDebounce(input.debounce, input);
  const runAtDelayMs = debounce !== null ? debounce.delayMs : delayOr(input.runAtDelayMs, "runAtDelayMs");
  const metadata = requireMetadata(input.metadata);
  return {
    key,
    group: input.group === undefined || input.group === null ? null : requireLimitedText(input.group, "key", "group"),
    debounce,
    conflict,
    queue,
    params: {
      taskId,
      name,
      queue,
      payload: encodeJson(input.payload ?? {}, "payload"),
      metadata: encodeJson(metadata, "metadata"),
      maxAttempts,
      priority,
      runAtDelayMs,
      parentId: optionalText(input.parentId, "parentId"),
      rootId: optionalText(input.rootId, "rootId"),
      correlationId: optionalText(input.correlationId, "correlationId"),
    },
  };
}

function owned(input: OwnedInput): { taskId: string; workerId: string; attempt: number | null } {
  objectInput(input);
  return {
    taskId: requireName(input.taskId, "taskId"),
    workerId: requireName(input.workerId, "workerId"),
    attempt: input.attempt === undefined || input.attempt === null ? null : requireInt(input.attempt, "attempt", 0),
  };
}

/** Lease length: an integer ≥ 1 (ms), at most `MAX_DELAY_MS` (the lease ends `now + leaseMs`). */
export function leaseMsOf(value: unknown): number {
  return value === undefined || value === null ? DEFAULT_LEASE_MS : requireDelayMs(requireInt(value, "leaseMs", 1), "leaseMs");
}

/** Parameters of `HEARTBEAT`. */
export function heartbeatParams(input: HeartbeatInput): Params {
  return { ...owned(input), leaseMs: leaseMsOf(input.leaseMs) };
}

/** Parameters of `HEARTBEAT_BATCH` (`taskIds` may be empty: the store then runs no statement). */
export function heartbeatBatchParams(input: HeartbeatBatchInput): Params & { taskIds: string[] } {
  objectInput(input);
  return {
    taskIds: stringList(input.taskIds, "taskIds"),
    workerId: requireName(input.workerId, "workerId"),
    leaseMs: leaseMsOf(input.leaseMs),
    attempt: null,
  };
}

/**
 * The result of `heartbeat_batch` (§5.12) from the rows the statement renewed:
 * task id → whether a cancel was requested (`cancel_requested_at_ms` non-null),
 * in the order the ids were requested. A requested id with no renewed row lost
 * its lease and is simply absent.
 */
export function heartbeatBatchResult(
  taskIds: readonly string[],
  renewed: Iterable<{ readonly id?: unknown; readonly cancel_requested_at_ms?: unknown }>,
): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const row of renewed) flags.set(String(row.id), row.cancel_requested_at_ms !== null && row.cancel_requested_at_ms !== undefined);
  const out = new Map<string, boolean>();
  for (const id of taskIds) {
    const flag = flags.get(id);
    if (flag !== undefined) out.set(id, flag);
  }
  return out;
}

/** Parameters of `PROGRESS`; `null` keeps the previous value. */
export function progressParams(input: ProgressInput): Params {
  objectInput(input);
  const progress = input.progress ?? null;
  if (progress !== null && (typeof progress !== "number" || !Number.isFinite(progress))) {
    fail("progress", `progress must be a finite number or null, got ${describe(progress)}`);
  }
  return { ...owned(input), progress, message: optionalMessage(input.message) };
}

/** Encodes a result: `null`/absent → SQL NULL (§2.2). */
function resultParam(result: unknown): string | null {
  return result === undefined || result === null ? null : encodeJson(result, "result");
}

/** Parameters of `SUCCEED`. */
export function succeedParams(input: SucceedInput): Params {
  objectInput(input);
  const message = optionalMessage(input.message);
  return { ...owned(input), result: resultParam(input.result), message };
}

/** Parameters of `COMPLETE`. */
export function completeParams(input: CompleteInput): Params {
  // One object of four fields, not a spread of the owned fields grown by one (a settlement of every task passes here).
  const { taskId, workerId, attempt } = owned(input);
  return { taskId, workerId, attempt, result: resultParam(input.result) };
}

/**
 * Encodes a fail's error (`null`/absent → `{}`). When it cannot be encoded,
 * the §5.16 fallback envelope is stored instead: a failure is never lost
 * because its details were unserializable.
 */
export function encodeFailError(error: unknown, retryable: boolean): string {
  try {
    return encodeJson(error ?? {}, "error");
  } catch {
    return encodeJson(fallbackEnvelope(error, retryable), "error");
  }
}

/**
 * A failure's `retryable` flag (§8.6): a boolean, `true` when absent; anything else is refused, so `"no"`
 * never reads as a retry. Shared by `FAIL`'s parameters, where `null` is absent too (a store's input), and
 * `ctx.fail`, whose `FailOptions.retryable` is a boolean: given its `caller`, `null` is refused as well, and
 * the message names the call.
 *
 * @throws InvalidArgument naming `retryable`.
 */
export function requireRetryable(value: unknown, caller?: string): boolean {
  if (value === undefined || (value === null && caller === undefined)) return true;
  if (typeof value !== "boolean") {
    throw new InvalidArgument("retryable", `${caller === undefined ? "" : `${caller}: `}retryable must be a boolean, got ${describe(value)}`);
  }
  return value;
}

/** Parameters of `FAIL`. */
export function failParams(input: FailInput): Params {
  objectInput(input);
  const retryable = requireRetryable(input.retryable);
  return { ...owned(input), error: encodeFailError(input.error, retryable), retryable, delayMs: delayOr(input.delayMs, "delayMs") };
}

/** The keys of `retry`'s options: another (`{ reset: true }`) would requeue without resetting the attempts. */
export const RETRY_OPTION_KEYS = Object.freeze(["resetAttempt"] as const satisfies readonly (keyof RetryOptions)[]);

/** The keys of `purge`'s input: another (`{ queues: [...] }`) would be dropped and widen the purge. */
export const PURGE_OPTION_KEYS = Object.freeze(["olderThanMs", "queue", "status", "name", "limit"] as const satisfies readonly (keyof PurgeInput)[]);

/** Parameters of `CANCEL` / `RETRY`. */
export function retryParams(taskId: string, options: RetryOptions = {}): Params {
  requireKnownKeys(objectInput(options, "options"), RETRY_OPTION_KEYS, "retry");
  const resetAttempt = options.resetAttempt ?? false;
  if (typeof resetAttempt !== "boolean") fail("resetAttempt", `resetAttempt must be a boolean, got ${describe(resetAttempt)}`);
  return { taskId: requireName(taskId, "id"), resetAttempt };
}

/** A normalized claim cycle. */
export interface NormalizedClaim {
  readonly queues: string[];
  readonly workerId: string;
  readonly leaseMs: number;
  readonly names: string[] | null;
  /** The draw planner: the caller's, or one default draw `(names, limit)`. */
  readonly draws: NonNullable<ClaimInput["draws"]>;
  /** Whether the cycle starts with the read-only probe (`ClaimInput.probe`). */
  readonly probe: boolean;
  /** Where the probe after the draws reports (`ClaimInput.reprobe`), or `null` when nobody asked for it; see {@link answerReprobe}. */
  readonly reprobe: ((claimable: boolean) => void) | null;
}

/** Validates a claim cycle (§5.10). */
export function normalizeClaim(input: ClaimInput): NormalizedClaim {
  objectInput(input);
  // A queue named twice is one queue: a store that reads each named queue (a window per queue) would see its rows twice.
  const queues = [...new Set(stringList(input.queues, "queues", "queue"))];
  const names = input.names === undefined || input.names === null ? null : stringList(input.names, "names", "name");
  const limit = intOr(input.limit, 1, "limit", 0);
  const draws = input.draws ?? ((_claimed: readonly unknown[], index: number) => (index === 0 ? { names, limit, last: true } : null));
  if (input.probe !== undefined && typeof input.probe !== "boolean") {
    fail("probe", `probe must be a boolean or undefined, got ${describe(input.probe)}`);
  }
  const probe = input.probe !== false;
  if (input.reprobe !== undefined && input.reprobe !== null && typeof input.reprobe !== "function") {
    fail("reprobe", `reprobe must be a function, null or undefined, got ${describe(input.reprobe)}`);
  }
  const reprobe = input.reprobe ?? null;
  return { queues, workerId: requireName(input.workerId, "workerId"), leaseMs: leaseMsOf(input.leaseMs), names, draws, probe, reprobe };
}

/**
 * Hands a claim's `reprobe` (if it asked for one) whether anything was left to claim. A throwing
 * callback is ignored, as `ClaimInput.reprobe` says: the rows the claim committed still reach the caller.
 */
export function answerReprobe(claim: NormalizedClaim, claimable: boolean): void {
  if (claim.reprobe === null) return;
  try {
    claim.reprobe(claimable);
  } catch {
    // Ignored by contract (see above).
  }
}

/** Parameters of one `DRAW`, or `null` when the draw takes nothing without a statement (§5.10 step 5). */
export function drawParams(claim: NormalizedClaim, names: readonly string[] | null, limit: number): Params | null {
  if (limit <= 0 || (names !== null && names.length === 0) || claim.queues.length === 0) return null;
  return { queues: claim.queues, names: names === null ? null : [...names], limit, workerId: claim.workerId, leaseMs: claim.leaseMs };
}

/** Parameters of the probe's claimable half. */
export function probeParams(claim: NormalizedClaim): Params {
  return { queues: claim.queues, names: claim.names };
}

/** A normalized list query (§5.4). */
export interface NormalizedList {
  readonly status: string | null;
  readonly queue: string | null;
  readonly name: string | null;
  readonly rootId: string | null;
  readonly correlationId: string | null;
  readonly limit: number;
  readonly offset: number;
  readonly order: ListOrder;
  readonly beforeId: string | null;
}

/** The keys `list` takes (§5.4 and the extensions `order`, `beforeId`). */
const LIST_KEYS = ["status", "queue", "name", "rootId", "correlationId", "limit", "offset", "order", "beforeId"] as const satisfies readonly (keyof ListInput)[];

/**
 * Validates `list` filters; `status` must be one of the five; `beforeId`
 * needs `order: "id"`; a key `list` does not take (`parentId`, a typo such
 * as `stauts`) is refused rather than ignored, which would list every task.
 */
export function normalizeList(input: ListInput = {}): NormalizedList {
  requireKnownKeys(objectInput(input), LIST_KEYS, "list");
  if (input.status !== undefined && input.status !== null && !isTaskStatus(input.status)) {
    fail("status", `status must be one of ${STATUSES.join(", ")}, got ${describe(input.status)}`);
  }
  return {
    status: input.status ?? null,
    queue: optionalText(input.queue, "queue"),
    name: optionalText(input.name, "name"),
    rootId: optionalText(input.rootId, "rootId"),
    correlationId: optionalText(input.correlationId, "correlationId"),
    limit: intOr(input.limit, DEFAULT_LIST_LIMIT, "limit", 0),
    offset: intOr(input.offset, 0, "offset", 0),
    order: listOrder(input.order),
    beforeId: listBeforeId(input),
  };
}

function listOrder(order: unknown): ListOrder {
  if (order === undefined || order === null) return "created";
  if (order === "created" || order === "id") return order;
  fail("order", `order must be "created" or "id", got ${describe(order)}`);
}

function listBeforeId(input: ListInput): string | null {
  // A cursor is a task id (or any string bounding one): held to the id columns' limit.
  const beforeId = optionalText(input.beforeId, "rootId", "beforeId");
  if (beforeId !== null && input.order !== "id") {
    fail("beforeId", 'beforeId pages through the id order: pass order: "id" with it (list({ order: "id", beforeId }))');
  }
  return beforeId;
}

/**
 * A purge cutoff (§5.9): how long ago, in milliseconds, a task must have
 * finished to be deleted — a finite number from 0 to `MAX_DELAY_MS` (100
 * years). Retention policies check their cutoffs with it too.
 *
 * The store subtracts the cutoff from its clock (`now - olderThanMs`, a
 * BIGINT parameter on Postgres), so an unbounded one passed here and then
 * failed in the database on one backend ("out of range for type bigint")
 * while the others deleted nothing; 100 years, the bound of every duration
 * the store adds to its clock, keeps that difference in range everywhere
 * and still means "nothing finished that long ago".
 *
 * @param argument - How the input is named in the error. @default "olderThanMs"
 */
export function requireCutoffMs(value: unknown, argument = "olderThanMs"): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > MAX_DELAY_MS) {
    fail(
      argument,
      `${argument} must be a finite number of milliseconds from 0 to ${MAX_DELAY_MS} (MAX_DELAY_MS, 100 years; how long after a task finished it may be deleted), got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * A purge status filter (§5.9): one of {@link TERMINAL_STATUSES}, since
 * queued and running tasks are never purged. Retention policies check their
 * statuses with it too.
 *
 * @param argument - How the input is named in the error. @default "status"
 */
export function requireTerminalStatus(value: unknown, argument = "status"): TerminalStatus {
  if (typeof value !== "string" || !isTerminalStatus(value)) {
    fail(argument, `${argument} must be a terminal status (${TERMINAL_STATUSES.join(", ")}), got ${describe(value)}: queued and running tasks are never purged`);
  }
  return value;
}

/** Parameters of `PURGE` (§5.9): status, when given, must be terminal. */
export function purgeParams(input: PurgeInput = {}): Params & { limit: number } {
  requireKnownKeys(objectInput(input), PURGE_OPTION_KEYS, "purge");
  const olderThanMs = requireCutoffMs(input.olderThanMs ?? 0);
  return {
    olderThanMs: Math.floor(olderThanMs),
    queue: optionalText(input.queue, "queue"),
    status: input.status === undefined || input.status === null ? null : requireTerminalStatus(input.status),
    name: optionalText(input.name, "name"),
    limit: intOr(input.limit, DEFAULT_PURGE_LIMIT, "limit", 1),
  };
}

/** Validates `queueDepth` arguments (§5.6). */
export function queueDepthArgs(queue: unknown, maxDepth: unknown): { queue: string; maxDepth: number } {
  return { queue: requireLimitedText(queue, "queue"), maxDepth: requireInt(maxDepth, "maxDepth", 0) };
}
