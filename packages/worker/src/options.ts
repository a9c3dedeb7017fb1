import { DEFAULT_LEASE_MS, InvalidArgument, RETRY_BACKOFF_DEFAULTS, requireInt, requireName } from "@cairnq/protocol";
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  defaultHeartbeatIntervalMs,
} from "./defaults.js";
import type { WorkerLogger } from "./logger.js";

/** Where an error reported to `onError` happened (§8.1). */
export interface WorkerErrorInfo {
  /** `"claim"`: a claim cycle failed; `"execute"`: anything tied to a task (heartbeats, settlement writes, `EventLoopBlocked`). */
  readonly phase: "claim" | "execute";
  /** The task concerned (for a batch call, its first task). Absent for `"claim"`. */
  readonly taskId?: string;
}

/**
 * Options of a {@link Worker}. Every duration is in milliseconds.
 */
export interface WorkerOptions {
  /** Queues to claim from. @default ["default"] */
  queues?: readonly string[];
  /**
   * Handler calls run at once. Counts calls, not tasks: a batch of 10 is one
   * call. Values below 1 are raised to 1.
   * @default 1
   */
  concurrency?: number;
  /** Lease taken by each claim and renewed by each heartbeat. @default 30000 */
  leaseMs?: number;
  /** How often running tasks' leases are renewed. @default max(50, floor(leaseMs / 3)) */
  heartbeatIntervalMs?: number;
  /** Idle sleep after a claim found nothing (cut short by a push wakeup or `stop()`). @default 500 */
  pollIntervalMs?: number;
  /**
   * Row cap per draw: a source draws at most `max(1, floor(claimBatch / batch))`
   * calls per poll. Unset: a poll fills every free slot.
   * @default undefined
   */
  claimBatch?: number;
  /** Base of the retry backoff (§6); 0 disables backoff. @default 1000 */
  retryBackoffMs?: number;
  /** Cap of the retry backoff window (§6). @default 30000 */
  retryBackoffMaxMs?: number;
  /**
   * A handler call running longer is abandoned: its contexts lose their lease
   * (signal aborted) and its tasks fail retryably with `handler_timeout`.
   * @default undefined (no limit)
   */
  maxRunMs?: number;
  /**
   * While calls whose payloads total at least this many bytes (UTF-8 JSON) run,
   * nothing more is claimed. Never blocks an idle worker: an oversized
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
   * Receives errors the worker survives: failed claims (`phase: "claim"`),
   * heartbeat and settlement write failures and `EventLoopBlocked`
   * (`phase: "execute"`, with `taskId`). Exceptions it throws are swallowed.
   * @default undefined (errors go to `logger.error` only)
   */
  onError?: (err: unknown, info: WorkerErrorInfo) => void;
  /** Structural logger; nothing is printed without one. @default undefined */
  logger?: WorkerLogger;
  /**
   * How long `stop()` lets running handlers finish. After it their signals
   * abort and the worker lets go of them: their tasks are left to lease
   * expiry, never settled from the abandoned call.
   * @default 30000
   */
  stopTimeoutMs?: number;
  /** `close()` also closes the store (for stores the worker was built around). @default false */
  closeStore?: boolean;
  /** Uniform source in [0, 1) for the backoff jitter; inject to pin delays in tests. @default Math.random */
  random?: () => number;
}

/** {@link WorkerOptions} with defaults applied and values checked. */
export interface ResolvedWorkerOptions {
  readonly queues: readonly string[];
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly heartbeatIntervalMs: number;
  readonly pollIntervalMs: number;
  readonly claimBatch: number | null;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  readonly maxRunMs: number | null;
  readonly maxInFlightBytes: number | null;
  readonly resources: Readonly<Record<string, number>>;
  readonly onError: ((err: unknown, info: WorkerErrorInfo) => void) | null;
  readonly logger: WorkerLogger | undefined;
  readonly stopTimeoutMs: number;
  readonly closeStore: boolean;
  readonly random: () => number;
}

function optionalInt(value: unknown, argument: string, min: number): number | null {
  return value === undefined || value === null ? null : requireInt(value, argument, min);
}

/**
 * Applies the §8.1 defaults and rejects bad values with `InvalidArgument`
 * naming the option, so a misconfigured worker fails at construction rather
 * than in its poll loop.
 */
export function resolveWorkerOptions(options: WorkerOptions = {}): ResolvedWorkerOptions {
  if (options === null || typeof options !== "object") {
    throw new InvalidArgument("options", `worker options must be an object, got ${typeof options}`);
  }
  const queues = options.queues ?? ["default"];
  if (!Array.isArray(queues) || queues.length === 0) {
    throw new InvalidArgument("queues", "queues must be a non-empty array of queue names; omit it to use ['default']");
  }
  const uniqueQueues = [...new Set(queues.map((q, i) => requireName(q, `queues[${i}]`)))];

  let concurrency = DEFAULT_CONCURRENCY;
  if (options.concurrency !== undefined) {
    if (typeof options.concurrency !== "number" || Number.isNaN(options.concurrency)) {
      throw new InvalidArgument("concurrency", `concurrency must be a number (calls run at once), got ${String(options.concurrency)}`);
    }
    concurrency = Math.max(1, Math.floor(options.concurrency));
  }

  const leaseMs = optionalInt(options.leaseMs, "leaseMs", 1) ?? DEFAULT_LEASE_MS;
  const heartbeatIntervalMs = optionalInt(options.heartbeatIntervalMs, "heartbeatIntervalMs", 1) ?? defaultHeartbeatIntervalMs(leaseMs);
  const pollIntervalMs = optionalInt(options.pollIntervalMs, "pollIntervalMs", 1) ?? DEFAULT_POLL_INTERVAL_MS;
  const claimBatch = optionalInt(options.claimBatch, "claimBatch", 1);
  const retryBackoffMs = optionalInt(options.retryBackoffMs, "retryBackoffMs", 0) ?? RETRY_BACKOFF_DEFAULTS.baseMs;
  const retryBackoffMaxMs = optionalInt(options.retryBackoffMaxMs, "retryBackoffMaxMs", 0) ?? RETRY_BACKOFF_DEFAULTS.capMs;
  const maxRunMs = optionalInt(options.maxRunMs, "maxRunMs", 1);
  const maxInFlightBytes = optionalInt(options.maxInFlightBytes, "maxInFlightBytes", 1);
  const stopTimeoutMs = optionalInt(options.stopTimeoutMs, "stopTimeoutMs", 0) ?? DEFAULT_STOP_TIMEOUT_MS;

  const resources: Record<string, number> = {};
  if (options.resources !== undefined && options.resources !== null) {
    if (typeof options.resources !== "object" || Array.isArray(options.resources)) {
      throw new InvalidArgument("resources", "resources must be an object mapping a resource name to its capacity (an integer ≥ 1)");
    }
    for (const [name, capacity] of Object.entries(options.resources)) {
      resources[requireName(name, "resources key")] = requireInt(capacity, `resources.${name}`, 1);
    }
  }

  if (options.onError !== undefined && typeof options.onError !== "function") {
    throw new InvalidArgument("onError", "onError must be a function (err, { phase, taskId }) => void");
  }
  if (options.random !== undefined && typeof options.random !== "function") {
    throw new InvalidArgument("random", "random must be a function returning a number in [0, 1)");
  }

  return {
    queues: Object.freeze(uniqueQueues),
    concurrency,
    leaseMs,
    heartbeatIntervalMs,
    pollIntervalMs,
    claimBatch,
    retryBackoffMs,
    retryBackoffMaxMs,
    maxRunMs,
    maxInFlightBytes,
    resources: Object.freeze(resources),
    onError: options.onError ?? null,
    logger: options.logger,
    stopTimeoutMs,
    closeStore: options.closeStore ?? false,
    random: options.random ?? Math.random,
  };
}
