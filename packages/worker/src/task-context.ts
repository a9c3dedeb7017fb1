/**
 * `TaskContext`: what a handler gets for each task it runs (protocol v1 §8.6).
 *
 * Terminology: an *owned write* is one the store guards with the ownership
 * predicate (progress, heartbeat, complete, fail); it carries the context's
 * `attempt`, so a write from an abandoned attempt never lands on a later
 * attempt of the same task. A context is *lost* once the worker knows it no
 * longer holds the lease, and *settled* once a succeed/fail was issued.
 */
import type { PayloadArgs, PayloadFor, ResultFor, SubmitInput, SubmitOptions, Task, TaskDef, TaskStatus, TaskStore, TransactionalTaskStore, WaitOptions } from "@cairnq/protocol";
import type { StepInfo, WaitForOptions } from "./steps.js";
import type { StepSpans } from "./step-spans.js";
import { CallSteps } from "./steps.js";
import { cancelRequested, LostLease, TaskCanceled, UnsupportedBackend } from "@cairnq/protocol";
import type { ReadTraceCarrier } from "@cairnq/protocol/sdk";
import { childLineage, envelopeForCtxFail, requireGroupSupport, requireRetryable, SUBMIT_OPTION_KEYS, submitInputOf, traceCarrierOf, typedSubmitRow, WAIT_OPTION_KEYS, waitForTask, withoutTraceCarrier } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import { checkOptions } from "@cairnq/runtime";
import type { LeaseLostReason } from "./events.js";
import { writeFailure } from "./failure-write.js";
import { storableEnvelope } from "./storable-outcome.js";
import type { CallSpan } from "./worker-telemetry.js";

/**
 * Options of `ctx.submit` (a child task): the protocol's `SubmitOptions`.
 * Unset fields come from the task definition, then the store's defaults;
 * `parentId` defaults to the running task, `rootId` and `correlationId` to
 * the running task's (§2.4), and explicit values override them.
 */
export type ChildSubmitOptions = SubmitOptions;

/**
 * Options of `ctx.spawn`: those of `ctx.submit` ({@link ChildSubmitOptions})
 * but `key` and `debounce`. The step name already makes a spawn happen once,
 * so a spawned child has no key to be found by or coalesced under; a JS
 * caller that passes either fails the task for good (`TaskError`, type
 * `InvalidArgument`, code `invalid_spawn_option`). Submit a keyed or
 * debounced task with `ctx.submit` inside a `ctx.step` instead.
 */
export type SpawnOptions = Omit<ChildSubmitOptions, "key" | "debounce"> & {
  /** Refused: a spawned child cannot have a key (the step name makes the spawn happen once). */
  key?: never;
  /** Refused: a spawned child cannot be debounced (the step name makes the spawn happen once). */
  debounce?: never;
};

/** Options of `ctx.fail`. */
export interface FailOptions {
  /**
   * Whether the task may run again (while attempts remain). Ignored when the
   * reason is a `TaskError`, whose own flag wins.
   * @default true
   */
  retryable?: boolean;
}

/** Every key of {@link FailOptions}, for the unknown-key check (a record, so a new option cannot be left out). */
const FAIL_OPTION_KEYS = Object.keys({ retryable: true } satisfies Record<keyof FailOptions, true>);

/**
 * The handle a handler gets for one task: its row's fields, an abort signal,
 * and the owned writes (progress, heartbeat, succeed, fail), plus child
 * submits and waits.
 *
 * After the lease is lost (`lostLease`), owned writes throw `LostLease`
 * without touching the store: the same worker may already hold a newer
 * attempt of the task. After the context is settled, `progress` and
 * `heartbeat` throw `LostLease` too, and repeated `succeed`/`fail` return
 * `null` without writing.
 *
 * @example
 * ```ts
 * worker.task("resize", async (ctx, { url }) => {
 *   const image = await fetch(url, { signal: ctx.signal });
 *   await ctx.progress(0.5, "downloaded");
 *   if (await ctx.canceled()) throw new TaskError("canceled by user");
 *   return { bytes: (await image.arrayBuffer()).byteLength };
 * });
 * ```
 */
export interface TaskContext<P = unknown, R = unknown> {
  readonly taskId: string;
  readonly name: string;
  readonly queue: string;
  readonly payload: P;
  /** This run's attempt number (1 on the first claim). */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly parentId: string | null;
  readonly rootId: string | null;
  readonly correlationId: string | null;
  /**
   * The metadata the task was submitted with (the trace context CairnQ stores beside it is not shown).
   * An object for every task CairnQ submits; a row another writer stored with a different JSON value
   * (JSON `null`, an array, a string, a number: the v1 column holds any JSON) shows that value as stored.
   */
  readonly metadata: Record<string, unknown>;
  /** The worker running the task. */
  readonly workerId: string;
  /**
   * When this attempt's lease began (the claim's `now`, epoch ms: the
   * database clock on Postgres), from the claimed row's `lease_until_ms`.
   */
  readonly claimedAtMs: number;
  /**
   * Aborts when the handler should stop: with a `LostLease` reason when the
   * worker stops owning the task (lease lost, `maxRunMs` exceeded, the
   * `stop()` deadline passed), with a `TaskCanceled` reason when a cancel
   * was requested (seen by a heartbeat, `ctx.heartbeat()` or
   * `ctx.canceled()`). Pass it on — `fetch(url, { signal: ctx.signal })` —
   * so the work in flight stops too.
   */
  readonly signal: AbortSignal;
  /** True once the worker knows the lease is gone. */
  readonly lostLease: boolean;
  /** True once `succeed`/`fail` was issued for this task (by the handler or the worker). */
  readonly settled: boolean;
  /** Records progress; `null`/omitted keeps the previous value (§5.13). Renews nothing. */
  progress(fraction?: number | null, message?: string | null): Promise<void>;
  /** Renews the lease now (the worker also does so every `heartbeatIntervalMs`). */
  heartbeat(): Promise<void>;
  /**
   * Whether a cancel was requested: true once a heartbeat showed the flag;
   * otherwise reads the row (missing, flagged or `canceled` → true).
   */
  canceled(): Promise<boolean>;
  /**
   * Submits a child task: `parentId` is this task; root and correlation ids are copied; explicit options override them (§2.4).
   * Typed by the `TaskDef` or explicit type arguments (`ctx.submit<P, R>("name", …)`), never by the variable the row
   * is assigned to (NoInfer in the return type, as `client.submit`).
   */
  submit<CP = never, CR = never, D extends TaskDef | string = string>(
    task: D,
    ...args: PayloadArgs<PayloadFor<D, NoInfer<CP>>, ChildSubmitOptions>
  ): Promise<Task<PayloadFor<D, NoInfer<CP>>, ResultFor<D, NoInfer<CR>>>>;
  /**
   * Waits for a task to be terminal (§7) and returns its row; `TaskTimeout` at the deadline. `signal`
   * defaults to this context's, so the wait ends when the worker stops owning this task.
   */
  wait(id: string, options?: WaitOptions): Promise<Task>;
  /**
   * Completes the task now with `result` (a requested cancel wins: it then
   * ends `canceled`). Returns the row, or `null` if already settled.
   *
   * `result` may be left out (stored as `null`) only when the task's result
   * type admits `undefined` — an untyped task (`unknown`), a `void` result,
   * `T | undefined` — so a task typed to return a value cannot succeed without one.
   */
  succeed(...result: undefined extends R ? [result?: R] : [result: R]): Promise<Task | null>;
  /**
   * Fails the task now (§8.6): a string → `task_error`; an `Error` →
   * `handler_error`; a `TaskError` → its envelope and its own `retryable`;
   * any other object → stored as-is. Returns the row, or `null` if already settled.
   */
  fail(reason?: unknown, options?: FailOptions): Promise<Task | null>;
  /**
   * Runs `fn` in a store transaction and completes the task with its return
   * value as that transaction's last statement, so the handler's own writes
   * commit only if this worker still owns the task (Postgres).
   *
   * @throws `UnsupportedBackend` when the store lacks `transactionalComplete`.
   */
  succeedIn<T, Tx = unknown>(fn: (tx: Tx) => Promise<T>): Promise<{ task: Task; result: T } | null>;
  /**
   * A durable step: runs `fn` at most once to a recorded result for this
   * task. When a later attempt or a resume reaches the same step (the same
   * name, the same occurrence: `name`, then `name#2`, …), the recorded value
   * (JSON) is returned and `fn` is not called. The record is written only by
   * the attempt that holds the lease. A step that throws fails the attempt as
   * a throwing handler does; its error is kept in the journal.
   *
   * @throws `InvalidArgument` when a step of the same name is running at the same time, or in a batch handler.
   * @example
   * ```ts
   * const charge = await ctx.step("charge", ({ idempotencyKey }) => payments.charge(order, { idempotencyKey }));
   * ```
   */
  step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>): Promise<T>;
  /**
   * Parks the task for `ms`: it gives back its worker slot and lease (`queued`,
   * due at the wake time) and the handler runs again from the top then,
   * recorded steps replaying. Parking never uses up `maxAttempts`. `ms` is
   * an integer from 0 to `MAX_DELAY_MS` (100 years).
   */
  sleep(name: string, ms: number): Promise<void>;
  /** {@link TaskContext.sleep} until `until` (a `Date` or epoch ms). */
  sleepUntil(name: string, until: Date | number): Promise<void>;
  /**
   * Parks until `cairnq.send(taskId, name, payload)` (from any process) and
   * resolves with the payload; a message sent before the wait is kept for it.
   * With `timeoutMs`, resolves with `null` when no message came in time.
   */
  waitFor<T = unknown>(name: string, options?: WaitForOptions): Promise<T | null>;
  /**
   * Submits a child task (parent and root ids set) exactly once per step
   * name, however often the handler replays, and returns its id. The options
   * are `ctx.submit`'s except `key` and `debounce` ({@link SpawnOptions}); with `group`, the child is
   * written in its group with the spawn and claimed under its group limits.
   */
  spawn<CP = never, D extends TaskDef | string = string>(name: string, task: D, ...args: PayloadArgs<PayloadFor<D, NoInfer<CP>>, SpawnOptions>): Promise<string>;
  /**
   * Parks until every task of `ids` is terminal, then returns their rows in
   * the order given (`null` for a task that was purged meanwhile).
   */
  join<R = unknown>(name: string, ids: readonly string[]): Promise<(Task<unknown, R> | null)[]>;
}

/** What a context tells when its task parks (the call runner's wait for the handler). @internal */
export interface ParkHook {
  parked(): void;
}

/** Why a context is lost: a real lease loss, or the worker letting go of it. */
export type LostReason = LeaseLostReason | "timeout" | "abandoned";

/** What the worker gives its contexts. @internal */
export interface ContextHost {
  readonly store: TaskStore;
  readonly workerId: string;
  readonly leaseMs: number;
  /** The worker's clock (`ctx.wait`'s deadline). */
  readonly clock: RuntimeClock;
  /** The §6 delay for a fail of `ctx` (0 when not retryable), by its name's retry policy or the worker's; `error` is what the handler failed with. */
  failDelayMs(ctx: Context, retryable: boolean, error: unknown): number;
  /**
   * A settlement write was applied, or a durable step's park (`parked`: the task waits `queued` for its sleep, wait
   * or join, and this attempt is over without a settlement; a park the store answered with `canceled` is the cancel
   * settlement it wrote, not a park).
   */
  settled(ctx: Context, status: TaskStatus, failure: { envelope: unknown; retryable: boolean; delayMs: number } | null, parked: boolean): void;
  /** A context just became lost. */
  lost(ctx: Context, reason: LostReason): void;
  /** Writes a child submit; with tracing on, inside a producer span whose context is stored with the task. */
  readonly send?: ((input: SubmitInput) => Promise<Task>) | undefined;
  /** With tracing on: spans of durable steps, and the trace context of spawned children (`step-spans.ts`). */
  readonly stepSpans?: StepSpans | undefined;
}

const LOST_MESSAGES: Record<LostReason, (id: string) => string> = {
  heartbeat: (id) => `the lease on task ${id} was not renewed (it expired or the task was settled elsewhere); stop working on it`,
  write: (id) => `an owned write for task ${id} matched nothing: this worker no longer holds its lease; stop working on it`,
  reclaimed: (id) =>
    `this worker claimed task ${id} again after this attempt's lease expired, so this attempt no longer owns it; stop working on it`,
  timeout: (id) => `the handler for task ${id} exceeded maxRunMs and was abandoned; the worker fails the attempt`,
  abandoned: (id) =>
    `the worker stopped and its stop deadline passed before the handler for task ${id} finished; the task is left to lease expiry`,
};

/** The worker's implementation of {@link TaskContext}. @internal */
export class Context<P = unknown, R = unknown> implements TaskContext<P, R> {
  readonly taskId: string;
  readonly name: string;
  readonly queue: string;
  readonly payload: P;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly parentId: string | null;
  readonly rootId: string | null;
  readonly correlationId: string | null;
  readonly metadata: Record<string, unknown>;
  /** The submitter's trace context stored with the task (`cairnq.trace` in its metadata), or `null`. */
  readonly traceCarrier: ReadTraceCarrier | null;
  readonly workerId: string;
  readonly claimedAtMs: number;
  /** When the call running this task started (for event durations); set again when a buffered call starts. */
  startedAtMs: number;

  readonly #host: ContextHost;
  /**
   * Made on first use (a handler reading `signal`, or the first abort): most tasks never need one, and an
   * AbortController with its signal is several objects per task in flight — garbage collection was the
   * largest share of a busy worker's CPU.
   */
  #controller: AbortController | null = null;
  #settled = false;
  /** The attempt's settlement (or park) was written: see {@link settlementWritten}. */
  #written = false;
  #lost: LostReason | null = null;
  #cancelSeen = false;
  /** The claimed row's `run_at_ms` (when a parked step is over, see `steps.ts`). */
  readonly #runAtMs: number;
  /** This call's durable steps, made on the first step-family call. */
  #steps: CallSteps | null = null;
  /** Ends the call when the task parks; set by the call runner. */
  #onParked: ParkHook | null = null;
  /** The context is one of a batch call's: steps are refused. */
  inBatch = false;
  /** See {@link Context.callSpan}. */
  #callSpan: CallSpan | null = null;

  constructor(host: ContextHost, row: Task, startedAtMs: number) {
    this.#host = host;
    this.taskId = row.id;
    this.name = row.name;
    this.queue = row.queue;
    this.payload = row.payload as P;
    this.attempt = row.attempt;
    this.maxAttempts = row.max_attempts;
    this.parentId = row.parent_id;
    this.rootId = row.root_id;
    this.correlationId = row.correlation_id;
    this.metadata = withoutTraceCarrier(row.metadata);
    this.traceCarrier = traceCarrierOf(row.metadata);
    this.workerId = host.workerId;
    this.claimedAtMs = (row.lease_until_ms ?? host.leaseMs) - host.leaseMs;
    this.startedAtMs = startedAtMs;
    if (row.cancel_requested_at_ms !== null) this.#cancelSeen = true;
    this.#runAtMs = row.run_at_ms;
  }

  /**
   * With `tracing` or `metrics` on, the telemetry of the call that runs this task (set when it starts).
   * An accessor over a private field, so a handler that logs or serializes its context does not print the span.
   */
  get callSpan(): CallSpan | null {
    return this.#callSpan;
  }

  set callSpan(call: CallSpan | null) {
    this.#callSpan = call;
  }

  /** Called by the call runner: how the call ends when the task parks. */
  onParked(end: ParkHook | null): void {
    this.#onParked = end;
  }

  #callSteps(): CallSteps {
    if (this.#steps !== null) return this.#steps;
    const host = this.#host;
    this.#steps = new CallSteps({
      store: host.store,
      taskId: this.taskId,
      taskName: this.name,
      workerId: this.workerId,
      attempt: this.attempt,
      rootId: this.rootId,
      correlationId: this.correlationId,
      runAtMs: this.#runAtMs,
      inBatch: this.inBatch,
      spans: host.stepSpans ?? null,
      now: () => host.clock.now(),
      throwIfGone: (what) => this.#throwIfGone(what),
      markLost: () => this.markLost("write"),
      parked: (status) => {
        this.#settled = true;
        host.settled(this, status, null, status === "queued");
        this.#onParked?.parked();
      },
    });
    return this.#steps;
  }

  step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>): Promise<T> {
    return this.#callSteps().step(name, fn);
  }

  sleep(name: string, ms: number): Promise<void> {
    return this.#callSteps().sleep(name, ms);
  }

  sleepUntil(name: string, until: Date | number): Promise<void> {
    return this.#callSteps().sleepUntil(name, until);
  }

  waitFor<T = unknown>(name: string, options?: WaitForOptions): Promise<T | null> {
    return this.#callSteps().waitFor<T>(name, options);
  }

  spawn(name: string, task: TaskDef | string, ...args: [payload?: unknown, options?: SpawnOptions]): Promise<string> {
    return this.#callSteps().spawn(name, task, args[0], args[1]);
  }

  join<R = unknown>(name: string, ids: readonly string[]): Promise<(Task<unknown, R> | null)[]> {
    return this.#callSteps().join<R>(name, ids);
  }

  get signal(): AbortSignal {
    return this.#abortController().signal;
  }

  /** The context's AbortController, made on first use (see `#controller`). */
  #abortController(): AbortController {
    return (this.#controller ??= new AbortController());
  }

  get lostLease(): boolean {
    return this.#lost !== null;
  }

  get settled(): boolean {
    return this.#settled;
  }

  /** Whether a cancel request was seen (the claimed row's flag, a heartbeat reply, or a read). */
  get cancelSeen(): boolean {
    return this.#cancelSeen;
  }

  /** Neither settled nor lost: heartbeats renew it and the call's end settles it. */
  get live(): boolean {
    return !this.#settled && this.#lost === null;
  }

  /**
   * The worker wrote this attempt's settlement or park (`ContextHost.settled`): the attempt is over, so a
   * `LostLease` a write of it meets afterwards — a step the handler left running, failing because its
   * attempt ended — is the expected answer, not a lease loss. @internal
   */
  settlementWritten(): void {
    this.#written = true;
  }

  /**
   * Marks the context lost (idempotent) and aborts its signal; a write's `LostLease` after its settlement was
   * written is not a loss. A `write` loss after a `timeout` is still told: `maxRunMs` let go of the handler, and
   * the worker's fail then found the lease gone too — a real loss, which `lease:lost` and the metric count.
   */
  markLost(reason: LostReason): void {
    if (reason === "write" && this.#written) return;
    if (this.#lost !== null) {
      if (reason === "write" && this.#lost === "timeout") {
        this.#lost = reason;
        this.#host.lost(this, reason);
      }
      return;
    }
    this.#lost = reason;
    this.#abortController().abort(new LostLease(this.taskId, { message: LOST_MESSAGES[reason](this.taskId) }));
    this.#host.lost(this, reason);
  }

  /** Claims the right to settle; false if already settled. */
  beginSettle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    return true;
  }

  /**
   * Records the cancel flag from a heartbeat reply (or a read): once set,
   * the signal aborts with a `TaskCanceled`, unless it already aborted. The
   * context stays live: the worker still holds the lease, and the call's
   * settlement ends the task `canceled`.
   */
  recordCancel(flag: boolean): void {
    if (!flag) return;
    this.#cancelSeen = true;
    const controller = this.#abortController();
    if (!controller.signal.aborted) {
      controller.abort(
        new TaskCanceled(this.taskId, {
          message: `a cancel was requested for task ${this.taskId}; stop working on it (whatever the handler settles, the task ends canceled)`,
        }),
      );
    }
  }

  #owned(): { taskId: string; workerId: string; attempt: number } {
    return { taskId: this.taskId, workerId: this.workerId, attempt: this.attempt };
  }

  #throwIfLost(): void {
    if (this.#lost !== null) throw new LostLease(this.taskId, { message: LOST_MESSAGES[this.#lost](this.taskId) });
  }

  #throwIfGone(what: string): void {
    this.#throwIfLost();
    if (this.#settled) {
      throw new LostLease(this.taskId, {
        message: `task ${this.taskId} is already settled, so ${what} was not written; settle last, after any progress or heartbeat`,
      });
    }
  }

  /** Runs an owned write; `LostLease` from the store marks the context lost. */
  async #write<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (err instanceof LostLease) this.markLost("write");
      throw err;
    }
  }

  /**
   * A settlement the handler asked for (`succeed`, `fail`, `succeedIn`): the context is settled while it is in
   * flight, so a second one returns `null` and heartbeats stop. Anything but `LostLease` from the store almost
   * always means nothing was written — an argument it refuses, a result it cannot encode, a statement too
   * large, a database error — so the context is unsettled again: what the handler then does (settle again,
   * return, throw) is still recorded, instead of the task staying `running` until its lease expires. The
   * exception: a connection lost after the `COMMIT` was sent may have written; then the handler's next
   * settlement (or the worker's fail) meets `LostLease` and reports a `lease:lost` although the task settled.
   */
  async #settleBy<T>(write: () => Promise<T>): Promise<T> {
    this.#settled = true;
    try {
      return await this.#write(write);
    } catch (err) {
      if (!(err instanceof LostLease)) this.#settled = false;
      throw err;
    }
  }

  async progress(fraction: number | null = null, message: string | null = null): Promise<void> {
    this.#throwIfGone("progress");
    await this.#write(() => this.#host.store.progress({ ...this.#owned(), progress: fraction, message }));
  }

  async heartbeat(): Promise<void> {
    this.#throwIfGone("the heartbeat");
    const row = await this.#write(() => this.#host.store.heartbeat({ ...this.#owned(), leaseMs: this.#host.leaseMs }));
    if (cancelRequested(row)) this.recordCancel(true);
  }

  async canceled(): Promise<boolean> {
    if (this.#cancelSeen) return true;
    const row = await this.#host.store.get(this.taskId);
    if (row === null || cancelRequested(row) || row.status === "canceled") this.recordCancel(true);
    return this.#cancelSeen;
  }

  // Without the interface's NoInfer: a class method with NoInfer in its return type does not relate to the interface's
  // (TypeScript 5.9 infers CP and CR from the interface's return type when comparing the two, and NoInfer blocks that).
  // Handlers see TaskContext, so the interface's return type is the one that types their calls.
  async submit<CP = never, CR = never, D extends TaskDef | string = string>(
    task: D,
    ...args: PayloadArgs<PayloadFor<D, NoInfer<CP>>, ChildSubmitOptions>
  ): Promise<Task<PayloadFor<D, CP>, ResultFor<D, CR>>> {
    const [payload, given] = args as [unknown, ChildSubmitOptions | undefined];
    // The check client.submit makes: a misspelt option would otherwise be dropped.
    const options = checkOptions(given, "ctx.submit", SUBMIT_OPTION_KEYS) as ChildSubmitOptions;
    const def: TaskDef = typeof task === "string" ? { name: task } : task;
    const input = submitInputOf(def, payload, {
      ...options,
      ...childLineage({ id: this.taskId, root_id: this.rootId, correlation_id: this.correlationId }, options),
    });
    requireGroupSupport(this.#host.store, input);
    const send = this.#host.send;
    const row = await (send === undefined ? this.#host.store.submit(input) : send(input));
    return typedSubmitRow(row, task, input, "ctx.submit") as Task<PayloadFor<D, CP>, ResultFor<D, CR>>;
  }

  async wait(id: string, given?: WaitOptions): Promise<Task> {
    // The check client.wait makes: a misspelt option (`timeout: 5`) would otherwise be dropped, and the wait last 30 s.
    const options = checkOptions(given, "ctx.wait(id, options)", WAIT_OPTION_KEYS) as WaitOptions;
    // By id only, so every sleep is the store's taskDoneWake: no sleep of the worker's is needed.
    const clock = this.#host.clock;
    return waitForTask(this.#host.store, { id }, { ...options, signal: options.signal ?? this.signal }, { now: () => clock.monotonicMs(), wallNow: () => clock.now() });
  }

  async succeed(...args: undefined extends R ? [result?: R] : [result: R]): Promise<Task | null> {
    const result: R | undefined = args[0];
    if (this.#settled) return null;
    this.#throwIfLost();
    const row = await this.#settleBy(() => this.#host.store.complete({ ...this.#owned(), result }));
    this.#host.settled(this, row.status, null, false);
    return row;
  }

  async fail(reason?: unknown, given?: FailOptions): Promise<Task | null> {
    // Checked before anything else: `{ retry: false }` dropped would retry; a `retryable` that is not a boolean
    // (`null` included) is refused even for a TaskError reason, whose own flag wins.
    const options = checkOptions(given, "ctx.fail(reason, options)", FAIL_OPTION_KEYS) as FailOptions;
    const failure = envelopeForCtxFail(reason, { retryable: requireRetryable(options.retryable, "ctx.fail(reason, { retryable })") });
    if (this.#settled) return null;
    this.#throwIfLost();
    const retryable = failure.retryable;
    const envelope = storableEnvelope(failure.envelope, retryable);
    const delayMs = this.#host.failDelayMs(this, retryable, reason);
    const { row, error } = await this.#settleBy(() => writeFailure(this.#host.store, { ...this.#owned(), error: envelope, retryable, delayMs }));
    this.#host.settled(this, row.status, { envelope: error, retryable, delayMs }, false);
    return row;
  }

  async succeedIn<T, Tx = unknown>(fn: (tx: Tx) => Promise<T>): Promise<{ task: Task; result: T } | null> {
    const store = this.#host.store;
    if (!store.capabilities.transactionalComplete) {
      throw new UnsupportedBackend("succeedIn", backendName(store));
    }
    if (this.#settled) return null;
    this.#throwIfLost();
    // A transaction that throws rolled back: nothing was settled, so the call's end still settles the task.
    const out = await this.#settleBy(() => (store as TransactionalTaskStore<Tx>).completeIn(this.#owned(), fn));
    this.#host.settled(this, out.task.status, null, false);
    return out;
  }
}

function backendName(store: TaskStore): string {
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" && name !== "Object" ? name : "this";
}
