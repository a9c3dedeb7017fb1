/**
 * The worker's defaults from protocol v1 §8.1 and the wait loop's from §7.
 *
 * These are SDK behaviours every CairnQ worker shares (peers use the same
 * numbers), not database rules, so `@cairnq/protocol` does not carry them yet;
 * they are kept together here so they can move there unchanged.
 */

/** Handler calls run at once (§8.1). */
export const DEFAULT_CONCURRENCY = 1;

/** Idle sleep after an empty claim (§8.1). */
export const DEFAULT_POLL_INTERVAL_MS = 500;

/** Sleep after a failed claim cycle before trying again (§8.1). */
export const CLAIM_ERROR_SLEEP_MS = 250;

/** How long `stop()` lets handlers finish before abandoning them. Not a protocol number. */
export const DEFAULT_STOP_TIMEOUT_MS = 30_000;

/** The floor of the default heartbeat interval (§8.1). */
export const MIN_DEFAULT_HEARTBEAT_INTERVAL_MS = 50;

/**
 * The default heartbeat interval for a lease (§8.1): a third of the lease, so
 * two beats may be lost before it expires, but never below 50 ms.
 *
 * @example
 * ```ts
 * defaultHeartbeatIntervalMs(30_000); // 10000
 * ```
 */
export function defaultHeartbeatIntervalMs(leaseMs: number): number {
  return Math.max(MIN_DEFAULT_HEARTBEAT_INTERVAL_MS, Math.floor(leaseMs / 3));
}

/** `ctx.wait` defaults (§7). */
export const WAIT_DEFAULTS: Readonly<{ timeoutMs: number; pollMs: number; maxPollMs: number }> = Object.freeze({
  timeoutMs: 30_000,
  pollMs: 100,
  maxPollMs: 500,
});

/**
 * The next wait-poll interval (§7): grows by half, at least 1 ms, up to `maxPollMs`
 * (100, 150, 225, 337, 500, … at the defaults).
 */
export function nextPollMs(currentMs: number, maxPollMs: number): number {
  return Math.min(maxPollMs, Math.max(currentMs + 1, Math.floor(currentMs * 1.5)));
}
