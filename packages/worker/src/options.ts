import type { Logger, MaxQueueDepth } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { describe, requireDelayMs, requireName } from "@cairnq/protocol/adapter";
import { defaultHeartbeatIntervalMs, normalizeMaxQueueDepth, requireCapNotBelowBase, resolveGateTiming, WORKER_DEFAULTS } from "@cairnq/protocol/sdk";
import type { MetricsOptions, ResolvedMetrics, ResolvedTracing, RuntimeClock, TracingOptions } from "@cairnq/runtime";
import { checkOptions, fallbackLogger, resolveMetrics, resolveTracing, optionalClock, optionalCount, optionalDurationMs, requireCount, requireHook } from "@cairnq/runtime";
import { DEFAULT_STOP_TIMEOUT_MS } from "./defaults.js";

/** Where an error reported to `onError` happened (§8.1). */
export interface WorkerErrorInfo {
  /**
   * `"claim"`: a claim cycle failed; `"execute"`: anything tied to a task (heartbeats, settlement writes,
   * `EventLoopBlocked`); `"schedule"`: a schedule's slot submission failed (retried after 250 ms).
   */
  readonly phase: "claim" | "execute" | "schedule";
  /** The task concerned (for a batch call, its first task). Absent for `"claim"` and `"schedule"`. */
  readonly taskId?: string;
  /** The schedule name, for `"schedule"`. */
  readonly schedule?: string;
  /** With `tracing` on, the trace id of the span of the call that ran `taskId` (absent before its handler started). */
  readonly traceId?: string;
  /** With `tracing` on, the span id of that call's span. */
  readonly spanId?: string;
}

/**
 * Options of a {@link Worker}. Every duration is in milliseconds.
 */
export interface WorkerOptions {
  /** Queues to claim from. @default ["default"] */
  queues?: readonly string[];
  /**
   * Handler calls run at once: an integer ≥ 1 (`0`, `-1`, `1.5` are
   * rejected). Counts calls, not tasks: a batch of 10 is one call. A slot frees
   * when the handler ends, so the next claim overlaps the settlement write.
   * @default 1
   */
  concurrency?: number;
  /**
   * Lease taken by each claim and renewed by each heartbeat: an integer from
   * {@link MIN_LEASE_MS} to `MAX_DELAY_MS` (100 years: the store writes the
   * lease's end as now + `leaseMs`), and more than `heartbeatIntervalMs`.
   * Any length in that range is honoured (timers chain past 2^31 ms).
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How often running tasks' leases are renewed: an integer ≥ 1, less than
   * `leaseMs` (a heartbeat due after the lease ran out renews nothing).
   * @default max(50, floor(leaseMs / 3))
   */
  heartbeatIntervalMs?: number;
  /** Idle sleep after a claim found nothing (cut short by a push wakeup or `stop()`). @default 500 */
  pollIntervalMs?: number;
  /**
   * Row cap per draw: a source draws at most `max(1, floor(claimBatch / batch))`
   * calls per poll. Unset: a poll fills every free slot.
   * @default undefined
   */
  claimBatch?: number;
  /**
   * Tasks a worker may claim ahead of free slots: an integer ≥ 0. With
   * `prefetch: n` a claim takes up to `concurrency + n − calls running or
   * waiting` calls; the ones with no free slot wait in a local buffer, in
   * claim order, and start as slots free. While they wait their leases are
   * renewed by heartbeats like running tasks' (so they never expire under a
   * live worker); a cancel seen then ends them `canceled` without running the
   * handler; `maxRunMs` counts from the handler's start; `stop()` runs them.
   * Opt-in because a claimed task is invisible to other workers, which may
   * sit idle meanwhile, and a crash costs it an attempt (it comes back by
   * lease expiry; the protocol has no "un-claim"). Names with
   * `globalConcurrency` or `rateLimit` are never claimed ahead, and a name's
   * `concurrency` and a resource's capacity bound its claimed calls
   * (running or waiting). Waiting tasks' payload bytes count against
   * `maxInFlightBytes`.
   * @default 0 (claim only for free slots)
   */
  prefetch?: number;
  /**
   * Base of the retry backoff (§6); 0 disables backoff. An integer from 0 to
   * `MAX_DELAY_MS` (a retry is due now + its delay). With `retryBackoffMaxMs`
   * also set, it must not exceed it (`InvalidArgument`). Set alone above the
   * default cap it is accepted and clamped as §6 says: every retry waits
   * 15–30 s — set `retryBackoffMaxMs` too for longer waits.
   * @default 1000
   */
  retryBackoffMs?: number;
  /**
   * Cap of the retry backoff window (§6). An integer from 0 to `MAX_DELAY_MS`;
   * with `retryBackoffMs` also set, at least `retryBackoffMs` (a cap below
   * the base clamps every window under it, so it is refused with
   * `InvalidArgument`). A task's `retryBackoffMs` / `retryBackoffMaxMs` are
   * checked against these when either side is set explicitly.
   * @default 30000
   */
  retryBackoffMaxMs?: number;
  /**
   * A handler call running longer is abandoned: its contexts lose their lease
   * (signal aborted) and its tasks fail retryably with `handler_timeout`.
   * Any length is honoured (30 days means 30 days).
   * @default undefined (no limit)
   */
  maxRunMs?: number;
  /**
   * While calls whose payloads total at least this many bytes (UTF-8 JSON) run
   * or are still settling, nothing more is claimed. Never blocks an idle worker: an oversized
   * payload runs alone.
   * @default undefined (no limit)
   */
  maxInFlightBytes?: number;
  /**
   * Named capacities shared by task names (`worker.task(name, { resource })`):
   * at most `capacity` calls holding a resource run at once.
   * @default {}
   */
  resources?: Readonly<Record<string, number>>;
  /**
   * Backpressure for child submits (§5.6): the most `queued` tasks a queue
   * may hold before a `ctx.submit` to it waits for room — an integer ≥ 1 for
   * every queue, or an object `{ [queue]: limit }` gating only the named
   * queues. The worker installs the gate on `store.queueDepthGate` unless the
   * store already has one (a client sharing the store object installed its
   * own), and removes it in `close()`. A soft limit: N producers may
   * overshoot it by (N − 1) × 64.
   * @default undefined (no limit)
   */
  maxQueueDepth?: MaxQueueDepth;
  /**
   * How long a gated child submit waits for room before it rejects with
   * `QueueFull` (nothing enqueued). Integer ≥ 0.
   * @default 600000
   */
  maxQueueWaitMs?: number;
  /** First sleep between depth probes while a queue is full; doubles up to 5000 ms. Integer ≥ 1. @default 250 */
  queuePollIntervalMs?: number;
  /**
   * Receives errors the worker survives: failed claims (`phase: "claim"`),
   * heartbeat and settlement write failures, `EventLoopBlocked` and a task
   * option `retryBackoff` that threw or returned an unusable delay
   * (`phase: "execute"`, with `taskId`). Exceptions it throws are swallowed.
   * Errors retrying cannot fix (see `isFatalError`) are not survived: they
   * reject `run()` instead.
   * @default undefined (errors go to the logger)
   */
  onError?: (err: unknown, info: WorkerErrorInfo) => void;
  /**
   * Structural logger (`console`, pino, …). Without one, and without
   * `onError`, warnings and errors go to stderr (normal operation prints
   * nothing); `null` silences the worker.
   * @default stderr for warnings and errors, unless `onError` is given
   */
  logger?: Logger | null;
  /**
   * How long `stop()` lets running handlers finish. After it their signals
   * abort and the worker lets go of them: their tasks are left to lease
   * expiry, never settled from the abandoned call. Integer ≥ 0; any length
   * is honoured.
   * @default 30000
   */
  stopTimeoutMs?: number;
  /** `close()` also closes the store (for stores the worker was built around). @default false */
  closeStore?: boolean;
  /** Uniform source in [0, 1) for the backoff jitter; inject to pin delays in tests. @default Math.random */
  random?: () => number;
  /**
   * The clock the worker reads the time from and starts its timers on:
   * claim pacing and its error backoff, heartbeats and the blocked-loop
   * check, `maxRunMs`, the stop deadline, schedules, `ctx.wait`, and event
   * durations. For tests: `@cairnq/testing` passes a virtual clock that the
   * test moves by hand, with a store on the same clock. Leases, due times
   * and backoff delays are applied by the store against the store's own
   * clock (the database's on Postgres), never this one.
   * @default the system clock (`Date.now()`, Node's timers)
   */
  clock?: RuntimeClock;
  /**
   * OpenTelemetry traces (needs `@opentelemetry/api`): a CONSUMER span
   * `process <queue>` around each handler call, linked to the submitter's
   * `send <queue>` span (or its child, with `relation: "child"`), the
   * handler running inside it; PRODUCER spans for `ctx.submit`. `true` uses
   * the global tracer provider. See docs/telemetry.md.
   * @default false
   */
  tracing?: boolean | TracingOptions | undefined;
  /**
   * OpenTelemetry metrics (needs `@opentelemetry/api`): consumed tasks,
   * process and wait durations, outcomes, lost leases, slots in use. `true`
   * uses the global meter provider, looked up until one is registered.
   * See docs/telemetry.md.
   * @default false
   */
  metrics?: boolean | MetricsOptions | undefined;
}

/** {@link WorkerOptions} with defaults applied and values checked. */
export interface ResolvedWorkerOptions {
  readonly queues: readonly string[];
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly heartbeatIntervalMs: number;
  readonly pollIntervalMs: number;
  readonly claimBatch: number | null;
  readonly prefetch: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  readonly maxRunMs: number | null;
  readonly maxInFlightBytes: number | null;
  readonly resources: Readonly<Record<string, number>>;
  /** The validated `maxQueueDepth`, or `null` when unset. */
  readonly maxQueueDepth: MaxQueueDepth | null;
  readonly maxQueueWaitMs: number;
  readonly queuePollIntervalMs: number;
  readonly onError: ((err: unknown, info: WorkerErrorInfo) => void) | null;
  readonly logger: Logger | undefined;
  readonly stopTimeoutMs: number;
  readonly closeStore: boolean;
  readonly random: () => number;
  readonly clock: RuntimeClock;
  /** `tracing` checked; `null` when off. */
  readonly tracing: ResolvedTracing | null;
  /** `metrics` checked; `null` when off. */
  readonly metrics: ResolvedMetrics | null;
}

/**
 * The shortest lease a worker accepts. A renewal is a database round trip
 * plus a timer turn, and one late turn of a loaded event loop is routinely
 * 10 ms or more: a lease below this could lapse between two heartbeats.
 */
export const MIN_LEASE_MS = 20;

/** Every key of {@link WorkerOptions}, for the unknown-key check (the umbrella's factories list them too). */
export const WORKER_OPTION_KEYS = Object.freeze([
  "queues",
  "concurrency",
  "leaseMs",
  "heartbeatIntervalMs",
  "pollIntervalMs",
  "claimBatch",
  "prefetch",
  "retryBackoffMs",
  "retryBackoffMaxMs",
  "maxRunMs",
  "maxInFlightBytes",
  "resources",
  "maxQueueDepth",
  "maxQueueWaitMs",
  "queuePollIntervalMs",
  "onError",
  "logger",
  "stopTimeoutMs",
  "closeStore",
  "random",
  "clock",
  "tracing",
  "metrics",
] as const satisfies readonly (keyof WorkerOptions)[]);

/**
 * Refuses a `logger` that could never log: not an object, one with none of the four methods (`{}`, or a
 * misspelt `{ warning }`), or one whose level is not a function. Some of the methods are enough (`Logger`'s
 * are optional: a missing level is not logged).
 */
function requireLogger(logger: unknown): void {
  if (logger === undefined || logger === null) return;
  const must = "logger must be an object with debug/info/warn/error(message, fields) methods (some of them are enough), such as console, or null to silence the worker";
  if (typeof logger !== "object") throw new InvalidArgument("logger", `${must}; got ${describe(logger)}`);
  const given = LOG_LEVELS.filter((level) => (logger as Record<string, unknown>)[level] !== undefined);
  for (const level of given) {
    const method = (logger as Record<string, unknown>)[level];
    if (typeof method !== "function") throw new InvalidArgument("logger", `${must}; got one whose ${level} is ${describe(method)}`);
  }
  if (given.length === 0) throw new InvalidArgument("logger", `${must}; got ${describe(logger)} with none of them`);
}

const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** `undefined` and `null` both mean "not set" for the optional limits. */
function unset(value: unknown): boolean {
  return value === undefined || value === null;
}

/**
 * Applies the §8.1 defaults and rejects bad values with `InvalidArgument`
 * naming the option, so a misconfigured worker fails at construction rather
 * than in its poll loop.
 */
export function resolveWorkerOptions(input: WorkerOptions = {}): ResolvedWorkerOptions {
  const options = checkOptions(input, "new Worker(store, options)", WORKER_OPTION_KEYS) as WorkerOptions;
  const queues = options.queues ?? WORKER_DEFAULTS.queues;
  if (!Array.isArray(queues) || queues.length === 0) {
    throw new InvalidArgument("queues", "queues must be a non-empty array of queue names; omit it to use ['default']");
  }
  const uniqueQueues = [...new Set(queues.map((q, i) => requireName(q, `queues[${i}]`)))];

  const concurrency = options.concurrency === undefined ? WORKER_DEFAULTS.concurrency : requireCount(options.concurrency, "concurrency");

  // Each claim and heartbeat leases until now + leaseMs: the store's bound on a delay (MAX_DELAY_MS) holds here too.
  const leaseMs = requireDelayMs(optionalDurationMs(options.leaseMs, "leaseMs", WORKER_DEFAULTS.leaseMs, { min: MIN_LEASE_MS }), "leaseMs");
  const heartbeatIntervalMs = optionalDurationMs(options.heartbeatIntervalMs, "heartbeatIntervalMs", null, { min: 1 });
  if (heartbeatIntervalMs === null && defaultHeartbeatIntervalMs(leaseMs) >= leaseMs) {
    throw new InvalidArgument(
      "leaseMs",
      `leaseMs ${leaseMs} is not longer than the default heartbeat interval (${defaultHeartbeatIntervalMs(leaseMs)} ms), so no heartbeat would renew it in time; ` +
        `raise leaseMs or set heartbeatIntervalMs below it`,
    );
  }
  if (heartbeatIntervalMs !== null && heartbeatIntervalMs >= leaseMs) {
    throw new InvalidArgument(
      "heartbeatIntervalMs",
      `heartbeatIntervalMs (${heartbeatIntervalMs}) must be less than leaseMs (${leaseMs}): a heartbeat renews the lease, so it must come before the lease runs out; ` +
        `lower heartbeatIntervalMs (the default is leaseMs / 3) or raise leaseMs`,
    );
  }
  const pollIntervalMs = optionalDurationMs(options.pollIntervalMs, "pollIntervalMs", WORKER_DEFAULTS.pollIntervalMs, { min: 1 });
  const claimBatch = unset(options.claimBatch) ? null : requireCount(options.claimBatch, "claimBatch");
  const prefetch = optionalCount(options.prefetch, "prefetch", 0, 0);
  // A retry is due now + the backoff delay, which never exceeds the larger of the two: both within MAX_DELAY_MS.
  const retryBackoffMs = options.retryBackoffMs === undefined ? WORKER_DEFAULTS.retryBackoffMs : requireDelayMs(options.retryBackoffMs, "retryBackoffMs");
  const retryBackoffMaxMs = options.retryBackoffMaxMs === undefined ? WORKER_DEFAULTS.retryBackoffMaxMs : requireDelayMs(options.retryBackoffMaxMs, "retryBackoffMaxMs");
  // Only when both are given: a base alone above the default cap is clamped as §6 says (see the TSDoc).
  if (options.retryBackoffMs !== undefined && options.retryBackoffMaxMs !== undefined) {
    requireCapNotBelowBase({ ms: retryBackoffMs, name: "retryBackoffMs" }, { ms: retryBackoffMaxMs, name: "retryBackoffMaxMs" }, "retryBackoffMaxMs");
  }
  const maxRunMs = unset(options.maxRunMs) ? null : optionalDurationMs(options.maxRunMs, "maxRunMs", null, { min: 1 });
  const maxInFlightBytes = unset(options.maxInFlightBytes) ? null : optionalCount(options.maxInFlightBytes, "maxInFlightBytes", null);
  const stopTimeoutMs = optionalDurationMs(options.stopTimeoutMs, "stopTimeoutMs", DEFAULT_STOP_TIMEOUT_MS);

  const resources: Record<string, number> = {};
  if (options.resources !== undefined && options.resources !== null) {
    if (typeof options.resources !== "object" || Array.isArray(options.resources)) {
      throw new InvalidArgument("resources", "resources must be an object mapping a resource name to its capacity (an integer ≥ 1)");
    }
    for (const [name, capacity] of Object.entries(options.resources)) {
      resources[requireName(name, "resources key")] = requireCount(capacity, `resources.${name}`);
    }
  }

  // Validated here (null included) so a bad limit fails at construction; the gate keeps the value as given.
  if (options.maxQueueDepth !== undefined) normalizeMaxQueueDepth(options.maxQueueDepth);
  const maxQueueDepth = options.maxQueueDepth ?? null;
  // Checked even without maxQueueDepth, so a bad value fails here instead of being ignored.
  const { maxQueueWaitMs, queuePollIntervalMs } = resolveGateTiming(options);

  requireHook(options.onError, "onError", "(err, { phase, taskId }) => void");
  if (options.random !== undefined && typeof options.random !== "function") {
    throw new InvalidArgument("random", "random must be a function returning a number in [0, 1)");
  }
  requireLogger(options.logger);
  if (options.closeStore !== undefined && typeof options.closeStore !== "boolean") {
    // Its truthiness would decide: closeStore: "false" (an environment variable) would close the store.
    throw new InvalidArgument(
      "closeStore",
      `closeStore must be true or false, got ${describe(options.closeStore)}; convert an environment variable first (closeStore: process.env.X === "true")`,
    );
  }
  // Quiet when healthy, never silent when not: without a logger or onError, warnings reach stderr.
  const logger = fallbackLogger(options.logger, options.onError);

  return {
    queues: Object.freeze(uniqueQueues),
    concurrency,
    leaseMs,
    heartbeatIntervalMs: heartbeatIntervalMs ?? defaultHeartbeatIntervalMs(leaseMs),
    pollIntervalMs,
    claimBatch,
    prefetch,
    retryBackoffMs,
    retryBackoffMaxMs,
    maxRunMs,
    maxInFlightBytes,
    resources: Object.freeze(resources),
    maxQueueDepth,
    maxQueueWaitMs,
    queuePollIntervalMs,
    onError: options.onError ?? null,
    logger,
    stopTimeoutMs,
    closeStore: options.closeStore ?? false,
    random: options.random ?? Math.random,
    clock: optionalClock(options.clock, "clock"),
    tracing: resolveTracing(options.tracing, "new Worker(store, options)"),
    metrics: resolveMetrics(options.metrics, "new Worker(store, options)"),
  };
}
