/**
 * Durable steps on the worker side: what `ctx.step`, `ctx.sleep`,
 * `ctx.sleepUntil`, `ctx.waitFor`, `ctx.spawn` and `ctx.join` do for one
 * handler call (rules and words in `@cairnq/protocol` `steps.ts`).
 *
 * - The journal is read once, on the first step-family call of a call (a
 *   handler that never uses steps costs nothing).
 * - Every call of a step-family method takes the next **occurrence** of its
 *   name (`page`, `page#2`, …), so a loop replays in order. Two uses of one
 *   name in flight at once could not be told apart on replay: refused.
 * - A `done` entry answers from the journal without running anything.
 * - **Parking** ends the call: the store made the row `queued` (or
 *   `canceled`), the context is settled, the call's slot and heartbeat are
 *   let go of, and the handler's promise is left pending for ever — the
 *   handler runs again from the top when the task is claimed next.
 * - A park first waits for the call's **running** steps and spawns (begun
 *   before it, e.g. `Promise.all([ctx.step(…), ctx.sleep(…)])`) to record.
 *   The owned-write fence compares the worker and the attempt, and parking
 *   does not bump the attempt: a step recording after the park could land
 *   under the next call of the same worker, which had already run the step
 *   itself. Recording first keeps "a step's code runs once to a recorded
 *   result"; a step begun while a park is being written waits for its
 *   outcome (parked: the step does not run in this call).
 * - A sleep already due when reached (`sleep(name, 0)`, `sleepUntil` a past
 *   instant) does not park: it is recorded `done` and the call goes on.
 * - A sleep or a wait's deadline is known to have passed when the claimed
 *   row's `run_at_ms` has reached the recorded wake time: a parked row only
 *   becomes due at that time, and every later write of `run_at_ms` (a
 *   message, a retry, lease recovery) is at a later instant — so no clock of
 *   this process is compared with the database's. A sleep is then over; a
 *   wait asks the store (`expired`), because a message sent before the
 *   deadline may be waiting for it: it woke the task, and a crash or a lost
 *   lease delayed the resume past the deadline (lease recovery requeues at
 *   its own now). Its answer must not depend on that crash.
 */
import type { ParkOutcome, StepKind, StepRecord, SubmitInput, Task, TaskDef, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { InvalidArgument, LostLease, MAX_DELAY_MS, PARK_FOREVER_AT_MS, stepKey, TaskError, UnsupportedBackend } from "@cairnq/protocol";
import type { SpawnRefusedOption } from "@cairnq/protocol/adapter";
import { encodeJson, refusedSpawnOption, requireDelayMs, requireReplayKind, requireStepName, requireWakeAtMs } from "@cairnq/protocol/adapter";
import { childLineage, envelopeFromThrown, requireGroupSupport, SUBMIT_OPTION_KEYS, submitInputOf } from "@cairnq/protocol/sdk";
import { checkOptions } from "@cairnq/runtime";
import type { StepSpans } from "./step-spans.js";
import type { ChildSubmitOptions, SpawnOptions } from "./task-context.js";

/** What a step's function receives. */
export interface StepInfo {
  /**
   * A key stable across every attempt and resume of this step occurrence
   * (`<task id>:<step key>`): pass it as the idempotency key of an external
   * call (a payment API's `Idempotency-Key`), so a step that ran but whose
   * record was lost (a crash between the call and the record) is not charged
   * twice when it runs again.
   */
  readonly idempotencyKey: string;
  /** The attempt running the step now. */
  readonly attempt: number;
}

/** Options of `ctx.waitFor`. */
export interface WaitForOptions {
  /** Resolve with `null` when no message came within this long after the wait began; at most `MAX_DELAY_MS`. @default no timeout */
  timeoutMs?: number;
}

/** Every key of {@link WaitForOptions}: any other throws, as every options object of CairnQ does. */
const WAIT_FOR_OPTION_KEYS: readonly (keyof WaitForOptions)[] = ["timeoutMs"];

/** A join re-checks its children at least this often, for children ended without a worker settling them or a cancel waking it (a lease expiry that failed a child). */
export const JOIN_RECHECK_MS = 30_000;

/** What the steps of one call need of their context. @internal */
export interface StepHost {
  readonly store: TaskStore;
  readonly taskId: string;
  /** The task's name (for step spans). */
  readonly taskName: string;
  readonly workerId: string;
  readonly attempt: number;
  readonly rootId: string | null;
  readonly correlationId: string | null;
  /** The claimed row's `run_at_ms`. */
  readonly runAtMs: number;
  /** The call handles several tasks (a batch handler): every step method throws `InvalidArgument` first. */
  readonly inBatch: boolean;
  /** Step spans and spawned children's trace context, with `tracing` on; else `null`. */
  readonly spans: StepSpans | null;
  /** The worker's clock, for `sleepUntil`'s delay. */
  now(): number;
  /** Throws `LostLease` when the context is lost or settled. */
  throwIfGone(what: string): void;
  /** A store write answered `LostLease`. */
  markLost(): void;
  /** The store parked the task: settle the context and end the call. */
  parked(status: "queued" | "canceled"): void;
}

const NEVER: Promise<never> = new Promise<never>(() => {});

/** The steps of one handler call. @internal */
export class CallSteps {
  readonly #host: StepHost;
  #journal: Promise<Map<string, StepRecord>> | null = null;
  readonly #occurrences = new Map<string, number>();
  readonly #inFlight = new Set<string>();
  #seq = 0;
  #parked = false;
  /** Steps and spawns of this call from their call to their settling: a park waits for them to record. */
  readonly #running = new Set<Promise<unknown>>();
  /** The park write in flight, if any: a step begun meanwhile waits for it. */
  #parking: Promise<unknown> | null = null;
  /** The sleep, wait or join of this call not settled yet (a parked one never is). */
  #waiting: { readonly what: string } | null = null;
  /** Set when a second sleep, wait or join began beside a pending one: neither parks, the call fails with it. */
  #refusal: TaskError | null = null;
  /** The key of the step whose function is being called synchronously now: a step method called then is nested. */
  #callingFn: string | null = null;

  constructor(host: StepHost) {
    this.#host = host;
  }

  step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>): Promise<T> {
    return this.#track(this.#step(name, fn));
  }

  async #step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>): Promise<T> {
    this.#refuseMisuse("step");
    if (typeof fn !== "function") throw new InvalidArgument("fn", `ctx.step('${String(name)}', fn) needs a function to run`);
    await this.#afterParking();
    const { key, occurrence, entry } = await this.#begin("step", name);
    try {
      if (entry?.status === "done") return entry.result as T;
      const host = this.#host;
      const run = (): Promise<T> => this.#runStep(key, entry, fn);
      return await (host.spans === null ? run() : host.spans.run({ name, occurrence, taskId: host.taskId, taskName: host.taskName, attempt: host.attempt }, run));
    } finally {
      this.#inFlight.delete(name);
    }
  }

  /** Runs a step's function and records its outcome. */
  async #runStep<T>(key: string, entry: StepRecord | undefined, fn: (info: StepInfo) => T | Promise<T>): Promise<T> {
    let value: T;
    try {
      value = await this.#call(key, fn);
    } catch (err) {
      await this.#recordFailure(key, entry, err);
      throw err;
    }
    // Through the JSON boundary, as a task result: a replay returns exactly what the first run returned.
    let encoded: string;
    try {
      encoded = encodeJson(value === undefined ? null : value, `the result of step '${key}'`);
    } catch (err) {
      // The function ran (its side effect is done) and would most likely return the same value again: a retry would
      // only repeat the side effect. Fails for good, as a handler's unserializable result does.
      const unstorable = unserializableStepResult(this.#host.taskId, key, err);
      await this.#recordFailure(key, entry, unstorable);
      throw unstorable;
    }
    const result: unknown = JSON.parse(encoded);
    await this.#write(() => this.#store().recordStep({ ...this.#owned(), name: key, kind: "step", status: "done", seq: entry?.seq ?? this.#nextSeq(), result }));
    return result as T;
  }

  /** Calls a step's function with {@link CallSteps.#callingFn} set while it runs synchronously (its part before its first `await`). */
  #call<T>(key: string, fn: (info: StepInfo) => T | Promise<T>): T | Promise<T> {
    this.#callingFn = key;
    try {
      return fn({ idempotencyKey: `${this.#host.taskId}:${key}`, attempt: this.#host.attempt });
    } finally {
      this.#callingFn = null;
    }
  }

  async sleep(name: string, ms: number): Promise<void> {
    this.#refuseMisuse("sleep");
    const delayMs = requireDelayMs(ms, "ms", `ctx.sleep('${String(name)}', ${String(ms)})`);
    requireWakeAtMs(this.#host.now() + delayMs, "ms", `ctx.sleep('${String(name)}', ${delayMs})`);
    await this.#oneAtATime(`ctx.sleep('${String(name)}')`, () => this.#sleep(name, { delayMs }));
  }

  async sleepUntil(name: string, until: Date | number): Promise<void> {
    this.#refuseMisuse("sleepUntil");
    const at = until instanceof Date ? until.getTime() : until;
    if (typeof at !== "number" || !Number.isFinite(at)) throw new InvalidArgument("until", "ctx.sleepUntil(name, until) needs a Date or epoch milliseconds");
    const untilMs = requireWakeAtMs(Math.ceil(at), "until", `ctx.sleepUntil('${String(name)}', ${at})`);
    const delayMs = Math.max(0, Math.ceil(at - this.#host.now()));
    // A store refuses a delay past MAX_DELAY_MS (it adds a delay to its own clock): an instant further out
    // parks on the instant itself, where the skew between this clock and the store's is noise.
    await this.#oneAtATime(`ctx.sleepUntil('${String(name)}')`, () => this.#sleep(name, delayMs <= MAX_DELAY_MS ? { delayMs } : { untilMs }));
  }

  async #sleep(name: string, due: { delayMs: number } | { untilMs: number }): Promise<void> {
    const { key, entry } = await this.#begin("sleep", name);
    try {
      return await this.#sleepFrom(key, entry, due);
    } finally {
      this.#inFlight.delete(name);
    }
  }

  async #sleepFrom(key: string, entry: StepRecord | undefined, due: { delayMs: number } | { untilMs: number }): Promise<void> {
    if (entry?.status === "done") return;
    if (entry === undefined && "delayMs" in due && due.delayMs === 0) {
      // Already due: parking would give the slot back only to claim the task again at once (two commits
      // and a replay of the handler; a sleep-0 round trip 5 commits → 4). Recorded done, fenced like a
      // step, so the journal shows it and a replay passes it without a write.
      await this.#write(() => this.#store().recordStep({ ...this.#owned(), name: key, kind: "sleep", status: "done", seq: this.#nextSeq(), result: null }));
      return;
    }
    if (entry !== undefined && entry.wakeAtMs !== null) {
      // Over once the store's clock passed the wake time (the journal then reads `done`) or the task was
      // claimed at or after it: no write either way, so a resumed sleep costs nothing on the latency path.
      if (this.#host.runAtMs >= entry.wakeAtMs) return;
      await this.#park({ name: key, kind: "sleep", seq: entry.seq, untilMs: entry.wakeAtMs });
      return;
    }
    await this.#park({ name: key, kind: "sleep", seq: this.#nextSeq(), ...due });
  }

  async waitFor<T = unknown>(name: string, options?: WaitForOptions): Promise<T | null> {
    this.#refuseMisuse("waitFor");
    const opts = checkOptions(options, "ctx.waitFor", WAIT_FOR_OPTION_KEYS) as WaitForOptions;
    const timeoutMs = opts.timeoutMs === undefined ? null : requireDelayMs(opts.timeoutMs, "timeoutMs", `ctx.waitFor('${String(name)}', { timeoutMs: ${String(opts.timeoutMs)} })`);
    if (timeoutMs !== null) requireWakeAtMs(this.#host.now() + timeoutMs, "timeoutMs", `ctx.waitFor('${String(name)}', { timeoutMs: ${timeoutMs} })`);
    return this.#oneAtATime(`ctx.waitFor('${String(name)}')`, async () => {
      const { key, entry } = await this.#begin("wait", name);
      try {
        return await this.#waitFrom<T>(name, key, entry, timeoutMs);
      } finally {
        this.#inFlight.delete(name);
      }
    });
  }

  async #waitFrom<T>(name: string, key: string, entry: StepRecord | undefined, timeoutMs: number | null): Promise<T | null> {
    if (entry?.status === "done") return entry.result as T | null;
    if (entry?.status === "waiting") {
      const deadline = entry.wakeAtMs ?? PARK_FOREVER_AT_MS;
      // Past the deadline the store answers without parking: a message sent before it, else null.
      const expired = deadline < PARK_FOREVER_AT_MS && this.#host.runAtMs >= deadline;
      return (await this.#park({ name: key, kind: "wait", seq: entry.seq, message: name, untilMs: deadline, expired })) as T | null;
    }
    const first = timeoutMs === null ? { untilMs: PARK_FOREVER_AT_MS } : { delayMs: timeoutMs };
    return (await this.#park({ name: key, kind: "wait", seq: this.#nextSeq(), message: name, ...first })) as T | null;
  }

  spawn(name: string, task: TaskDef | string, payload: unknown, options?: SpawnOptions): Promise<string> {
    return this.#track(this.#spawn(name, task, payload, options));
  }

  async #spawn(name: string, task: TaskDef | string, payload: unknown, given?: SpawnOptions): Promise<string> {
    this.#refuseMisuse("spawn");
    // The check client.submit makes: a misspelt option would otherwise be dropped.
    checkOptions(given, "ctx.spawn", SUBMIT_OPTION_KEYS);
    // Read as ctx.submit's: a JS caller's options are not held to the type.
    const options: ChildSubmitOptions = given ?? {};
    // The store refuses these too, but as an InvalidArgument, which fails the attempt as retryable: every retry would throw again.
    const refused = refusedSpawnOption(options);
    if (refused !== null) throw spawnOptionRefused(this.#host.taskId, name, refused);
    const def: TaskDef = typeof task === "string" ? { name: task } : task;
    const child = submitInputOf(def, payload, {
      ...options,
      ...childLineage({ id: this.#host.taskId, root_id: this.#host.rootId, correlation_id: this.#host.correlationId }, options),
    });
    // As ctx.submit: a store without groups would drop the child's group (and run it outside its group's limits).
    requireGroupSupport(this.#host.store, child);
    await this.#afterParking();
    const { key, entry } = await this.#begin("spawn", name);
    try {
      if (entry?.status === "done") return entry.result as string;
      const seq = entry?.seq ?? this.#nextSeq();
      const write = (input: SubmitInput): Promise<string> => this.#write(() => this.#store().spawnStep({ ...this.#owned(), name: key, seq, child: input }));
      const spans = this.#host.spans;
      return await (spans === null ? write(child) : spans.spawn(child, write));
    } finally {
      this.#inFlight.delete(name);
    }
  }

  async join<R = unknown>(name: string, ids: readonly string[]): Promise<(Task<unknown, R> | null)[]> {
    this.#refuseMisuse("join");
    if (!Array.isArray(ids)) throw new InvalidArgument("ids", `ctx.join('${String(name)}', ids) needs an array of task ids (what ctx.spawn returned)`);
    const own = ids.indexOf(this.#host.taskId);
    if (own !== -1) {
      // The task would wait for itself to finish: parked, re-checking every 30 s, for ever.
      throw new InvalidArgument(
        "ids",
        `ctx.join('${String(name)}', ids): ids[${own}] is this task's own id (${this.#host.taskId}); a task cannot wait for itself to finish, ` +
          "so the join would park for ever; pass the ids of other tasks (what ctx.spawn returned)",
      );
    }
    return this.#oneAtATime(`ctx.join('${String(name)}')`, async () => {
      const { key, entry } = await this.#begin("join", name);
      try {
        if (entry?.status === "done") return entry.result as (Task<unknown, R> | null)[];
        return (await this.#park({ name: key, kind: "join", seq: entry?.seq ?? this.#nextSeq(), childIds: ids, delayMs: JOIN_RECHECK_MS })) as (Task<unknown, R> | null)[];
      } finally {
        this.#inFlight.delete(name);
      }
    });
  }

  /**
   * Runs a sleep, wait or join, refusing one begun while another of this call is pending (`Promise.race` or
   * `Promise.all` of two): a task parks on one of them, and a later run parks on the same first one again, so the
   * other would never be written and could never wake it (a race of a wait and a sleep parked for ever). The
   * refusal fails the task for good, and the pending one does not park either.
   */
  async #oneAtATime<T>(what: string, run: () => Promise<T>): Promise<T> {
    const pending = this.#waiting;
    if (pending !== null && !this.#parked) {
      this.#refusal ??= concurrentWaits(this.#host.taskId, pending.what, what);
      throw this.#refusal;
    }
    const mine = { what };
    this.#waiting = mine;
    try {
      return await run();
    } finally {
      if (this.#waiting === mine) this.#waiting = null;
    }
  }

  /**
   * First in every step method: refuses a step method of a batch handler (so it is told why whatever it passed)
   * and one called from inside a step's function (steps do not nest: a replayed outer step does not call its function, so
   * the steps inside it would not be reached and every later occurrence of their names would read another's record).
   * Seen when the call happens before the function's first `await`; one after it is not seen (see durable-steps.md).
   */
  #refuseMisuse(method: "step" | "sleep" | "sleepUntil" | "waitFor" | "spawn" | "join"): void {
    if (this.#callingFn !== null) throw nestedStep(this.#host.taskId, this.#callingFn, method);
    if (!this.#host.inBatch) return;
    throw new InvalidArgument(
      method,
      `ctx.${method} is not available in a batch handler: a batch call runs several tasks, and a durable step belongs to one; use steps in a handler registered without 'batch'`,
    );
  }

  /** Checks the call and the name, takes the next occurrence and reads its journal entry. */
  async #begin(method: StepKind, name: string): Promise<{ key: string; occurrence: number; entry: StepRecord | undefined }> {
    const host = this.#host;
    const what = method === "step" ? "ctx.step" : method === "wait" ? "ctx.waitFor" : `ctx.${method}`;
    requireStepName(name);
    if (this.#inFlight.has(name)) {
      throw new InvalidArgument(
        "name",
        `step '${name}' is already running in this handler: two steps with one name at once cannot be told apart when the task resumes; give each its own name (e.g. '${name}:' plus an index or an id)`,
      );
    }
    if (this.#parked) throw this.#parkedError();
    host.throwIfGone(what);
    this.#inFlight.add(name);
    const occurrence = (this.#occurrences.get(name) ?? 0) + 1;
    this.#occurrences.set(name, occurrence);
    const key = stepKey(name, occurrence);
    try {
      const journal = await this.#load();
      const entry = journal.get(key);
      if (entry !== undefined) requireReplayKind(host.taskId, key, entry.kind, method);
      return { key, occurrence, entry };
    } catch (err) {
      this.#inFlight.delete(name);
      throw err;
    }
  }

  #load(): Promise<Map<string, StepRecord>> {
    if (this.#journal === null) {
      this.#journal = this.#store()
        .steps(this.#host.taskId)
        .then((entries) => {
          this.#seq = entries.reduce((max, entry) => Math.max(max, entry.seq), 0);
          return new Map(entries.map((entry) => [entry.name, entry]));
        });
      // A failed read is tried again by the next step.
      this.#journal.catch(() => (this.#journal = null));
    }
    return this.#journal;
  }

  async #park(input: {
    name: string;
    kind: "sleep" | "wait" | "join";
    seq: number;
    delayMs?: number;
    untilMs?: number;
    message?: string;
    childIds?: readonly string[];
    expired?: boolean;
  }): Promise<unknown> {
    this.#throwIfRefused();
    // Steps running beside the park record first (see the file's opening block); one begun meanwhile joins the wait.
    // After each wait, a turn lets the handler react to those steps (one that threw may have failed the call: then
    // nothing parks); a step it began in that turn is waited for too, so none runs beside the park's write.
    do {
      while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
      await new Promise<void>((resolve) => setImmediate(resolve));
    } while (this.#running.size > 0);
    this.#throwIfRefused();
    this.#host.throwIfGone(`the park of '${input.name}'`);
    const parking = this.#write(() => this.#store().parkStep({ ...this.#owned(), ...input }));
    this.#parking = parking;
    let out: ParkOutcome;
    try {
      out = await parking;
    } finally {
      this.#parking = null;
    }
    if (out.kind === "ready") return out.result;
    this.#parked = true;
    this.#host.parked(out.status);
    return NEVER;
  }

  /** What a step method of a call that parked throws: the handler runs again from the top when the task resumes. */
  #parkedError(): LostLease {
    const taskId = this.#host.taskId;
    return new LostLease(taskId, { message: `task ${taskId} is parked; its handler runs again from the top when it resumes` });
  }

  /** A sleep, wait or join refused beside this one (see {@link CallSteps.#oneAtATime}): this one does not park either. */
  #throwIfRefused(): void {
    if (this.#refusal !== null) throw this.#refusal;
  }

  /** Keeps `run` in {@link CallSteps.#running} until it settles. */
  #track<T>(run: Promise<T>): Promise<T> {
    this.#running.add(run);
    const done = (): void => {
      this.#running.delete(run);
    };
    run.then(done, done);
    return run;
  }

  /** A step or spawn begun while a park is being written waits for it: parked, it does not run in this call. */
  async #afterParking(): Promise<void> {
    if (this.#parking === null) return;
    await this.#parking.catch(() => undefined);
    if (this.#parked) throw this.#parkedError();
  }

  async #recordFailure(key: string, entry: StepRecord | undefined, err: unknown): Promise<void> {
    if (err instanceof LostLease) return;
    try {
      const seq = entry?.seq ?? this.#nextSeq();
      await this.#store().recordStep({ ...this.#owned(), name: key, kind: "step", status: "failed", seq, error: envelopeFromThrown(err).envelope });
    } catch {
      // The journal's record of a failure is informative only; the attempt fails with the step's own error.
    }
  }

  async #write<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (!(err instanceof LostLease)) throw err;
      // A write of this call after its own park (a step still running beside the sleep) is not a lost lease.
      if (this.#parked) throw new LostLease(this.#host.taskId, { message: `task ${this.#host.taskId} parked while this step ran, so its result was not recorded; the step runs again when the task resumes` });
      this.#host.markLost();
      throw err;
    }
  }

  #owned(): { taskId: string; workerId: string; attempt: number } {
    return { taskId: this.#host.taskId, workerId: this.#host.workerId, attempt: this.#host.attempt };
  }

  #nextSeq(): number {
    this.#seq += 1;
    return this.#seq;
  }

  #store(): TaskStepStore {
    const store = this.#host.store;
    if (store.capabilities.durableSteps !== true) throw new UnsupportedBackend("durable steps (ctx.step, ctx.sleep, ctx.waitFor, ctx.spawn, ctx.join)", backendName(store));
    return store as TaskStepStore;
  }
}

/**
 * After a task with a parent became terminal: makes the parent due now when
 * it is parked on a join (`TaskStepStore.wakeJoin`), so a join is pushed, not
 * found by its re-check. Errors go to `report`; the re-check still comes.
 */
export function wakeJoiningParent(store: TaskStore, parentId: string | null, status: string, report: (err: unknown) => void): void {
  if (parentId === null || store.capabilities.durableSteps !== true) return;
  if (status !== "succeeded" && status !== "failed" && status !== "canceled") return;
  (store as TaskStepStore).wakeJoin(parentId).catch(report);
}

/** The non-retryable error of a step method called inside a step's function. */
function nestedStep(taskId: string, outer: string, method: string): TaskError {
  return new TaskError(
    `ctx.${method} was called inside the function of step '${outer}' (task ${taskId}): steps do not nest, since a replayed step returns its recorded value without calling its function, so the steps inside it would not be reached and later steps of the same names would read their records. ` +
      `Call ctx.${method} beside the step in the handler, or do that work in plain code inside the step`,
    { code: "nested_step", type: "InvalidArgument", retryable: false, details: { step: outer, method } },
  );
}

/** The non-retryable error of a sleep, wait or join begun while another of the same call was pending. */
function concurrentWaits(taskId: string, pending: string, began: string): TaskError {
  return new TaskError(
    `${began} began while ${pending} of the same handler call (task ${taskId}) was still pending: a task parks on one sleep, wait or join at a time, so a Promise.race or Promise.all of two of them would park on the first only and never wake for the other. ` +
      `For a wait with a deadline use ctx.waitFor(name, { timeoutMs }) (it resolves null at the deadline); for several children one ctx.join of all their ids; await sleeps one after another`,
    { code: "concurrent_waits", type: "InvalidArgument", retryable: false, details: { pending, began } },
  );
}

/** The non-retryable error of a `ctx.spawn` given `key` or `debounce` (JS callers: {@link SpawnOptions} leaves them out). */
function spawnOptionRefused(taskId: string, name: string, option: SpawnRefusedOption): TaskError {
  return new TaskError(
    `ctx.spawn('${String(name)}') was given ${option} (task ${taskId}), which a spawned child cannot have: the step name already makes the spawn happen once, so there is nothing for a key to find or a debounce to coalesce, and every retry would be refused the same way. ` +
      `Drop ${option}, or submit the task with ctx.submit inside a ctx.step`,
    { code: "invalid_spawn_option", type: "InvalidArgument", retryable: false, details: { step: String(name), option } },
  );
}

/** The non-retryable error of a step whose result cannot be encoded as JSON (code `unserializable_result`, the handler's rule). */
function unserializableStepResult(taskId: string, key: string, err: unknown): TaskError {
  const reason = err instanceof Error ? err.message : String(err);
  return new TaskError(
    `step '${key}' of task ${taskId} returned a value that cannot be stored as JSON (${reason}); its function ran once and its result was not recorded, so the task fails for good rather than run the step again: return plain JSON from a step (a BigInt as a string, no NaN, cycles, functions or symbols)`,
    { code: "unserializable_result", type: "SerializationError", retryable: false, details: { step: key }, cause: err },
  );
}

function backendName(store: TaskStore): string {
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" && name !== "Object" ? name : "this";
}
