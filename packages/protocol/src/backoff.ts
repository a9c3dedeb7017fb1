/**
 * Retry backoff (§6): how long a retryable failure waits before it is claimable again.
 *
 * The worker and `ctx.fail` must share this one function so a task's retry
 * schedule does not depend on how it failed.
 */

/** The §6 defaults: the first retry waits about 1 s, later ones double up to 30 s. */
export const RETRY_BACKOFF_DEFAULTS: Readonly<{ baseMs: number; capMs: number }> = Object.freeze({
  baseMs: 1000,
  capMs: 30000,
});

/**
 * The delay before retrying after attempt number `attempt` failed (§6, "equal jitter").
 *
 * The window `w = min(capMs, baseMs × 2^(attempt−1))` doubles per attempt;
 * the delay is drawn uniformly from `[floor(w/2), w)`, so retries of tasks
 * that failed together spread out while each still waits at least half the
 * window. `baseMs ≤ 0` disables backoff (0). Non-retryable failures pass 0
 * instead of calling this. At the defaults: attempt 1 → [500, 1000),
 * 2 → [1000, 2000), … 5 → [8000, 16000), ≥ 6 → [15000, 30000).
 *
 * @param attempt - The failing attempt's number (≥ 1; lower values act as 1).
 * @param baseMs - @default 1000
 * @param capMs - @default 30000
 * @param random - Uniform in [0, 1); injectable so tests pin it. @default Math.random
 * @example
 * ```ts
 * const delayMs = retryable ? retryDelayMs(task.attempt, opts.retryBackoffMs, opts.retryBackoffMaxMs) : 0;
 * ```
 */
export function retryDelayMs(
  attempt: number,
  baseMs: number = RETRY_BACKOFF_DEFAULTS.baseMs,
  capMs: number = RETRY_BACKOFF_DEFAULTS.capMs,
  random: () => number = Math.random,
): number {
  if (baseMs <= 0) return 0;
  const windowMs = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  const minMs = Math.floor(windowMs / 2);
  return minMs + Math.floor(random() * (windowMs - minMs));
}
