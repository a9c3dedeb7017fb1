/**
 * The CairnQ worker (protocol v1 §8): claims tasks under a lease, runs their
 * handlers, keeps the leases alive, and records how each call ended.
 *
 * Terminology: a *call* is one handler invocation (one task, or a batch of
 * tasks of one name); *settling* a task is writing its outcome (`complete`
 * or `fail`); a call is *abandoned* when the worker lets go of it without
 * settling (the `stop()` deadline), leaving its tasks to lease expiry.
 */
import type { Task, TaskDef, TaskStore } from "@cairnq/protocol";
import {
  BackpressureGate,
  CairnQError,
  EventLoopBlocked,
  encodeJson,
  envelopeFromThrown,
  handlerTimeoutEnvelope,
  InvalidArgument,
  logSafely,
  LostLease,
  newWorkerId,
  noHandlerEnvelope,
  requireInt,
  requireName,
  retryDelayMs,
  SerializationError,
  unserializableResultEnvelope,
  WORKER_DEFAULTS,
} from "@cairnq/protocol";
import type { TaskEvent, WorkerEventListener, WorkerEventName, WorkerEvents } from "./events.js";
import { TypedEmitter } from "./events.js";
import { Heartbeat } from "./heartbeat.js";
import type { ResolvedWorkerOptions, WorkerErrorInfo, WorkerOptions } from "./options.js";
import { resolveWorkerOptions } from "./options.js";
import type { NameRule } from "./planner.js";
import { buildSources, planDraws, rotate, splitCalls } from "./planner.js";
import type { ContextHost, LostReason, TaskContext } from "./task-context.js";
import { Context } from "./task-context.js";
import type { Deferred, KeepAlive, TimerHandle } from "@cairnq/runtime";
import { abortPromise, deferred, keepAlive, nextTurn, sleep, startTimer } from "@cairnq/runtime";

/** A value or a promise of it. */
export type Awaitable<T> = T | Promise<T>;

/**
 * Handles one task: gets its context and payload; what it returns becomes
 * the task's result (unless it settled the task itself).
 */
export type TaskHandler<P = unknown, R = unknown> = (ctx: TaskContext<P, R>, payload: P) => Awaitable<R | void>;

/** Results of a batch call by task id; ids left out complete with a `null` result. */
export type BatchResults<R = unknown> = Readonly<Record<string, R>> | ReadonlyMap<string, R>;

/** Handles a batch of tasks of one name in one call (`worker.task(name, { batch }, handler)`). */
export type BatchHandler<P = unknown, R = unknown> = (ctxs: TaskContext<P, R>[]) => Awaitable<BatchResults<R> | void>;

/** Per-name options of `worker.task` (§8.2). */
export interface TaskOptions {
  /** Deliver up to this many tasks per call to a batch handler (an integer ≥ 1). @default undefined (one task per call, single handler) */
  batch?: number;
  /** At most this many calls of this name at once (an integer ≥ 1). @default undefined (only the worker's concurrency) */
  concurrency?: number;
  /** A resource declared in the worker's `resources`; each call holds one unit. @default undefined */
  resource?: string;
}

type AnyHandler = (...args: never[]) => unknown;

interface Registration extends NameRule {
  readonly handler: AnyHandler;
}

type Outcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "timeout" }
  | { readonly kind: "abandoned" };

interface Call {
  readonly name: string;
  readonly registration: Registration | undefined;
  readonly contexts: Context[];
  readonly bytes: number;
  readonly startedAtMs: number;
  readonly abandon: Deferred<void>;
  /** `running` until the handler's outcome is known; a settling call is never abandoned. */
  phase: "running" | "settling";
  done: Promise<void>;
}

interface RunState {
  readonly stopped: Deferred<void>;
  readonly controller: AbortController;
  readonly startedAtMs: number;
  readonly keepAlive: KeepAlive;
  /** Resolving it ends the stop's drain at once (second signal in `serve()`). */
  readonly forceAbandon: Deferred<void>;
  loop: Promise<void>;
  stopping: Promise<void> | null;
}

/**
 * Claims tasks from a {@link TaskStore} and runs their handlers.
 *
 * Delivery is at-least-once: a handler may run again after a crash or a lost
 * lease, so make handlers idempotent. The worker depends only on the
 * `TaskStore` contract; pass any store (SQLite, Postgres, in-memory).
 *
 * @example
 * ```ts
 * const worker = new Worker(store, { queues: ["default"], concurrency: 4 });
 * worker.task("email.send", async (ctx, { to }) => {
 *   await mailer.send(to, { signal: ctx.signal });
 *   return { sent: true };
 * });
 * await worker.serve(); // until SIGINT/SIGTERM, then drain and close
 * ```
 */
export class Worker {
  /** The store this worker claims from. */
  readonly store: TaskStore;
  /** This worker's id (`worker_` + ULID), generated once; never share it. */
  readonly workerId: string;
  /** The options in effect, defaults applied. */
  readonly options: ResolvedWorkerOptions;

  readonly #handlers = new Map<string, Registration>();
  readonly #events = new TypedEmitter<WorkerEvents>();
  readonly #host: ContextHost;
  readonly #calls = new Set<Call>();
  readonly #nameCalls = new Map<string, number>();
  readonly #resourceCalls = new Map<string, number>();
  /** Contexts of calls in flight by task id (to spot a re-claim of a task an older call still holds). */
  readonly #live = new Map<string, Set<Context>>();
  /** The §5.6 gate this worker installed on the store (`maxQueueDepth`), or `null`. */
  readonly #gate: BackpressureGate | null;
  #bytesInFlight = 0;
  #polls = 0;
  /** Whether a push `queued` signal for one of our queues arrived since the last idle sleep began (§9). */
  #queuedSignal = false;
  /** Whether the next claim cycle may skip the store's probe: we were just woken by a `queued` signal. */
  #skipProbe = false;
  #callEnded: Deferred<void> = deferred();
  #run: RunState | null = null;
  #closing: Promise<void> | null = null;

  /**
   * @param store - Any `TaskStore`. The worker does not close it unless `closeStore` is set.
   * @param options - See {@link WorkerOptions}; invalid values throw `InvalidArgument`.
   */
  constructor(store: TaskStore, options: WorkerOptions = {}) {
    if (store === null || typeof store !== "object") {
      throw new InvalidArgument("store", "new Worker(store) needs a TaskStore (e.g. a SQLiteStore or PostgresStore)");
    }
    this.store = store;
    this.options = resolveWorkerOptions(options);
    this.workerId = newWorkerId();
    const opts = this.options;
    this.#host = {
      store,
      workerId: this.workerId,
      leaseMs: opts.leaseMs,
      failDelayMs: (attempt, retryable) =>
        retryable ? retryDelayMs(attempt, opts.retryBackoffMs, opts.retryBackoffMaxMs, opts.random) : 0,
      settled: (ctx, row, failure) => this.#onSettled(ctx, row, failure),
      lost: (ctx, reason) => this.#onLost(ctx, reason),
    };
    this.#gate = this.#installGate();
  }

  /**
   * Builds the §5.6 gate from `maxQueueDepth` and installs it on the store,
   * so child submits from handlers wait for room — unless the store already
   * has a gate (a client sharing this store object installed one), which is
   * kept: one gate per store, or two would probe and grant independently.
   */
  #installGate(): BackpressureGate | null {
    const { maxQueueDepth, maxQueueWaitMs, queuePollIntervalMs, logger } = this.options;
    if (maxQueueDepth === null) return null;
    const gate = new BackpressureGate(
      { maxQueueDepth, maxQueueWaitMs, queuePollIntervalMs, logger, owner: "worker" },
      // A gated submit is awaited (by a handler, or by anyone sharing the store), so its sleep is ref'd.
      { sleep: (ms, signal) => sleep(ms, { signal }), nextTurn },
    );
    if (!gate.gatesAnything) return null;
    if (this.store.queueDepthGate !== null && this.store.queueDepthGate !== undefined) {
      logSafely(logger, "warn", "the store already has a queue-depth gate; keeping it, so this worker's maxQueueDepth does not apply", {
        workerId: this.workerId,
      });
      return null;
    }
    this.store.queueDepthGate = gate;
    return gate;
  }

  /** Closes the worker's gate (waiting submits reject, nothing enqueued) and uninstalls it if it is still the store's. */
  #releaseGate(): void {
    if (this.#gate === null) return;
    this.#gate.close();
    if (this.store.queueDepthGate === this.#gate) this.store.queueDepthGate = null;
  }

  /**
   * Registers the handler for a task name (or a `TaskDef`). Registering a name
   * again replaces its handler and options.
   *
   * With `{ batch }` the handler is a batch handler: it receives a list of up
   * to `batch` contexts of that name and may return results by task id.
   * `concurrency` caps this name's calls at once; `resource` makes each call
   * hold one unit of a resource declared in the worker's `resources`.
   *
   * @throws `InvalidArgument` for a bad name, option or undeclared resource.
   * @example
   * ```ts
   * worker.task(resize, async (ctx, payload) => ({ ok: true }));
   * worker.task("embed", { batch: 32, resource: "gpu" }, async (ctxs) =>
   *   Object.fromEntries(ctxs.map((ctx) => [ctx.taskId, embed(ctx.payload)])));
   * ```
   */
  task<P = unknown, R = unknown>(task: TaskDef<P, R> | string, handler: TaskHandler<P, R>): this;
  task<P = unknown, R = unknown>(
    task: TaskDef<P, R> | string,
    options: TaskOptions & { batch: number },
    handler: BatchHandler<P, R>,
  ): this;
  task<P = unknown, R = unknown>(
    task: TaskDef<P, R> | string,
    options: TaskOptions & { batch?: undefined },
    handler: TaskHandler<P, R>,
  ): this;
  task(task: TaskDef | string, optionsOrHandler: TaskOptions | AnyHandler, maybeHandler?: AnyHandler): this {
    const name = requireName(typeof task === "string" ? task : (task as TaskDef | null)?.name, "name");
    let options: TaskOptions;
    let handler: unknown;
    if (typeof optionsOrHandler === "function") {
      options = {};
      handler = optionsOrHandler;
    } else {
      options = optionsOrHandler ?? {};
      handler = maybeHandler;
      if (typeof options !== "object") {
        throw new InvalidArgument("options", `worker.task('${name}', options, handler): options must be an object`);
      }
    }
    if (typeof handler !== "function") {
      throw new InvalidArgument("handler", `worker.task('${name}', …) needs a handler function`);
    }
    const batch = options.batch === undefined ? null : requireInt(options.batch, "batch", 1);
    const concurrency = options.concurrency === undefined ? null : requireInt(options.concurrency, "concurrency", 1);
    let resource: string | null = null;
    if (options.resource !== undefined) {
      resource = requireName(options.resource, "resource");
      if (!Object.hasOwn(this.options.resources, resource)) {
        const declared = Object.keys(this.options.resources);
        throw new InvalidArgument(
          "resource",
          `task '${name}' uses resource '${resource}', which this worker does not declare ` +
            `(declared: ${declared.length === 0 ? "none" : declared.join(", ")}); add it to the worker's resources option with its capacity`,
        );
      }
    }
    if (typeof task !== "string" && task.queue !== undefined && !this.options.queues.includes(task.queue)) {
      logSafely(this.options.logger, "warn", "task definition's queue is not one this worker claims from", {
        workerId: this.workerId,
        name,
        queue: task.queue,
        queues: this.options.queues,
      });
    }
    this.#handlers.set(name, { name, handler: handler as AnyHandler, batch, concurrency, resource });
    return this;
  }

  /**
   * Unregisters a task name. Tasks of that name claimed afterwards (a claim
   * already in flight) fail permanently with `no_handler`.
   *
   * @returns whether a handler was registered.
   */
  removeTask(task: TaskDef | string): boolean {
    return this.#handlers.delete(typeof task === "string" ? task : task.name);
  }

  /** Subscribes to a lifecycle event. A throwing listener is logged and ignored. */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
    this.#events.on(event, listener);
    return this;
  }

  /** Unsubscribes a listener added with {@link Worker.on}. */
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
    this.#events.off(event, listener);
    return this;
  }

  /** Whether the poll loop is running (between `run()` and the end of `stop()`). */
  get running(): boolean {
    return this.#run !== null;
  }

  /**
   * Starts the poll loop. Resolves once the worker has stopped (after
   * `stop()`); calling it while running returns the same promise.
   *
   * @throws `CairnQError` (rejected) after `close()`.
   * @example
   * ```ts
   * const done = worker.run();
   * // … later
   * await worker.stop();
   * await done;
   * ```
   */
  run(): Promise<void> {
    if (this.#closing !== null) {
      return Promise.reject(new CairnQError(`worker ${this.workerId} is closed and cannot run again; create a new Worker`));
    }
    if (this.#run !== null) return this.#run.stopped.promise;
    const controller = new AbortController();
    const run: RunState = {
      stopped: deferred(),
      controller,
      startedAtMs: Date.now(),
      // The store's sleeps are unref'd; this handle keeps the process alive while the worker runs.
      keepAlive: keepAlive(),
      forceAbandon: deferred(),
      loop: Promise.resolve(),
      stopping: null,
    };
    this.#run = run;
    logSafely(this.options.logger, "info", "worker started", {
      workerId: this.workerId,
      queues: this.options.queues,
      names: [...this.#handlers.keys()],
    });
    run.loop = this.#loop(controller.signal);
    return run.stopped.promise;
  }

  /**
   * Stops claiming, lets running handlers finish for up to `stopTimeoutMs`,
   * then abandons the rest (their signals abort; their tasks are left to
   * lease expiry). Resolves when stopped; idempotent.
   */
  stop(): Promise<void> {
    const run = this.#run;
    if (run === null) return Promise.resolve();
    run.stopping ??= this.#stop(run);
    return run.stopping;
  }

  /**
   * Stops (see {@link Worker.stop}) and releases the worker for good: closes
   * and uninstalls its `maxQueueDepth` gate (child submits still waiting on it
   * reject, nothing enqueued) and, with `closeStore`, closes the store.
   * Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.stop();
      } finally {
        this.#releaseGate();
      }
      if (this.options.closeStore) await this.store.close();
    })();
    return this.#closing;
  }

  /**
   * Runs until SIGINT or SIGTERM, then stops (draining up to `stopTimeoutMs`)
   * and closes. A second signal abandons running handlers at once. The
   * signal listeners are removed before it resolves.
   *
   * @example
   * ```ts
   * await worker.serve();
   * ```
   */
  async serve(): Promise<void> {
    let received = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      received += 1;
      logSafely(this.options.logger, "info", "worker received a signal", { workerId: this.workerId, signal });
      if (received === 1) void this.stop();
      else this.#run?.forceAbandon.resolve();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      await this.run();
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await this.close();
    }
  }

  // ── poll loop (§8.3) ─────────────────────────────────────────────────────

  async #loop(signal: AbortSignal): Promise<void> {
    const queues = new Set(this.options.queues);
    let unsubscribe: () => void = () => {};
    try {
      if (typeof this.store.subscribe === "function") {
        unsubscribe = this.store.subscribe((s) => {
          if (s.reason === "queued" && queues.has(s.queue)) this.#queuedSignal = true;
        });
      }
    } catch (err) {
      // Push signals only accelerate: without them every claim cycle probes, as always.
      this.#report(err, { phase: "claim" });
    }
    try {
      await this.#claimLoop(signal);
    } finally {
      unsubscribe();
    }
  }

  async #claimLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.#waitForRoom(signal);
        if (signal.aborted) break;
        if (this.#handlers.size === 0) {
          await this.#idle(signal);
          continue;
        }
        const startedAtMs = Date.now();
        let rows: Task[];
        try {
          rows = await this.#claim();
        } catch (err) {
          this.#report(err, { phase: "claim" });
          await sleep(WORKER_DEFAULTS.claimErrorSleepMs, { signal, unref: true });
          continue;
        }
        if (rows.length === 0) {
          await this.#idle(signal);
          continue;
        }
        this.#dispatch(rows, Date.now() - startedAtMs);
      } catch (err) {
        // Not expected; keep the loop alive rather than silently stop claiming.
        this.#report(err, { phase: "claim" });
        await sleep(WORKER_DEFAULTS.claimErrorSleepMs, { signal, unref: true });
      }
    }
  }

  #free(): number {
    return this.options.concurrency - this.#calls.size;
  }

  #overBytes(): boolean {
    return this.options.maxInFlightBytes !== null && this.#bytesInFlight >= this.options.maxInFlightBytes;
  }

  /** §8.3 step 1: while a call runs and no slot (or byte budget) is free, wait for a call to end. */
  async #waitForRoom(signal: AbortSignal): Promise<void> {
    while (this.#calls.size > 0 && (this.#free() <= 0 || this.#overBytes()) && !signal.aborted) {
      const aborted = abortPromise(signal);
      try {
        await Promise.race([this.#callEnded.promise, aborted.promise]);
      } finally {
        aborted.dispose();
      }
    }
  }

  async #idle(signal: AbortSignal): Promise<void> {
    this.#queuedSignal = false;
    try {
      await this.store.claimWake(this.options.queues, this.options.pollIntervalMs, signal);
      // Woken by a queued signal for our queues: the probe would only confirm what the signal said, so the
      // next cycle opens its transaction at once (recovery still runs first in it; an empty draw is harmless).
      this.#skipProbe = this.#queuedSignal;
    } catch (err) {
      if (signal.aborted) return;
      this.#report(err, { phase: "claim" });
      await sleep(this.options.pollIntervalMs, { signal, unref: true });
    }
  }

  /** §8.3 steps 2–3: one claim cycle with a draw per source. */
  #claim(): Promise<Task[]> {
    const registrations = [...this.#handlers.values()];
    const batches = new Map(registrations.map((r) => [r.name, r.batch ?? 1]));
    const sources = rotate(buildSources(registrations), this.#polls++);
    const draws = planDraws(sources, {
      free: this.#free(),
      claimBatch: this.options.claimBatch,
      nameCalls: new Map(this.#nameCalls),
      resourceCalls: new Map(this.#resourceCalls),
      capacities: this.options.resources,
      batchOf: (name) => batches.get(name) ?? 1,
    });
    const skipProbe = this.#skipProbe;
    this.#skipProbe = false;
    return this.store.claim({
      queues: this.options.queues,
      workerId: this.workerId,
      leaseMs: this.options.leaseMs,
      names: registrations.map((r) => r.name),
      draws,
      ...(skipProbe ? { probe: false } : {}),
    });
  }

  /** §8.3 step 4: split rows into calls and start them. */
  #dispatch(rows: readonly Task[], claimMs: number): void {
    for (const row of rows) {
      // We just claimed this task again, so any older call of ours holding it lost its lease (the row's attempt moved on).
      const older = this.#live.get(row.id);
      if (older !== undefined) for (const ctx of older) ctx.markLost("reclaimed");
    }
    logSafely(this.options.logger, "debug", "claimed tasks", { workerId: this.workerId, count: rows.length, durationMs: claimMs });
    for (const group of splitCalls(rows, (name) => this.#handlers.get(name)?.batch ?? 1)) this.#start(group, claimMs);
  }

  #start(rows: readonly Task[], claimMs: number): void {
    const first = rows[0] as Task;
    const registration = this.#handlers.get(first.name);
    const startedAtMs = Date.now();
    const contexts = rows.map((row) => new Context(this.#host, row, startedAtMs));
    const call: Call = {
      name: first.name,
      registration,
      contexts,
      bytes: this.#payloadBytes(rows),
      startedAtMs,
      abandon: deferred(),
      phase: registration === undefined ? "settling" : "running",
      done: Promise.resolve(),
    };
    this.#calls.add(call);
    this.#nameCalls.set(call.name, (this.#nameCalls.get(call.name) ?? 0) + 1);
    const resource = registration?.resource ?? null;
    if (resource !== null) this.#resourceCalls.set(resource, (this.#resourceCalls.get(resource) ?? 0) + 1);
    this.#bytesInFlight += call.bytes;
    for (const ctx of contexts) {
      let set = this.#live.get(ctx.taskId);
      if (set === undefined) {
        set = new Set();
        this.#live.set(ctx.taskId, set);
      }
      set.add(ctx);
      this.#emit("task:claimed", this.#taskEvent(ctx, claimMs));
    }
    call.done = this.#execute(call)
      .catch((err: unknown) => this.#report(err, { phase: "execute", taskId: first.id }))
      .finally(() => this.#release(call, resource));
  }

  #release(call: Call, resource: string | null): void {
    this.#calls.delete(call);
    const names = (this.#nameCalls.get(call.name) ?? 1) - 1;
    if (names === 0) this.#nameCalls.delete(call.name);
    else this.#nameCalls.set(call.name, names);
    if (resource !== null) {
      const held = (this.#resourceCalls.get(resource) ?? 1) - 1;
      if (held === 0) this.#resourceCalls.delete(resource);
      else this.#resourceCalls.set(resource, held);
    }
    this.#bytesInFlight -= call.bytes;
    for (const ctx of call.contexts) {
      const set = this.#live.get(ctx.taskId);
      set?.delete(ctx);
      if (set?.size === 0) this.#live.delete(ctx.taskId);
    }
    const ended = this.#callEnded;
    this.#callEnded = deferred();
    ended.resolve();
  }

  /** UTF-8 bytes of the rows' payloads as compact JSON; only computed when a byte budget is set. */
  #payloadBytes(rows: readonly Task[]): number {
    if (this.options.maxInFlightBytes === null) return 0;
    let bytes = 0;
    for (const row of rows) {
      try {
        bytes += Buffer.byteLength(encodeJson(row.payload ?? {}, "payload"), "utf8");
      } catch {
        // A row read back from the store is JSON already; nothing to charge if it somehow is not.
      }
    }
    return bytes;
  }

  // ── a call (§8.4) ────────────────────────────────────────────────────────

  async #execute(call: Call): Promise<void> {
    const registration = call.registration;
    if (registration === undefined) {
      // Handlers changed while the claim was in flight: fail for good, without a heartbeat.
      await Promise.all(call.contexts.map((ctx) => this.#finalFail(ctx, noHandlerEnvelope(ctx.name), false, 0)));
      return;
    }
    const heartbeat = new Heartbeat({
      store: this.store,
      workerId: this.workerId,
      leaseMs: this.options.leaseMs,
      intervalMs: this.options.heartbeatIntervalMs,
      contexts: call.contexts,
      report: (err, info) => this.#report(err, info),
    });
    heartbeat.start();
    let outcome: Outcome;
    try {
      outcome = await this.#invoke(call, registration);
    } finally {
      heartbeat.stop();
    }
    if (outcome.kind === "abandoned") return;
    call.phase = "settling";
    await this.#settle(call, outcome);
  }

  /** Runs the handler, bounded by `maxRunMs` and by abandonment at the stop deadline. */
  async #invoke(call: Call, registration: Registration): Promise<Outcome> {
    const contexts = call.contexts;
    // The executor turns a synchronous throw into a rejection, like an async handler's.
    const handled = new Promise<unknown>((resolve) => {
      if (registration.batch !== null) {
        resolve((registration.handler as (ctxs: TaskContext[]) => unknown)(contexts));
      } else {
        const ctx = contexts[0] as Context;
        resolve((registration.handler as (ctx: TaskContext, payload: unknown) => unknown)(ctx, ctx.payload));
      }
    }).then(
      (value): Outcome => ({ kind: "returned", value }),
      (error: unknown): Outcome => ({ kind: "threw", error }),
    );
    const racers: Promise<Outcome>[] = [handled, call.abandon.promise.then((): Outcome => ({ kind: "abandoned" }))];
    let timer: TimerHandle | undefined;
    const maxRunMs = this.options.maxRunMs;
    if (maxRunMs !== null) {
      racers.push(
        new Promise<Outcome>((resolve) => {
          // Chained past 2^31 ms: a 30-day maxRunMs must not fire after 1 ms.
          timer = startTimer(() => resolve({ kind: "timeout" }), maxRunMs, { unref: true });
        }),
      );
    }
    try {
      return await Promise.race(racers);
    } finally {
      timer?.clear();
    }
  }

  /** The settlement table (§8.4): tasks the handler did not settle are settled by how the call ended. */
  async #settle(call: Call, outcome: Exclude<Outcome, { kind: "abandoned" }>): Promise<void> {
    // Contexts already lost are left alone: this worker no longer holds them (and a write might land on a newer run).
    const leftovers = call.contexts.filter((ctx) => ctx.live);
    switch (outcome.kind) {
      case "returned": {
        const batch = call.registration !== undefined && call.registration.batch !== null;
        await Promise.all(
          leftovers.map((ctx) => this.#finalComplete(ctx, batch ? resultById(outcome.value, ctx.taskId) : outcome.value)),
        );
        return;
      }
      case "threw": {
        if (outcome.error instanceof LostLease) return;
        const { envelope, retryable } = envelopeFromThrown(outcome.error);
        await Promise.all(
          leftovers.map((ctx) => this.#finalFail(ctx, envelope, retryable, this.#host.failDelayMs(ctx.attempt, retryable))),
        );
        return;
      }
      case "timeout": {
        for (const ctx of call.contexts) ctx.markLost("timeout");
        const envelope = handlerTimeoutEnvelope(this.options.maxRunMs as number);
        await Promise.all(
          leftovers.map((ctx) => this.#finalFail(ctx, envelope, true, this.#host.failDelayMs(ctx.attempt, true))),
        );
        return;
      }
    }
  }

  /** The worker's own `complete`, straight to the store (the store's ownership check decides). */
  async #finalComplete(ctx: Context, result: unknown): Promise<void> {
    ctx.beginSettle();
    try {
      const row = await this.store.complete({ taskId: ctx.taskId, workerId: this.workerId, attempt: ctx.attempt, result });
      this.#onSettled(ctx, row, null);
    } catch (err) {
      if (err instanceof SerializationError) {
        await this.#finalFail(ctx, unserializableResultEnvelope(err), false, 0);
      } else if (err instanceof LostLease) {
        ctx.markLost("write");
      } else {
        this.#report(err, { phase: "execute", taskId: ctx.taskId });
      }
    }
  }

  /** The worker's own `fail`, straight to the store; `LostLease` is swallowed (nothing more to write). */
  async #finalFail(ctx: Context, envelope: unknown, retryable: boolean, delayMs: number): Promise<void> {
    ctx.beginSettle();
    try {
      const row = await this.store.fail({
        taskId: ctx.taskId,
        workerId: this.workerId,
        attempt: ctx.attempt,
        error: envelope,
        retryable,
        delayMs,
      });
      this.#onSettled(ctx, row, { envelope, retryable, delayMs });
    } catch (err) {
      if (!(err instanceof LostLease)) this.#report(err, { phase: "execute", taskId: ctx.taskId });
    }
  }

  // ── stopping ─────────────────────────────────────────────────────────────

  async #stop(run: RunState): Promise<void> {
    const beganAtMs = Date.now();
    this.#emit("worker:stopping", { workerId: this.workerId, inFlight: this.#calls.size, durationMs: beganAtMs - run.startedAtMs });
    logSafely(this.options.logger, "info", "worker stopping", { workerId: this.workerId, inFlight: this.#calls.size });
    run.controller.abort();
    await run.loop;
    let abandoned = 0;
    if (this.#calls.size > 0) {
      let timer: TimerHandle | undefined;
      const drained = Promise.all([...this.#calls].map((call) => call.done)).then(() => true);
      const deadline = new Promise<boolean>((resolve) => {
        // Chained past 2^31 ms: stopTimeoutMs: 2 ** 31 must not abandon handlers at once.
        timer = startTimer(() => resolve(false), this.options.stopTimeoutMs);
      });
      const forced = run.forceAbandon.promise.then(() => false);
      const finished = await Promise.race([drained, deadline, forced]);
      timer?.clear();
      if (!finished) {
        for (const call of this.#calls) {
          if (call.phase !== "running") continue;
          abandoned += 1;
          for (const ctx of call.contexts) ctx.markLost("abandoned");
          call.abandon.resolve();
        }
        if (abandoned > 0) {
          logSafely(this.options.logger, "warn", "stop deadline passed; abandoned running handlers, their tasks are left to lease expiry", {
            workerId: this.workerId,
            abandoned,
            stopTimeoutMs: this.options.stopTimeoutMs,
          });
        }
        await Promise.all([...this.#calls].map((call) => call.done));
      }
    }
    run.keepAlive.release();
    this.#run = null;
    this.#emit("worker:stopped", { workerId: this.workerId, abandoned, durationMs: Date.now() - beganAtMs });
    logSafely(this.options.logger, "info", "worker stopped", { workerId: this.workerId, abandoned });
    run.stopped.resolve();
  }

  // ── reporting ────────────────────────────────────────────────────────────

  #taskEvent(ctx: Context, durationMs: number): TaskEvent {
    return { taskId: ctx.taskId, workerId: this.workerId, name: ctx.name, queue: ctx.queue, attempt: ctx.attempt, durationMs };
  }

  #onSettled(ctx: Context, row: Task, failure: { envelope: unknown; retryable: boolean; delayMs: number } | null): void {
    const event = this.#taskEvent(ctx, Date.now() - ctx.startedAtMs);
    const fields = { ...event, status: row.status };
    if (row.status === "succeeded") {
      this.#emit("task:succeeded", event);
      logSafely(this.options.logger, "debug", "task succeeded", fields);
    } else if (row.status === "canceled") {
      this.#emit("task:canceled", event);
      logSafely(this.options.logger, "info", "task canceled", fields);
    } else if (failure !== null) {
      const willRetry = row.status === "queued";
      this.#emit("task:failed", { ...event, error: failure.envelope, retryable: failure.retryable, willRetry, delayMs: failure.delayMs });
      logSafely(this.options.logger, willRetry ? "info" : "warn", willRetry ? "task failed; will retry" : "task failed", {
        ...fields,
        error: failure.envelope,
      });
    }
  }

  #onLost(ctx: Context, reason: LostReason): void {
    const event = this.#taskEvent(ctx, Date.now() - ctx.startedAtMs);
    if (reason === "heartbeat" || reason === "write" || reason === "reclaimed") {
      this.#emit("lease:lost", { ...event, reason });
      logSafely(this.options.logger, "warn", "lease lost; the handler's signal was aborted", { ...event, reason });
    }
  }

  #emit<E extends WorkerEventName>(event: E, payload: WorkerEvents[E]): void {
    this.#events.emit(event, payload, (err) =>
      logSafely(this.options.logger, "error", "a worker event listener threw; ignored", { workerId: this.workerId, event, error: err }),
    );
  }

  /** Hands an error the worker survives to `onError` (whose own exceptions are swallowed) and the logger. */
  #report(err: unknown, info: WorkerErrorInfo): void {
    const level = err instanceof EventLoopBlocked ? "warn" : "error";
    logSafely(this.options.logger, level, err instanceof Error ? err.message : "worker error", {
      workerId: this.workerId,
      phase: info.phase,
      taskId: info.taskId,
      error: err,
    });
    const onError = this.options.onError;
    if (onError === null) return;
    try {
      const returned = onError(err, info) as unknown;
      if (returned instanceof Promise) returned.catch(() => {});
    } catch {
      // onError's exceptions are swallowed (§8.1): reporting must not stop the worker.
    }
  }
}

/** A batch call's result for one task: read from an object or Map by id; anything else (or a missing id) is `null`. */
function resultById(value: unknown, taskId: string): unknown {
  if (value instanceof Map) return value.has(taskId) ? (value.get(taskId) as unknown) : null;
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, taskId)) {
    return (value as Record<string, unknown>)[taskId];
  }
  return null;
}
