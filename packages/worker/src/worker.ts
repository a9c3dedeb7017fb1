/**
 * The CairnQ worker (protocol v1 §8): its construction, task registration,
 * schedules, events, and its life cycle (`run`, `stop`, `close`, `serve`).
 * The parts it drives live beside it: the task registry
 * (`task-registry.ts`), the claim loop and its pacing (`claim-loop.ts`), the
 * dispatch of claimed rows into calls (`dispatcher.ts`), admission
 * bookkeeping (`admission.ts`), one call's life (`call.ts`), the call and
 * settlement path (`call-runner.ts`), and events, logging and `onError`
 * (`reporter.ts`).
 */
import type { TaskDef, TaskStore } from "@cairnq/protocol";
import { CairnQError, InvalidArgument } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { BackpressureGateCore, logSafely, policyRetryDelayMs, requireGroupSupport, retryDelayMs } from "@cairnq/protocol/sdk";
import type { Deferred, KeepAlive, TimerHandle } from "@cairnq/runtime";
import { deferred, describeKind, keepAlive, nextTurn, Telemetry } from "@cairnq/runtime";
import { Admission } from "./admission.js";
import { argumentsAfter, requireEventName } from "./arguments.js";
import { CallRunner } from "./call-runner.js";
import { ClaimLoop } from "./claim-loop.js";
import { Dispatcher } from "./dispatcher.js";
import type { WorkerEventListener, WorkerEventName } from "./events.js";
import type { ResolvedWorkerOptions, WorkerOptions } from "./options.js";
import { resolveWorkerOptions } from "./options.js";
import { Reporter } from "./reporter.js";
import type { ScheduleOptions, ScheduleSpec } from "./scheduler.js";
import { scheduleEntry, Scheduler } from "./scheduler.js";
import type { ContextHost } from "./task-context.js";
import type { AnyHandler, BatchHandlerFor, HandlerFor, TaskOptions } from "./task-registry.js";
import { TaskRegistry } from "./task-registry.js";
import { StepSpans } from "./step-spans.js";
import { wakeJoiningParent } from "./steps.js";
import { WorkerTelemetry } from "./worker-telemetry.js";

interface RunState {
  readonly stopped: Deferred<void>;
  readonly controller: AbortController;
  readonly startedAtMs: number;
  /** The store's sleeps are unref'd; this handle keeps the process alive while the worker runs. */
  readonly keepAlive: KeepAlive;
  /** Resolving it ends the stop's drain at once (second signal in `serve()`). */
  readonly forceAbandon: Deferred<void>;
  loop: Promise<void>;
  stopping: Promise<void> | null;
  /** An error retrying cannot fix ended the claim loop; `run()` rejects with it. */
  fatal: unknown;
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

  readonly #handlers: TaskRegistry;
  /** The schedules declared with `schedule()`; they run while the worker runs. */
  readonly #scheduler: Scheduler;
  readonly #admission: Admission;
  readonly #reporter: Reporter;
  readonly #claimLoop: ClaimLoop;
  /** The §5.6 gate this worker installed on the store (`maxQueueDepth`), or `null`. */
  readonly #gate: BackpressureGateCore | null;
  /** Spans and instruments, or `null` with `tracing` and `metrics` off (nothing loaded then). */
  readonly #telemetry: WorkerTelemetry | null;
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
    const workerId = this.workerId;
    const reporter = new Reporter(workerId, opts);
    this.#reporter = reporter;
    const admission = new Admission(opts);
    this.#admission = admission;
    const otel = Telemetry.load(opts.tracing, opts.metrics, { requiredBy: "@cairnq/worker", from: import.meta.url, what: "new Worker(store, options)" });
    const telemetry = otel === null ? null : new WorkerTelemetry(otel, { leaseMs: opts.leaseMs, slotsUsed: () => admission.running });
    this.#telemetry = telemetry;
    if (telemetry !== null) reporter.traceFields = (ctx) => telemetry.logFields(ctx);
    const contexts: ContextHost = {
      store,
      workerId,
      leaseMs: opts.leaseMs,
      clock: opts.clock,
      failDelayMs: (ctx, retryable, error) => {
        if (!retryable) return 0;
        const policy = registry.get(ctx.name)?.retry ?? null;
        if (policy === null) return retryDelayMs(ctx.attempt, opts.retryBackoffMs, opts.retryBackoffMaxMs, opts.random);
        // The last attempt is not retried (the store fails it for good), so a user's retryBackoff is not asked.
        if (policy.compute !== null && ctx.attempt >= ctx.maxAttempts) return 0;
        const worker = { baseMs: opts.retryBackoffMs, capMs: opts.retryBackoffMaxMs };
        const { delayMs, problem } = policyRetryDelayMs(policy, worker, ctx.attempt, error, opts.random);
        if (problem !== null) reporter.report(problem, { phase: "execute", taskId: ctx.taskId }, ctx);
        return delayMs;
      },
      settled:
        telemetry === null
          ? (ctx, status, failure, parked) => {
              ctx.settlementWritten();
              reporter.settled(ctx, status, failure, parked);
              wakeJoiningParent(store, ctx.parentId, status, (err) => reporter.report(err, { phase: "execute", taskId: ctx.taskId }, ctx));
            }
          : (ctx, status, failure, parked) => {
              ctx.settlementWritten();
              telemetry.settled(ctx, status, failure, parked);
              reporter.settled(ctx, status, failure, parked);
              wakeJoiningParent(store, ctx.parentId, status, (err) => reporter.report(err, { phase: "execute", taskId: ctx.taskId }, ctx));
            },
      lost:
        telemetry === null
          ? (ctx, reason) => reporter.lost(ctx, reason)
          : (ctx, reason) => {
              telemetry.lost(ctx, reason);
              reporter.lost(ctx, reason);
            },
      send: telemetry === null ? undefined : (input) => telemetry.send(input, (traced) => store.submit(traced)),
      stepSpans: otel === null ? undefined : new StepSpans(otel),
    };
    const registry = new TaskRegistry({
      workerId,
      queues: opts.queues,
      resources: opts.resources,
      logger: opts.logger,
      flowControl: store.capabilities.flowControl === true,
      groups: store.capabilities.groups === true,
      // As given, not as resolved: a task's durations are checked only against the worker's explicit ones.
      retryBackoff: { baseMs: options?.retryBackoffMs ?? null, capMs: options?.retryBackoffMaxMs ?? null },
    });
    this.#handlers = registry;
    this.#scheduler = new Scheduler(store, (err, schedule) => reporter.report(err, { phase: "schedule", schedule }), undefined, opts.clock);
    const runner = new CallRunner({
      store,
      workerId,
      leaseMs: opts.leaseMs,
      heartbeatIntervalMs: opts.heartbeatIntervalMs,
      maxRunMs: opts.maxRunMs,
      clock: opts.clock,
      contexts,
      reporter,
      telemetry,
    });
    const dispatcher = new Dispatcher({ workerId, logger: opts.logger, clock: opts.clock, registry, admission, runner, reporter, contexts, telemetry });
    this.#claimLoop = new ClaimLoop({
      store,
      workerId,
      options: opts,
      admission,
      registry,
      dispatcher,
      reporter,
      fatal: (err) => this.#stopOnFatal(err),
    });
    this.#gate = this.#installGate();
  }

  /**
   * Builds the §5.6 gate from `maxQueueDepth` and installs it on the store,
   * so child submits from handlers wait for room — unless the store already
   * has a gate (a client sharing this store object installed one), which is
   * kept: one gate per store, or two would probe and grant independently.
   */
  #installGate(): BackpressureGateCore | null {
    const { maxQueueDepth, maxQueueWaitMs, queuePollIntervalMs, logger, clock } = this.options;
    if (maxQueueDepth === null) return null;
    const gate = new BackpressureGateCore(
      { maxQueueDepth, maxQueueWaitMs, queuePollIntervalMs, logger, owner: "worker" },
      // A gated submit is awaited (by a handler, or by anyone sharing the store), so its sleep is ref'd.
      { sleep: (ms, signal) => clock.sleep(ms, { signal }), now: () => clock.monotonicMs(), nextTurn },
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
   * @throws `InvalidArgument` for a bad name, option or undeclared resource, a handler that is not a function,
   *   or an argument after the handler (`worker.task(name, handler, options)`: the options come first).
   * @example
   * ```ts
   * worker.task(resize, async (ctx, payload) => ({ ok: true }));
   * worker.task("embed", { batch: 32, resource: "gpu" }, async (ctxs) =>
   *   Object.fromEntries(ctxs.map((ctx) => [ctx.taskId, embed(ctx.payload)])));
   * ```
   */
  // The TaskDef decides the handler's types (a handler for a TaskDef must return its result type); by name they
  // are the handler's own. Each arity has its overload, the plain handler last: TypeScript 7 reports a mismatch
  // against the last overload of the arity, so that one explains the common case.
  task<D extends TaskDef | string, P = unknown, R = unknown>(task: D, options: TaskOptions & { batch: number }, handler: BatchHandlerFor<D, P, R>): this;
  task<D extends TaskDef | string, P = unknown, R = unknown>(task: D, options: TaskOptions & { batch?: undefined }, handler: HandlerFor<D, P, R>): this;
  task<D extends TaskDef | string, P = unknown, R = unknown>(task: D, handler: HandlerFor<D, P, R>): this;
  task(task: TaskDef | string, optionsOrHandler: TaskOptions | AnyHandler, ...rest: unknown[]): this {
    this.#handlers.register(task, optionsOrHandler, rest);
    return this;
  }

  /**
   * Unregisters a task name. Tasks of that name claimed afterwards (a claim
   * already in flight) fail permanently with `no_handler`.
   *
   * @returns whether a handler was registered.
   */
  removeTask(task: TaskDef | string): boolean {
    return this.#handlers.remove(task);
  }

  /**
   * Subscribes to a lifecycle event. A throwing listener (or an async one that rejects) is logged and ignored.
   *
   * @throws `InvalidArgument` for an event name not in {@link WorkerEvents} (a misspelt one would
   *   never fire), when `listener` is not a function, or for an argument after it.
   */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this;
  on(event: WorkerEventName, listener: unknown, ...rest: unknown[]): this {
    const call = `worker.on(${JSON.stringify(event)}, listener)`;
    requireEventName(event, "on");
    if (typeof listener !== "function") throw new InvalidArgument("listener", `${call} needs a listener function, got ${describeKind(listener)}`);
    if (rest.length > 0) throw new InvalidArgument("listener", `${call} got ${argumentsAfter(rest)} after its listener, which would be ignored; it takes the event name and the listener only`);
    this.#reporter.on(event, listener as WorkerEventListener<WorkerEventName>);
    return this;
  }

  /**
   * Submits a task for every slot of `spec` — a cron string (5 fields, or 6
   * with seconds first; read in `opts.timezone`, default UTC) or
   * `{ everyMs }` — exactly once per slot however many workers declare the
   * same schedule, while this worker runs. Each slot's task has
   * `run_at_ms` = the slot and the key
   * `cairnq:schedule:<schedule name>:<slot ms>` (the schedule name is
   * `opts.name`, else the task name). `opts.backfillMs` also submits slots
   * missed within that window on start, each at most once. Declared while
   * the worker runs, the schedule starts at once (its backfill measured from
   * then), whether or not the worker had one when `run()` began. See
   * `scheduler.ts` for the guarantees and DST behaviour.
   *
   * @throws `InvalidArgument` for a bad spec or option (unknown keys
   *   included) or an argument after the options, `SerializationError` for a payload that cannot be stored,
   *   `UnsupportedBackend` when the store lacks `capabilities.schedules`.
   * @example
   * ```ts
   * worker.schedule("report.build", "30 6 * * *", { timezone: "Europe/Paris", payload: { kind: "daily" } });
   * worker.schedule("cache.refresh", { everyMs: 60_000 });
   * ```
   */
  schedule<P = unknown>(task: TaskDef<P> | string, spec: ScheduleSpec, options?: ScheduleOptions<P>): this;
  schedule(task: TaskDef | string, spec: ScheduleSpec, options?: ScheduleOptions, ...rest: unknown[]): this {
    if (rest.length > 0) {
      throw new InvalidArgument(
        "options",
        `worker.schedule(name, spec, options) got ${argumentsAfter(rest)} after its options, which would be ignored; every option goes in the one options object`,
      );
    }
    const entry = scheduleEntry(task, spec, options);
    requireGroupSupport(this.store, entry.task);
    this.#scheduler.add(entry);
    return this;
  }

  /** Unsubscribes a listener added with {@link Worker.on}. */
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
    requireEventName(event, "off");
    this.#reporter.off(event, listener);
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
   * Errors retrying cannot fix (`isFatalError`: the SQLite path is a
   * directory or not a database, a Postgres or MySQL database that does not
   * exist or a refused login (`DatabaseUnusable`), `ProtocolVersionMismatch`,
   * `SchemaMismatch`, a store closed under the running worker) stop the worker at once — running handlers drain as
   * in `stop()` — and `run()` rejects with the error. Transient ones (a
   * refused connection, a restarting server) are reported (`onError`, or the
   * logger: stderr by default) and retried with backoff.
   *
   * @throws `CairnQError` (rejected) after `close()`, or the fatal error that stopped the worker.
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
      startedAtMs: this.options.clock.now(),
      keepAlive: keepAlive(),
      forceAbandon: deferred(),
      loop: Promise.resolve(),
      stopping: null,
      fatal: undefined,
    };
    this.#run = run;
    logSafely(this.options.logger, "info", "worker started", {
      workerId: this.workerId,
      queues: this.options.queues,
      names: this.#handlers.names(),
    });
    const telemetry = this.#telemetry;
    if (telemetry === null) {
      run.loop = this.#claimLoop.run(controller.signal);
      this.#scheduler.start();
    } else {
      // The loops run outside whatever context the caller of run() had: spans only ever come from handler calls.
      run.loop = telemetry.detached(() => this.#claimLoop.run(controller.signal));
      telemetry.detached(() => this.#scheduler.start());
    }
    return run.stopped.promise;
  }

  /**
   * Stops claiming, lets running handlers finish for up to `stopTimeoutMs`,
   * then abandons the rest (their signals abort; their tasks are left to
   * lease expiry). Resolves when stopped; idempotent.
   *
   * A claim already sent to the store when `stop()` begins (`worker:stopping`'s
   * `claiming`) takes nothing if the store had not planned its draws yet; rows it
   * had drawn come back leased to this worker and are worked like buffered ones,
   * within the same `stopTimeoutMs` (counted from the claim's return).
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
   * When an error retrying cannot fix stops the worker (see {@link Worker.run}),
   * `serve()` closes it, sets `process.exitCode = 1` and rejects with that
   * error, so a worker process pointed at the wrong database exits non-zero
   * instead of looking healthy.
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
    } catch (err) {
      process.exitCode = 1;
      throw err;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await this.close();
    }
  }

  // ── stopping ─────────────────────────────────────────────────────────────

  async #stop(run: RunState): Promise<void> {
    const clock = this.options.clock;
    const beganAtMs = clock.now();
    const inFlight = this.#admission.size;
    const claiming = this.#claimLoop.claiming;
    this.#reporter.emit("worker:stopping", { workerId: this.workerId, inFlight, claiming, durationMs: beganAtMs - run.startedAtMs });
    logSafely(this.options.logger, "info", "worker stopping", { workerId: this.workerId, inFlight, claiming });
    run.controller.abort();
    await Promise.all([run.loop, this.#scheduler.stop()]);
    let abandoned = 0;
    if (this.#admission.size > 0) {
      let timer: TimerHandle | undefined;
      const drained = Promise.all(this.#admission.calls().map((call) => call.done)).then(() => true);
      const deadline = new Promise<boolean>((resolve) => {
        // Chained past 2^31 ms: stopTimeoutMs: 2 ** 31 must not abandon handlers at once.
        timer = clock.startTimer(() => resolve(false), this.options.stopTimeoutMs);
      });
      const forced = run.forceAbandon.promise.then(() => false);
      const finished = await Promise.race([drained, deadline, forced]);
      timer?.clear();
      if (!finished) {
        // A buffered call, claimed but never started, is let go of like a running one (its tasks are left to lease expiry).
        // Buffered ones first: a running call let go of ends (and frees its slot) at once, which would start one.
        const calls = this.#admission.calls();
        for (const call of calls) if (call.phase === "buffered" && call.abandon()) abandoned += 1;
        for (const call of calls) if (call.abandon()) abandoned += 1;
        if (abandoned > 0) {
          logSafely(this.options.logger, "warn", "stop deadline passed; abandoned running handlers, their tasks are left to lease expiry", {
            workerId: this.workerId,
            abandoned,
            stopTimeoutMs: this.options.stopTimeoutMs,
          });
        }
        await Promise.all(this.#admission.calls().map((call) => call.done));
      }
    }
    run.keepAlive.release();
    this.#run = null;
    this.#reporter.emit("worker:stopped", { workerId: this.workerId, abandoned, durationMs: clock.now() - beganAtMs });
    logSafely(this.options.logger, "info", "worker stopped", { workerId: this.workerId, abandoned });
    if (run.fatal === undefined) run.stopped.resolve();
    else run.stopped.reject(run.fatal);
  }

  /** Ends the run because of an error retrying cannot fix: logged, then `stop()`; `run()` rejects with it. */
  #stopOnFatal(err: unknown): void {
    const run = this.#run;
    if (run === null || run.fatal !== undefined) return;
    run.fatal = err;
    logSafely(this.options.logger, "error", `worker cannot work and stops: ${err instanceof Error ? err.message : String(err)}`, {
      workerId: this.workerId,
      error: err,
    });
    void this.stop();
  }
}
