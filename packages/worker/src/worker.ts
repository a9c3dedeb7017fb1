/**
 * The CairnQ worker (protocol v1 §8): its life cycle (`run`, `stop`,
 * `close`, `serve`) and the claim loop. The parts it drives live beside it:
 * the task registry (`task-registry.ts`), admission bookkeeping
 * (`admission.ts`), one call's life (`call.ts`), the call and settlement
 * path (`call-runner.ts`), and events, logging and `onError` (`reporter.ts`).
 */
import type { ClaimInput, Task, TaskDef, TaskStore } from "@cairnq/protocol";
import { CairnQError, InvalidArgument, isFatalError } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { BackpressureGateCore, logSafely, retryDelayMs, WORKER_DEFAULTS } from "@cairnq/protocol/sdk";
import type { Deferred, KeepAlive, TimerHandle } from "@cairnq/runtime";
import { deferred, keepAlive, nextTurn, sleep, startTimer } from "@cairnq/runtime";
import { Admission } from "./admission.js";
import { CLAIM_ERROR_MAX_SLEEP_MS } from "./defaults.js";
import { Call } from "./call.js";
import type { CallHost } from "./call.js";
import type { Heartbeat } from "./heartbeat.js";
import { CallRunner } from "./call-runner.js";
import type { WorkerEventListener, WorkerEventName } from "./events.js";
import type { ResolvedWorkerOptions, WorkerOptions } from "./options.js";
import { resolveWorkerOptions } from "./options.js";
import { buildSources, planDraws, rotate, splitCalls } from "./planner.js";
import { Reporter } from "./reporter.js";
import type { ScheduleOptions, ScheduleSpec } from "./scheduler.js";
import { scheduleEntry, Scheduler } from "./scheduler.js";
import type { ContextHost } from "./task-context.js";
import { Context } from "./task-context.js";
import type { AnyHandler, BatchHandlerFor, HandlerFor, TaskOptions } from "./task-registry.js";
import { TaskRegistry } from "./task-registry.js";

/** Claim cycles in flight at once: a second overlaps the first while draws come back full (see the claim loop). */
const MAX_CLAIM_STREAMS = 2;

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
  readonly #runner: CallRunner;
  readonly #reporter: Reporter;
  readonly #host: ContextHost;
  /** What every call gets: one object for the worker, not one per call. */
  readonly #calls: CallHost;
  /** The §5.6 gate this worker installed on the store (`maxQueueDepth`), or `null`. */
  readonly #gate: BackpressureGateCore | null;
  #polls = 0;
  /** Claim-side failures in a row, for the backoff. */
  #claimFailures = 0;
  /** Whether the next claim cycle may skip the store's probe: we were just woken by a `queued` signal, or the last claim came back full. */
  #skipProbe = false;
  /** Whether the last claim that returned came back full (there is probably more to take: a second claim may overlap). */
  #lastFull = false;
  /** Push `queued` signals for our queues heard so far (§9): a count, so an idle sleep or a claim can tell whether any came after it began. */
  #queuedSignals = 0;
  /** Whether this run hears the store's push signals (its `subscribe` worked and it declares `pushWakeups`). */
  #hearsSignals = false;
  /** Claim cycles begun, and the latest whose `reprobe` answer was taken (an older cycle's answer is stale). */
  #claimsBegun = 0;
  #reprobeTaken = 0;
  /**
   * Set when the last claim's `reprobe` found nothing left to claim: when that claim began, and the
   * signal count then. Until a `queued` signal arrives or a poll interval has passed since, the next
   * claim would only find what the probe found, so the loop waits for either instead (see {@link Worker.#drainedMs}).
   */
  #drained: { readonly sinceMs: number; readonly signals: number } | null = null;
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
    const reporter = new Reporter(this.workerId, opts);
    this.#reporter = reporter;
    this.#host = {
      store,
      workerId: this.workerId,
      leaseMs: opts.leaseMs,
      failDelayMs: (attempt, retryable) =>
        retryable ? retryDelayMs(attempt, opts.retryBackoffMs, opts.retryBackoffMaxMs, opts.random) : 0,
      settled: (ctx, status, failure) => reporter.settled(ctx, status, failure),
      lost: (ctx, reason) => reporter.lost(ctx, reason),
    };
    this.#handlers = new TaskRegistry({
      workerId: this.workerId,
      queues: opts.queues,
      resources: opts.resources,
      logger: opts.logger,
      flowControl: store.capabilities.flowControl === true,
    });
    this.#scheduler = new Scheduler(store, (err, schedule) => reporter.report(err, { phase: "schedule", schedule }));
    this.#admission = new Admission(opts);
    this.#runner = new CallRunner({
      store,
      workerId: this.workerId,
      leaseMs: opts.leaseMs,
      heartbeatIntervalMs: opts.heartbeatIntervalMs,
      maxRunMs: opts.maxRunMs,
      contexts: this.#host,
      reporter,
    });
    this.#calls = {
      settling: (call) => this.#admission.settling(call),
      cancelWaiting: (ctx) => this.#runner.cancelWaiting(ctx),
    };
    this.#gate = this.#installGate();
  }

  /**
   * Builds the §5.6 gate from `maxQueueDepth` and installs it on the store,
   * so child submits from handlers wait for room — unless the store already
   * has a gate (a client sharing this store object installed one), which is
   * kept: one gate per store, or two would probe and grant independently.
   */
  #installGate(): BackpressureGateCore | null {
    const { maxQueueDepth, maxQueueWaitMs, queuePollIntervalMs, logger } = this.options;
    if (maxQueueDepth === null) return null;
    const gate = new BackpressureGateCore(
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
  // The TaskDef decides the handler's types (a handler for a TaskDef must return its result type); by name they
  // are the handler's own. Each arity has its overload, the plain handler last: TypeScript 7 reports a mismatch
  // against the last overload of the arity, so that one explains the common case.
  task<D extends TaskDef | string, P = unknown, R = unknown>(task: D, options: TaskOptions & { batch: number }, handler: BatchHandlerFor<D, P, R>): this;
  task<D extends TaskDef | string, P = unknown, R = unknown>(task: D, options: TaskOptions & { batch?: undefined }, handler: HandlerFor<D, P, R>): this;
  task<D extends TaskDef | string, P = unknown, R = unknown>(task: D, handler: HandlerFor<D, P, R>): this;
  task(task: TaskDef | string, optionsOrHandler: TaskOptions | AnyHandler, maybeHandler?: AnyHandler): this {
    this.#handlers.register(task, optionsOrHandler, maybeHandler);
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

  /** Subscribes to a lifecycle event. A throwing listener is logged and ignored. */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
    this.#reporter.on(event, listener);
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
   * missed within that window on start, each at most once. See
   * `scheduler.ts` for the guarantees and DST behaviour.
   *
   * @throws `InvalidArgument` for a bad spec or option (unknown keys
   *   included), `SerializationError` for a payload that cannot be stored,
   *   `UnsupportedBackend` when the store lacks `capabilities.schedules`.
   * @example
   * ```ts
   * worker.schedule("report.build", "30 6 * * *", { timezone: "Europe/Paris", payload: { kind: "daily" } });
   * worker.schedule("cache.refresh", { everyMs: 60_000 });
   * ```
   */
  schedule<P = unknown>(task: TaskDef<P> | string, spec: ScheduleSpec, options?: ScheduleOptions<P>): this {
    this.#scheduler.add(scheduleEntry(task, spec, options));
    return this;
  }

  /** Unsubscribes a listener added with {@link Worker.on}. */
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
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
   * directory or not a database, `ProtocolVersionMismatch`,
   * `SchemaMismatch`) stop the worker at once — running handlers drain as
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
      startedAtMs: Date.now(),
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
    run.loop = this.#loop(controller.signal);
    this.#scheduler.start();
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

  // ── poll loop (§8.3) ─────────────────────────────────────────────────────

  async #loop(signal: AbortSignal): Promise<void> {
    const queues = new Set(this.options.queues);
    let unsubscribe: () => void = () => {};
    try {
      if (typeof this.store.subscribe === "function") {
        unsubscribe = this.store.subscribe((s) => {
          if (s.reason === "queued" && queues.has(s.queue)) this.#queuedSignals += 1;
        });
        this.#hearsSignals = this.store.capabilities.pushWakeups;
      }
    } catch (err) {
      // Push signals only accelerate: without them every claim cycle probes, as always.
      this.#reporter.report(err, { phase: "claim" });
    }
    try {
      await this.#claimLoop(signal);
    } finally {
      unsubscribe();
      this.#hearsSignals = false;
      this.#drained = null;
    }
  }

  async #claimLoop(signal: AbortSignal): Promise<void> {
    // Connect up front, so a database the worker can never use fails run() even before a handler is registered.
    if (!(await this.#survive(() => this.store.connect(), signal)) && this.#run?.fatal !== undefined) return;
    // Claim cycles in flight: at most two, and a second only overlaps one whose predecessor came back full.
    const cycles = new Set<Promise<void>>();
    try {
      while (!signal.aborted && this.#run?.fatal === undefined) {
        await this.#admission.waitForRoom(signal);
        if (signal.aborted) break;
        if (this.#handlers.size === 0) {
          if (cycles.size > 0) await Promise.race(cycles);
          else await this.#idle(signal);
          continue;
        }
        const drainedMs = this.#drainedMs();
        if (drainedMs > 0) {
          // Nothing was left at the last claim and no signal came since: wait for one (or the poll interval).
          if (cycles.size > 0) await Promise.race(cycles);
          else await this.#idle(signal, drainedMs);
          continue;
        }
        if (this.options.prefetch === 0) {
          // Claims never overlap without prefetch (see worthOverlapping): one cycle at a time, awaited here.
          await this.#cycle(signal, false);
          continue;
        }
        if (cycles.size > 0 && !(cycles.size < MAX_CLAIM_STREAMS && this.#lastFull && this.#overlapAllowed() && this.#admission.worthOverlapping())) {
          await Promise.race(cycles);
          continue;
        }
        const cycle = this.#cycle(signal, cycles.size > 0)
          .catch((err: unknown) => this.#reporter.report(err, { phase: "claim" }))
          .finally(() => cycles.delete(cycle));
        cycles.add(cycle);
      }
    } finally {
      await Promise.all(cycles);
    }
  }

  /**
   * Whether a second claim may overlap one in flight: only when no registered name has a per-name
   * `concurrency`, a `resource` or cross-process flow control, whose counts a claim in flight could
   * change under the other's plan. (Room is held for the one in flight: {@link Admission.reserve}.)
   */
  #overlapAllowed(): boolean {
    return this.#handlers.registrations().every((r) => r.concurrency === null && r.resource === null && (r.flowControl ?? null) === null);
  }

  /**
   * One claim cycle and its dispatch. An empty claim idles (§8.3 step 4) unless it overlapped
   * another cycle (that one's result decides).
   */
  async #cycle(signal: AbortSignal, overlapping: boolean): Promise<void> {
    const startedAtMs = Date.now();
    let result: { rows: Task[]; release: () => void } = { rows: [], release: () => {} };
    const claimed = await this.#survive(async () => {
      result = await this.#claim();
    }, signal);
    if (!claimed) return;
    const { rows, release } = result;
    try {
      if (rows.length > 0) this.#dispatch(rows, Date.now() - startedAtMs);
    } finally {
      release();
    }
    if (rows.length === 0 && !overlapping) await this.#idle(signal);
  }

  /**
   * Runs one claim-side step. A transient failure (a server restarting, a
   * refused connection, anything not marked fatal) is reported and slept
   * off with backoff — `claimErrorSleepMs` doubling up to
   * {@link CLAIM_ERROR_MAX_SLEEP_MS}, reset by the next success — and the
   * caller tries again; a fatal one (`isFatalError`: a path that is not a
   * database, another protocol major, another installation) ends the run,
   * which then rejects with it. Returns whether the step succeeded.
   */
  async #survive(step: () => Promise<void>, signal: AbortSignal): Promise<boolean> {
    try {
      await step();
      this.#claimFailures = 0;
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      if (isFatalError(err)) {
        this.#stopOnFatal(err);
        return false;
      }
      this.#reporter.report(err, { phase: "claim" });
      this.#claimFailures += 1;
      const backoffMs = Math.min(CLAIM_ERROR_MAX_SLEEP_MS, WORKER_DEFAULTS.claimErrorSleepMs * 2 ** Math.min(this.#claimFailures - 1, 20));
      await sleep(backoffMs, { signal, unref: true });
      return false;
    }
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

  /**
   * How long the loop may still wait instead of claiming because the last claim's `reprobe` found
   * nothing left (0: claim now). The wait lasts until a `queued` signal for our queues or one poll
   * interval after that claim began — the same bound an idle worker's sleep has, which also covers
   * what no signal announces (delayed tasks falling due, leases expiring). A worker that claims
   * again right after each task would only repeat the probe's answer, on a transaction of its own
   * that competes with the settlement just written (measured on `bench/`'s Postgres `call()` pair
   * against the release before, 6 alternating runs of 300 calls: p50 0.83×, p95 0.81×).
   */
  #drainedMs(): number {
    const drained = this.#drained;
    if (drained === null) return 0;
    const remainingMs = drained.sinceMs + this.options.pollIntervalMs - Date.now();
    if (remainingMs <= 0 || drained.signals !== this.#queuedSignals) {
      this.#drained = null;
      return 0;
    }
    return remainingMs;
  }

  async #idle(signal: AbortSignal, timeoutMs = this.options.pollIntervalMs): Promise<void> {
    const signals = this.#queuedSignals;
    this.#drained = null;
    try {
      await this.store.claimWake(this.options.queues, timeoutMs, signal);
      // Woken by a queued signal for our queues: the probe would only confirm what the signal said, so the
      // next cycle opens its transaction at once (recovery still runs first in it; an empty draw is harmless).
      this.#skipProbe = this.#queuedSignals !== signals;
    } catch (err) {
      if (signal.aborted) return;
      if (isFatalError(err)) {
        this.#stopOnFatal(err);
        return;
      }
      this.#reporter.report(err, { phase: "claim" });
      await sleep(this.options.pollIntervalMs, { signal, unref: true });
    }
  }

  /**
   * §8.3 steps 2–3: one claim cycle with a draw per source. When every draw came back full there is
   * probably more to take, so the next cycle skips the probe and goes straight to its transaction
   * (recovery first, as always; an empty draw then costs one short transaction).
   */
  async #claim(): Promise<{ rows: Task[]; release: () => void }> {
    const registrations = this.#handlers.registrations();
    const batches = new Map(registrations.map((r) => [r.name, r.batch ?? 1]));
    const sources = rotate(buildSources(registrations), this.#polls++);
    const admission = this.#admission;
    // The most calls this claim can bring: a draw per source, each capped by claimBatch (or all the room).
    const cap = this.options.claimBatch === null ? Number.POSITIVE_INFINITY : this.options.claimBatch * sources.length;
    // Room held for this claim until its rows are dispatched, so a claim overlapping it plans only the rest
    // (claims overlap only with prefetch; without it nothing needs holding).
    const holds = this.options.prefetch > 0;
    let held = holds ? admission.reserve(Math.min(admission.free(), cap)) : 0;
    let plan: ReturnType<typeof planDraws> = () => null;
    let requested = 0;
    let planned = 0;
    const draws: typeof plan = (claimed, index) => {
      if (index === 0) {
        // Planned from the counters as they are when the store asks (inside its transaction), not as they were
        // when the cycle began: calls that ended meanwhile leave room this claim can fill. The room it plans stays
        // held until its rows are dispatched, so nothing else can take it meanwhile. A store may replay its
        // transaction: each replay plans afresh.
        requested = 0;
        planned = 0;
        admission.unreserve(held);
        const snapshot = admission.snapshot((name) => batches.get(name) ?? 1);
        held = holds ? admission.reserve(Math.min(snapshot.free, cap)) : 0;
        plan = planDraws(sources, snapshot);
      }
      const draw = plan(claimed, index);
      if (draw === null) {
        // Planning is over: hand back the room this claim will not use.
        if (holds) {
          admission.unreserve(held - planned);
          held = planned;
        }
      } else {
        requested += draw.limit;
        planned += Math.ceil(draw.limit / (batches.get(draw.names?.[0] ?? "") ?? 1));
      }
      return draw;
    };
    let rows: Task[];
    try {
      rows = await this.#claimWith(registrations, draws, () => requested);
    } catch (err) {
      admission.unreserve(held);
      throw err;
    }
    // Handed back only once the rows are dispatched (they then count as buffered or running).
    return { rows, release: () => admission.unreserve(held) };
  }

  async #claimWith(registrations: readonly { name: string }[], draws: NonNullable<ClaimInput["draws"]>, requested: () => number): Promise<Task[]> {
    const skipProbe = this.#skipProbe || this.#lastFull;
    this.#skipProbe = false;
    const flowControl = this.#handlers.flowControl();
    const begun = ++this.#claimsBegun;
    const sinceMs = Date.now();
    const signals = this.#queuedSignals;
    let leftNothing = false;
    // Only where a signal would announce new work: without push signals an empty probe says nothing about the next
    // second. And not while draws keep coming back full: a backlog is being drained, the answer would be "more" (and
    // the statement a cost per claim: 6% of a Postgres drain at concurrency 1), and the claim that ends the streak
    // finds out itself.
    const reprobe =
      this.#hearsSignals && this.store.capabilities.claimReprobe === true && !this.#lastFull
        ? (claimable: boolean): void => {
            if (begun < this.#reprobeTaken) return;
            this.#reprobeTaken = begun;
            leftNothing = !claimable;
            this.#drained = claimable ? null : { sinceMs, signals };
          }
        : null;
    const rows = await this.store.claim({
      queues: this.options.queues,
      workerId: this.workerId,
      leaseMs: this.options.leaseMs,
      names: registrations.map((r) => r.name),
      draws,
      ...(skipProbe ? { probe: false } : {}),
      ...(flowControl === null ? {} : { flowControl }),
      ...(reprobe === null ? {} : { reprobe }),
    });
    this.#lastFull = !leftNothing && rows.length > 0 && rows.length >= requested();
    this.#skipProbe = this.#lastFull;
    return rows;
  }

  /** §8.3 step 4: split rows into calls and start them (or, with `prefetch`, buffer those without a free slot). */
  #dispatch(rows: readonly Task[], claimMs: number): void {
    let reclaimed = false;
    for (const row of rows) {
      // We just claimed this task again, so any older call of ours holding it lost its lease (the row's attempt moved on).
      const older = this.#admission.holding(row.id);
      if (older === undefined) continue;
      // A settled one is left alone: its write, if still in flight, meets the attempt fence and says so itself.
      for (const ctx of older) if (!ctx.settled) ctx.markLost("reclaimed");
      reclaimed = true;
    }
    // A buffered call whose every task was just found lost will never start: drop it now.
    if (reclaimed) for (const call of this.#admission.buffered()) call.review();
    logSafely(this.options.logger, "debug", "claimed tasks", { workerId: this.workerId, count: rows.length, durationMs: claimMs });
    // One heartbeat for the claim's calls: their leases began together, so one statement per beat renews them all.
    const calls: Call[] = [];
    const heartbeat = this.#runner.heartbeat(() => {
      for (const call of calls) call.review();
    });
    for (const group of splitCalls(rows, (name) => this.#handlers.get(name)?.batch ?? 1)) calls.push(this.#admit(group, claimMs, heartbeat));
  }

  #admit(rows: readonly Task[], claimMs: number, heartbeat: Heartbeat): Call {
    const first = rows[0] as Task;
    const registration = this.#handlers.get(first.name);
    const claimedAtMs = Date.now();
    const contexts = rows.map((row) => new Context(this.#host, row, claimedAtMs));
    const call = new Call(this.#calls, registration, contexts, this.#admission.payloadBytes(rows));
    this.#reporter.claimed(contexts, claimMs);
    // The heartbeat runs from the claim, so a call waiting in the buffer keeps its leases like a running one.
    if (registration !== undefined) call.join(heartbeat);
    this.#admission.admit(call); // starts it at once when a slot is free (see Call.start)
    // A call that started at once runs now; a buffered one waits for its start (or its drop) first.
    const life = call.phase === "buffered" ? this.#follow(call) : this.#runner.execute(call);
    const release = (): void => this.#admission.release(call);
    call.done = life.then(release, (err: unknown) => {
      this.#reporter.report(err, { phase: "execute", taskId: first.id });
      release();
    });
    return call;
  }

  /** A buffered call's life: wait for a slot, run and settle, then any settlement written while it waited. */
  async #follow(call: Call): Promise<void> {
    if (await call.whenStarted()) await this.#runner.execute(call);
    const early = call.early;
    if (early !== null) await Promise.all(early);
  }

  // ── stopping ─────────────────────────────────────────────────────────────

  async #stop(run: RunState): Promise<void> {
    const beganAtMs = Date.now();
    const inFlight = this.#admission.size;
    this.#reporter.emit("worker:stopping", { workerId: this.workerId, inFlight, durationMs: beganAtMs - run.startedAtMs });
    logSafely(this.options.logger, "info", "worker stopping", { workerId: this.workerId, inFlight });
    run.controller.abort();
    await Promise.all([run.loop, this.#scheduler.stop()]);
    let abandoned = 0;
    if (this.#admission.size > 0) {
      let timer: TimerHandle | undefined;
      const drained = Promise.all(this.#admission.calls().map((call) => call.done)).then(() => true);
      const deadline = new Promise<boolean>((resolve) => {
        // Chained past 2^31 ms: stopTimeoutMs: 2 ** 31 must not abandon handlers at once.
        timer = startTimer(() => resolve(false), this.options.stopTimeoutMs);
      });
      const forced = run.forceAbandon.promise.then(() => false);
      const finished = await Promise.race([drained, deadline, forced]);
      timer?.clear();
      if (!finished) {
        // A buffered call, claimed but never started, is let go of like a running one (its tasks are left to lease expiry).
        for (const call of this.#admission.calls()) if (call.abandon()) abandoned += 1;
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
    this.#reporter.emit("worker:stopped", { workerId: this.workerId, abandoned, durationMs: Date.now() - beganAtMs });
    logSafely(this.options.logger, "info", "worker stopped", { workerId: this.workerId, abandoned });
    if (run.fatal === undefined) run.stopped.resolve();
    else run.stopped.reject(run.fatal);
  }
}
