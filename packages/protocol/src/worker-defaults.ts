/**
 * The worker defaults of protocol v1 §8.1. They are SDK behaviour rather than
 * database rules, but every CairnQ worker (in any language) uses the same
 * numbers, so a peer's worker and this one behave alike against one database.
 */
import { RETRY_BACKOFF_DEFAULTS } from "./backoff.js";
import { DEFAULT_LEASE_MS } from "./inputs.js";

/** The §8.1 defaults of a worker's options. */
export interface WorkerDefaults {
  /** Queues claimed from. */
  readonly queues: readonly string[];
  /** Handler calls run at once (calls, not tasks). */
  readonly concurrency: number;
  /** Lease taken by each claim and renewed by each heartbeat. */
  readonly leaseMs: number;
  /** Idle sleep after a claim found nothing. */
  readonly pollIntervalMs: number;
  /** Sleep after a failed claim cycle before trying again. */
  readonly claimErrorSleepMs: number;
  /** Base of the retry backoff (§6). */
  readonly retryBackoffMs: number;
  /** Cap of the retry backoff (§6). */
  readonly retryBackoffMaxMs: number;
  /** The floor of the default heartbeat interval; see {@link defaultHeartbeatIntervalMs}. */
  readonly minHeartbeatIntervalMs: number;
}

/**
 * The worker defaults of §8.1. The heartbeat interval depends on the lease:
 * see {@link defaultHeartbeatIntervalMs}.
 *
 * @example
 * ```ts
 * const pollIntervalMs = options.pollIntervalMs ?? WORKER_DEFAULTS.pollIntervalMs; // 500
 * ```
 */
export const WORKER_DEFAULTS: WorkerDefaults = Object.freeze({
  queues: Object.freeze(["default"]),
  concurrency: 1,
  leaseMs: DEFAULT_LEASE_MS,
  pollIntervalMs: 500,
  claimErrorSleepMs: 250,
  retryBackoffMs: RETRY_BACKOFF_DEFAULTS.baseMs,
  retryBackoffMaxMs: RETRY_BACKOFF_DEFAULTS.capMs,
  minHeartbeatIntervalMs: 50,
});

/**
 * The default heartbeat interval for a lease (§8.1): `max(50, floor(leaseMs / 3))` —
 * a third of the lease, so two beats may be lost before it expires, but
 * never below 50 ms.
 *
 * @example
 * ```ts
 * defaultHeartbeatIntervalMs(30_000); // 10000
 * defaultHeartbeatIntervalMs(100); // 50
 * ```
 */
export function defaultHeartbeatIntervalMs(leaseMs: number): number {
  return Math.max(WORKER_DEFAULTS.minHeartbeatIntervalMs, Math.floor(leaseMs / 3));
}
