/**
 * Durable steps (an extension of protocol v1): a task's journal of recorded
 * steps, parking, messages and child tasks.
 *
 * Terminology:
 * - **journal**: the steps recorded for one task, in the extension table
 *   `cairnq_ext_steps` (one row per step occurrence, deleted with the task).
 * - **step name**: what the handler passed (`"charge"`); its **occurrence**
 *   is the n-th use of that name in one run of the handler, and the journal
 *   key is `name` for the first and `name#n` after (`"page"`, `"page#2"`).
 * - **record**: writing a step's outcome to the journal, fenced by the
 *   attempt that holds the lease, in the statement that checks it — a
 *   worker that lost its lease (a zombie) never records a step.
 * - **park**: a running task gives back its lease and worker slot and
 *   becomes an ordinary `queued` row due at `run_at_ms` = when to look again
 *   (the {@link PARK} transition). The handler runs again from the top then,
 *   recorded steps returning their recorded values.
 * - **message**: a payload sent to a task under a name
 *   (`cairnq.send(taskId, name, payload)`), in `cairnq_ext_messages`; a wait
 *   for that name consumes the oldest message not consumed yet, so a message
 *   sent before the wait is kept for it.
 *
 * Everything here is pure data and validation: the stores compile {@link PARK}
 * like any other transition and run the rest with their own statements.
 */
import type { Params } from "./decide.js";
import { InvalidArgument } from "./errors.js";
import { encodeJson } from "./json.js";
import type { RowTransition } from "./rules.js";
import { FLAG, OWNER, PARAMS } from "./rules.js";
import { x } from "./expr.js";
import { requireDelayMs } from "./delay.js";
import { requireInt, requireName } from "./inputs.js";
import { isTerminalStatus } from "./statuses.js";
import type { TaskStepStore } from "./step-store.js";
import type { OwnedInput, SubmitInput } from "./store.js";

/** What a journal entry records: a `ctx.step`, a sleep, a wait for a message, a child submitted, or a join on children. */
export type StepKind = "step" | "sleep" | "wait" | "spawn" | "join";
/** Every {@link StepKind}. */
export const STEP_KINDS: readonly StepKind[] = ["step", "sleep", "wait", "spawn", "join"];
/**
 * Where a journal entry stands: `done` (its result is final and replays),
 * `failed` (the step threw on attempt `attempt`; a later attempt runs it
 * again), or `waiting` (a sleep, wait or join the task is parked on). A
 * sleep is never written again when it ends: it reads `done` once the
 * store's clock has passed its wake time.
 */
export type StepStatus = "done" | "failed" | "waiting";

/** One journal entry, as `cairnq.steps(taskId)` and `TaskStepStore.steps` return it. */
export interface StepRecord {
  /** The journal key: the step name, with `#n` from the second occurrence on. */
  readonly name: string;
  readonly kind: StepKind;
  readonly status: StepStatus;
  /** The recorded value (JSON) once `done`: a step's return value, a wait's payload (`null` after a timeout), a spawned child's id, a join's child rows. */
  readonly result: unknown;
  /** The error envelope of a step that threw (`failed`), else `null`. */
  readonly error: unknown;
  /** The task's attempt that wrote this entry. */
  readonly attempt: number;
  /** When the entry was last written (ms since epoch). */
  readonly atMs: number;
  /** A sleep's wake time, or a wait's deadline (`null`: none). */
  readonly wakeAtMs: number | null;
  /** What a wait waits for (the message name) or a join (the child ids); `null` for the others. */
  readonly waitingFor: string | readonly string[] | null;
  /** Order of first recording within the task. */
  readonly seq: number;
}

/** A wait without a timeout parks until this instant (the largest a JavaScript `Date` holds), i.e. until a message wakes it. */
export const PARK_FOREVER_AT_MS = 8_640_000_000_000_000;

/**
 * Checks a wake time a handler asked for — `now + ms` of a sleep or a
 * wait's timeout, a `sleepUntil` instant — before anything is written: a
 * safe integer before {@link PARK_FOREVER_AT_MS}. Past it the instant is no
 * `Date` any more (and past 2^53 no longer exact), and the instant itself
 * is reserved for "no timeout", so a wake time there would read as one.
 *
 * @param what - The call as the handler wrote it, for the message: `ctx.sleep('nap', 9007199254740991)`.
 * @throws InvalidArgument naming `argument`.
 * @example
 * ```ts
 * requireWakeAtMs(Date.now() + ms, "ms", `ctx.sleep('${name}', ${ms})`);
 * ```
 */
export function requireWakeAtMs(atMs: number, argument: string, what: string): number {
  if (!Number.isSafeInteger(atMs) || atMs >= PARK_FOREVER_AT_MS) {
    throw new InvalidArgument(
      argument,
      `${what} would wake at ${String(atMs)} ms since the epoch, which is not before ${PARK_FOREVER_AT_MS} (the largest date a JavaScript Date holds, which also means "no timeout"); use a shorter duration, or omit the timeout to wait for a message only`,
    );
  }
  return atMs;
}

/** How a handler writes the call that records each {@link StepKind}, for messages. */
const CALL_OF_KIND: Readonly<Record<StepKind, string>> = { step: "ctx.step", sleep: "ctx.sleep/ctx.sleepUntil", wait: "ctx.waitFor", spawn: "ctx.spawn", join: "ctx.join" };

/**
 * The replay rule: a journal entry answers only a call of the kind that
 * recorded it. A handler that reaches a key recorded by another kind (a
 * `ctx.step("x")` recorded, then `ctx.sleep("x")` on the next run) changed
 * its sequence of step calls; answering from the entry would skip the sleep
 * (or hand a step's value to a wait) and succeed silently, so it is refused.
 *
 * @param key - The journal key reached (`stepKey(name, occurrence)`).
 * @throws InvalidArgument (argument `name`) saying what the journal holds and what the handler called.
 * @example
 * ```ts
 * const entry = journal.get(key);
 * if (entry !== undefined) requireReplayKind(taskId, key, entry.kind, "sleep");
 * ```
 */
export function requireReplayKind(taskId: string, key: string, recorded: StepKind, called: StepKind): void {
  if (recorded === called) return;
  throw new InvalidArgument(
    "name",
    `the journal of task ${taskId} holds a '${recorded}' entry (${CALL_OF_KIND[recorded]}) at '${key}', but the handler called ${CALL_OF_KIND[called]} there: ` +
      `a handler must make the same step calls in the same order on every run, since a resumed task replays its journal by name and occurrence; ` +
      `give the new call a name of its own, or let the tasks started by the old code finish first`,
  );
}

/**
 * The longest step name accepted, in UTF-16 code units — JavaScript's `string.length`, so a character outside
 * the Basic Multilingual Plane (an emoji) counts 2 (the journal's key beside the task id).
 */
export const MAX_STEP_NAME_LENGTH = 200;

/** The journal key of the `occurrence`-th use (1-based) of `name`. */
export function stepKey(name: string, occurrence: number): string {
  return occurrence === 1 ? name : `${name}#${occurrence}`;
}

/** Checks a step name as a handler passed it: a non-empty string without `#` (reserved for occurrences), at most {@link MAX_STEP_NAME_LENGTH} UTF-16 code units. */
export function requireStepName(value: unknown, argument = "name"): string {
  return checkStepName(value, argument, "step name", "");
}

/**
 * Checks a message name given to `send`: the rule of {@link requireStepName},
 * because `ctx.waitFor(name)` waits under a step name — a message whose name
 * no step name can have (`a#2`, 201 UTF-16 code units) could never be taken.
 */
export function requireMessageName(value: unknown, argument = "name"): string {
  return checkStepName(value, argument, "message name", ": ctx.waitFor(name) takes only messages named like a step, so none could ever take this one");
}

function checkStepName(value: unknown, argument: string, noun: string, why: string): string {
  const name = requireName(value, argument);
  if (name.includes("#")) {
    throw new InvalidArgument(argument, `${noun} '${name}' contains '#', which marks occurrences ('page#2' is the second 'page')${why}; choose a name without '#'`);
  }
  if (name.length > MAX_STEP_NAME_LENGTH) throw new InvalidArgument(argument, `${noun} is ${name.length} UTF-16 code units long; at most ${MAX_STEP_NAME_LENGTH} are allowed (JavaScript string length: an emoji counts 2)${why}`);
  return name;
}

const untilMs = x.param("untilMs", "int");
/** One literal shared by both branches, so a column they both clear compiles without a CASE (Postgres types a CASE of bare NULLs as text). */
const NULL = x.lit(null);

/**
 * Park (a durable-steps extension transition): a task this attempt holds
 * gives back its lease and becomes `queued`, due at `untilMs` when given,
 * else `delayMs` from now. `attempt` goes back by one, so parking never uses
 * up `max_attempts`: the claim that resumes the task increments it again.
 * Like every road back to `queued`, it clears `progress` and `message` (the
 * resumed handler reports them again as it replays). A cancel requested
 * while the task ran wins (→ `canceled`), as it does for `complete` and
 * `fail`. The row stays an ordinary v1 row either way.
 */
export const PARK: RowTransition = {
  op: "park",
  clock: "transaction",
  guard: x.and(x.eq(x.col("id"), PARAMS.taskId), OWNER),
  branches: [
    { name: "cancel", to: "canceled", when: FLAG, set: { status: x.lit("canceled"), completed_at_ms: x.now, lease_until_ms: NULL } },
    {
      name: "park",
      to: "queued",
      when: null,
      set: {
        status: x.lit("queued"),
        worker_id: NULL,
        lease_until_ms: NULL,
        run_at_ms: x.coalesce(untilMs, x.add(x.now, PARAMS.delayMs)),
        attempt: x.sub(x.col("attempt"), x.lit(1)),
        progress: NULL,
        message: NULL,
      },
    },
  ],
  onMiss: "lost-lease",
};

/** The parameters {@link PARK} reads beyond the ownership fields. */
export const PARK_PARAMS = { untilMs, delayMs: PARAMS.delayMs } as const;

/** `TaskStepStore.recordStep`'s input: a step's final outcome, written only while this attempt holds the lease. */
export interface RecordStepInput extends OwnedInput {
  /** The journal key (`stepKey(name, occurrence)`). */
  name: string;
  kind: StepKind;
  /** `done` with `result`, or `failed` with `error` (a later attempt runs the step again). */
  status: "done" | "failed";
  /** Order of first recording; kept when an entry is written again. */
  seq: number;
  result?: unknown;
  error?: unknown;
}

/** `TaskStepStore.parkStep`'s input. */
export interface ParkStepInput extends OwnedInput {
  /** The journal key of the sleep, wait or join. */
  name: string;
  kind: "sleep" | "wait" | "join";
  seq: number;
  /** Due this long from now (the store's clock), at most `MAX_DELAY_MS`; ignored when `untilMs` is given. */
  delayMs?: number | null;
  /** Due at this instant: a deadline recorded earlier, or {@link PARK_FOREVER_AT_MS}. */
  untilMs?: number | null;
  /** `wait`: the message name waited for. */
  message?: string | null;
  /** `join`: the child task ids, in the order the result lists them. */
  childIds?: readonly string[] | null;
  /**
   * `wait` with `untilMs`: its deadline has passed (the task was claimed at
   * or after it). The wait never parks then: it takes the oldest message of
   * its name sent before the deadline, else it is recorded `done` with
   * `null` (timed out). A message sent before the deadline may have woken
   * the task and a crash or a lost lease delayed the resume past it (lease
   * recovery requeues at its own now): it is still the wait's answer.
   * @default false
   */
  expired?: boolean | null;
}

/**
 * What `parkStep` did: `parked` (the row is now `queued`, or `canceled` when
 * a cancel was requested), or `ready` without parking — a wait whose message
 * was already there (or whose deadline had passed: `null`), or a join whose
 * children were all terminal — with the value it recorded as done.
 */
export type ParkOutcome = { readonly kind: "parked"; readonly status: "queued" | "canceled" } | { readonly kind: "ready"; readonly result: unknown };

/** `TaskStepStore.spawnStep`'s input: the child is submitted with the journal entry, once. */
export interface SpawnStepInput extends OwnedInput {
  name: string;
  seq: number;
  /** The child's submit input; `parentId` and `rootId` are set by the store from the parent row. */
  child: SubmitInput;
}

/** `TaskStepStore.send`'s input. */
export interface SendInput {
  taskId: string;
  /** The message name a `ctx.waitFor(name)` waits for. */
  name: string;
  /** JSON. @default null */
  payload?: unknown;
}

/** What `send` did: `woke` is true when the task was parked waiting for this name and is now due. */
export interface SendOutcome {
  readonly taskId: string;
  readonly name: string;
  readonly woke: boolean;
}

/** The submit options a spawned child cannot have, in the order they are reported: the step name already makes a spawn happen once, so there is nothing for a key to find or a debounce to coalesce. */
export const SPAWN_REFUSED_OPTIONS = Object.freeze(["debounce", "key"] as const);

/** One of {@link SPAWN_REFUSED_OPTIONS}. */
export type SpawnRefusedOption = (typeof SPAWN_REFUSED_OPTIONS)[number];

/** The first of {@link SPAWN_REFUSED_OPTIONS} a spawn's child input holds (neither `undefined` nor `null`), or `null` when it holds none. */
export function refusedSpawnOption(child: Readonly<Partial<Record<SpawnRefusedOption, unknown>>>): SpawnRefusedOption | null {
  return SPAWN_REFUSED_OPTIONS.find((option) => child[option] !== undefined && child[option] !== null) ?? null;
}

const SPAWN_REFUSALS: Readonly<Record<SpawnRefusedOption, string>> = {
  debounce: "a spawned child cannot be debounced: the step name already makes the spawn happen once",
  key: "a spawned child cannot have a key: the step name already makes the spawn happen once; submit keyed tasks with ctx.submit inside a ctx.step",
};

/**
 * A store's check of a spawn's child input (`spawnStep`'s `child`): an object, holding none of {@link SPAWN_REFUSED_OPTIONS}.
 *
 * @throws InvalidArgument naming what is wrong.
 */
export function requireSpawnChild(child: unknown): SubmitInput {
  if (typeof child !== "object" || child === null) throw new InvalidArgument("child", "spawn needs the child's submit input");
  const refused = refusedSpawnOption(child);
  if (refused !== null) throw new InvalidArgument(refused, SPAWN_REFUSALS[refused]);
  return child as SubmitInput;
}

/** Checks the ownership fields and the journal key of a step write. */
function ownedStep(input: OwnedInput & { name: unknown; seq: unknown }): Params {
  if (typeof input !== "object" || input === null) throw new InvalidArgument("input", "a step write needs an input object");
  const taskId = requireName(input.taskId, "taskId");
  const workerId = requireName(input.workerId, "workerId");
  const attempt = input.attempt === undefined || input.attempt === null ? null : requireInt(input.attempt, "attempt", 0);
  const name = requireName(input.name, "name");
  if (name.length > MAX_STEP_NAME_LENGTH + 12) throw new InvalidArgument("name", `step name is ${name.length} UTF-16 code units long; at most ${MAX_STEP_NAME_LENGTH} are allowed (JavaScript string length: an emoji counts 2)`);
  return { taskId, workerId, attempt, stepName: name, seq: requireInt(input.seq, "seq", 1) };
}

/** Validates and encodes a {@link RecordStepInput}: the parameters of the fenced journal insert. */
export function recordStepParams(input: RecordStepInput): Params & { result: string | null; error: string | null } {
  const base = ownedStep(input);
  if (!STEP_KINDS.includes(input.kind)) throw new InvalidArgument("kind", `step kind must be one of ${STEP_KINDS.join(", ")}, got ${String(input.kind)}`);
  if (input.status !== "done" && input.status !== "failed") throw new InvalidArgument("status", `a recorded step is 'done' or 'failed', got ${String(input.status)}`);
  return {
    ...base,
    kind: input.kind,
    stepStatus: input.status,
    result: input.status === "done" ? encodeJson(input.result ?? null, "step result") : null,
    error: input.status === "failed" ? encodeJson(input.error ?? {}, "step error") : null,
  };
}

/** Validates a {@link ParkStepInput}: the journal entry's and {@link PARK}'s parameters. */
export function parkStepParams(
  input: ParkStepInput,
): Params & { childIds: string[]; message: string | null; waitingFor: string | null; untilMs: number | null; delayMs: number; expired: boolean; messagesBeforeMs: number } {
  const base = ownedStep(input);
  if (input.kind !== "sleep" && input.kind !== "wait" && input.kind !== "join") throw new InvalidArgument("kind", `only a sleep, wait or join parks, got ${String(input.kind)}`);
  // An instant is bounded by the largest date: a wake time or deadline past it would not be exact (see requireWakeAtMs);
  // a delay, which the store adds to its own clock, by MAX_DELAY_MS (see delay.ts).
  const until = input.untilMs === undefined || input.untilMs === null ? null : requireInt(input.untilMs, "untilMs", 0, PARK_FOREVER_AT_MS);
  const delayMs = until === null ? requireDelayMs(input.delayMs ?? 0, "delayMs") : 0;
  const message = input.kind === "wait" ? requireName(input.message, "message") : null;
  const childIds = input.kind === "join" ? [...(input.childIds ?? [])].map((id, i) => requireName(id, `childIds[${i}]`)) : [];
  // A task waiting for itself to finish would stay parked for ever (re-checked, never ready).
  const own = childIds.indexOf(base.taskId as string);
  if (own !== -1) throw new InvalidArgument(`childIds[${own}]`, `a join cannot wait for its own task (${String(base.taskId)}): it would stay parked for ever`);
  const waitingFor = input.kind === "wait" ? JSON.stringify(message) : input.kind === "join" ? JSON.stringify(childIds) : null;
  const expired = input.expired === undefined || input.expired === null ? false : input.expired;
  if (typeof expired !== "boolean") throw new InvalidArgument("expired", `expired must be a boolean, got ${typeof expired}`);
  if (expired && (input.kind !== "wait" || until === null)) throw new InvalidArgument("expired", "only a wait with a deadline (untilMs) expires");
  // A wait takes only messages sent before its deadline; a wait without one (first park, no timeout) takes any.
  const messagesBeforeMs = input.kind === "wait" && until !== null ? until : PARK_FOREVER_AT_MS;
  return { ...base, kind: input.kind, untilMs: until, delayMs, message, childIds, waitingFor, expired, messagesBeforeMs };
}

/** Validates a {@link SendInput}: task id, message name ({@link requireMessageName}) and the encoded payload. */
export function sendParams(input: SendInput): Params & { taskId: string; name: string; payload: string } {
  if (typeof input !== "object" || input === null) throw new InvalidArgument("input", "send needs { taskId, name, payload }");
  return { taskId: requireName(input.taskId, "taskId"), name: requireMessageName(input.name, "name"), payload: encodeJson(input.payload ?? null, "message payload") };
}

/**
 * Validates `TaskStepStore.hasMessage`'s arguments: the parameters of its
 * read, `messagesBeforeMs` being `sentBeforeMs`, or {@link PARK_FOREVER_AT_MS}
 * (any message) when it is not given — the bound a wait's park uses.
 *
 * @throws InvalidArgument naming the argument.
 * @example
 * ```ts
 * hasMessageParams("task_01…", "approved"); // { taskId: "task_01…", name: "approved", messagesBeforeMs: 8640000000000000 }
 * ```
 */
export function hasMessageParams(taskId: unknown, name: unknown, sentBeforeMs?: unknown): Params & { taskId: string; name: string; messagesBeforeMs: number } {
  const before = sentBeforeMs === undefined || sentBeforeMs === null ? PARK_FOREVER_AT_MS : requireInt(sentBeforeMs, "sentBeforeMs", 0, PARK_FOREVER_AT_MS);
  return { taskId: requireName(taskId, "taskId"), name: requireName(name, "name"), messagesBeforeMs: before };
}

/**
 * The send rule's check of the target, given its row as the send's
 * transaction read it (`undefined`: no such row). A missing task and
 * a `succeeded` one are refused: no wait of theirs can ever take the
 * message, so storing it would lose it silently. A `failed` or `canceled`
 * task takes it (`woke: false`): a retry runs its handler again, and a wait
 * of that name then takes the message.
 *
 * @throws InvalidArgument (argument `taskId`) before anything is written.
 * @example
 * ```ts
 * const task = (await exec(tx, TASK_QUEUE_TEMPLATE, params)).rows[0]; // under the task's step lock
 * requireSendTarget(params.taskId, params.name, task); // `task` is a row from here on
 * ```
 */
export function requireSendTarget<T extends { readonly status?: unknown }>(taskId: string, name: string, row: T | undefined): asserts row is T {
  if (row === undefined) throw new InvalidArgument("taskId", `no task has id ${taskId}: was it purged, or is the id from another database?`);
  if (row.status === "succeeded") {
    throw new InvalidArgument(
      "taskId",
      `task ${taskId} has succeeded, so no ctx.waitFor('${name}') of it can ever run: the message was not stored; send to a task that is queued or running (a failed or canceled one keeps it for a retry)`,
    );
  }
}

/** Decodes a journal row (snake_case columns, JSON as text) into a {@link StepRecord}. */
export function decodeStepRow(row: Readonly<Record<string, unknown>>): StepRecord {
  const json = (value: unknown): unknown => (value === null || value === undefined ? null : typeof value === "string" ? JSON.parse(value) : value);
  const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
  return {
    name: String(row.name),
    kind: String(row.kind) as StepKind,
    status: String(row.status) as StepStatus,
    result: json(row.result),
    error: json(row.error),
    attempt: Number(row.attempt),
    atMs: Number(row.at_ms),
    wakeAtMs: num(row.wake_at_ms),
    waitingFor: json(row.waiting_for) as StepRecord["waitingFor"],
    seq: Number(row.seq),
  };
}

/**
 * The parents whose join a client transition may have completed (a cancel
 * that ended children no worker will settle): the `parent_id` of every row
 * the transition left terminal. A store makes each of them due now with the
 * `queued` push signal, as a settlement's wake does, so a joining parent is
 * not left to its re-check.
 */
export function joinParentsToWake(rows: readonly { readonly parent_id?: unknown; readonly status?: unknown }[]): string[] {
  const parents: string[] = [];
  for (const row of rows) if (typeof row.parent_id === "string" && isTerminalStatus(String(row.status))) parents.push(row.parent_id);
  return parents;
}

/**
 * The journal entry a queued task is parked on: its latest `waiting` entry,
 * or `null` when it has none (not parked). What `explain` and a `TaskTimeout`
 * say a parked task waits for.
 */
export function parkedOn(steps: readonly StepRecord[]): StepRecord | null {
  let latest: StepRecord | null = null;
  for (const step of steps) if (step.status === "waiting" && (latest === null || step.seq > latest.seq)) latest = step;
  return latest;
}

/**
 * Whether one child holds a join back: it exists and has not finished. A join is satisfied when none of its
 * children does (a purged child, `null`, counts as finished: the join returns `null` for it). The rule every
 * store's park applies, and what `explain` reads to say a join is satisfied.
 *
 * @example
 * ```ts
 * const satisfied = !children.some(holdsJoin);
 * ```
 */
export function holdsJoin(child: { readonly status: string } | null): boolean {
  return child !== null && !isTerminalStatus(child.status);
}

/**
 * Whether the message a parked wait waits for has arrived: `store.hasMessage`
 * for the entry's message name, bounded by its deadline when it has one (the
 * message the wait takes when the task resumes). The entry stays `waiting`
 * until then, so without this read a task already woken by its message reads
 * as still waiting for it. `undefined` when `step` is not a `waiting` wait or
 * the store has no `hasMessage`; a failed read rejects.
 *
 * @example
 * ```ts
 * const parked = parkedOn(await store.steps(id));
 * const arrived = parked === null ? undefined : await messageArrived(store, id, parked);
 * ```
 */
export async function messageArrived(store: Pick<TaskStepStore, "hasMessage">, taskId: string, step: StepRecord): Promise<boolean | undefined> {
  if (step.kind !== "wait" || step.status !== "waiting" || typeof step.waitingFor !== "string" || typeof store.hasMessage !== "function") return undefined;
  const deadline = step.wakeAtMs === null || step.wakeAtMs >= PARK_FOREVER_AT_MS ? undefined : step.wakeAtMs;
  return store.hasMessage(taskId, step.waitingFor, deadline);
}
