/**
 * Retry policy per task name: task options that replace the worker's retry
 * backoff (§6) for one name. A worker calls {@link policyRetryDelayMs} for
 * every retryable failure of a name that has a policy, and `retryDelayMs`
 * with its own settings for every other name.
 */
import { retryDelayMs } from "./backoff.js";
import { InvalidArgument } from "./errors.js";

/** The retry options of one task name (task options of `worker.task`). */
export interface RetryPolicy {
  /** Base of this name's retry backoff (§6); 0 disables backoff. @default the worker's `retryBackoffMs` */
  readonly retryBackoffMs?: number;
  /** Cap of this name's backoff window. @default the worker's `retryBackoffMaxMs` */
  readonly retryBackoffMaxMs?: number;
  /**
   * The delay in ms before retrying, computed by you: `attempt` is the number
   * of the attempt that failed (1 for the first), `error` what the handler
   * threw or passed to `ctx.fail` (for a `maxRunMs` timeout, the stored error
   * envelope). Must return an integer ≥ 0. Replaces `retryBackoffMs` and
   * `retryBackoffMaxMs`, so it cannot be combined with them.
   * @default undefined (the equal-jitter backoff of §6)
   */
  readonly retryBackoff?: (attempt: number, error: unknown) => number;
}

/** A validated {@link RetryPolicy}: `null` = take the worker's setting. */
export interface NormalizedRetryPolicy {
  readonly baseMs: number | null;
  readonly capMs: number | null;
  readonly compute: ((attempt: number, error: unknown) => number) | null;
}

/** The longest retry delay a policy may ask for (the largest delay Node timers honour). */
export const MAX_RETRY_DELAY_MS = 2_147_483_647;

function durationOrNull(value: unknown, argument: string): number | null {
  if (value === undefined) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_RETRY_DELAY_MS) {
    throw new InvalidArgument(argument, `${argument} must be an integer number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS}, got ${typeof value === "number" ? String(value) : typeof value}`);
  }
  return value;
}

/**
 * Validates one name's retry options: integers ≥ 0 for the two durations, a
 * function for `retryBackoff`, never a function together with a duration.
 *
 * @param argument - How the caller names the options in messages, e.g. `task 'email' options`.
 * @returns `null` when none is set.
 */
export function normalizeRetryPolicy(input: RetryPolicy, argument = "retry policy"): NormalizedRetryPolicy | null {
  const baseMs = durationOrNull(input.retryBackoffMs, `${argument}.retryBackoffMs`);
  const capMs = durationOrNull(input.retryBackoffMaxMs, `${argument}.retryBackoffMaxMs`);
  const compute = input.retryBackoff;
  if (compute !== undefined && typeof compute !== "function") {
    throw new InvalidArgument(`${argument}.retryBackoff`, `${argument}.retryBackoff must be a function (attempt, error) => delay in ms, got ${compute === null ? "null" : typeof compute}`);
  }
  if (compute !== undefined && (baseMs !== null || capMs !== null)) {
    throw new InvalidArgument(
      `${argument}.retryBackoff`,
      `${argument} sets retryBackoff together with retryBackoffMs/retryBackoffMaxMs; retryBackoff computes the whole delay, so set either the function or the two durations`,
    );
  }
  if (baseMs === null && capMs === null && compute === undefined) return null;
  return Object.freeze({ baseMs, capMs, compute: compute ?? null });
}

/** What {@link policyRetryDelayMs} decided: the delay, and the problem with `retryBackoff`'s answer if it was unusable. */
export interface PolicyDelay {
  readonly delayMs: number;
  /** Set when `retryBackoff` threw or returned something other than an integer from 0 to {@link MAX_RETRY_DELAY_MS}; `delayMs` is then the §6 backoff of the durations in effect. */
  readonly problem: InvalidArgument | null;
}

/**
 * The delay before retrying after attempt `attempt` of a name with `policy`
 * failed retryably. `retryBackoff`, when set, decides; a throw or an unusable
 * answer falls back to the §6 backoff (so the task still retries) and is
 * reported as `problem` for the worker to surface. Otherwise §6's
 * `retryDelayMs` with the policy's durations, each defaulting to the
 * worker's.
 *
 * @param worker - The worker's `retryBackoffMs` / `retryBackoffMaxMs`.
 */
export function policyRetryDelayMs(
  policy: NormalizedRetryPolicy,
  worker: { readonly baseMs: number; readonly capMs: number },
  attempt: number,
  error: unknown,
  random: () => number = Math.random,
): PolicyDelay {
  const fallback = (): number => retryDelayMs(attempt, policy.baseMs ?? worker.baseMs, policy.capMs ?? worker.capMs, random);
  if (policy.compute === null) return { delayMs: fallback(), problem: null };
  let answer: unknown;
  try {
    answer = policy.compute(attempt, error);
  } catch (err) {
    const problem = new InvalidArgument("retryBackoff", `retryBackoff threw for attempt ${attempt} (${err instanceof Error ? err.message : String(err)}); the task retries after the default backoff instead`, { cause: err });
    return { delayMs: fallback(), problem };
  }
  if (isThenable(answer)) {
    // Not awaited: the delay is part of the settlement the worker writes now.
    answer.then(undefined, () => {});
    const problem = new InvalidArgument(
      "retryBackoff",
      `retryBackoff returned a Promise for attempt ${attempt}; it must be synchronous and return an integer number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS} (not an async function). The task retries after the default backoff instead`,
    );
    return { delayMs: fallback(), problem };
  }
  if (typeof answer !== "number" || !Number.isInteger(answer) || answer < 0 || answer > MAX_RETRY_DELAY_MS) {
    const problem = new InvalidArgument(
      "retryBackoff",
      `retryBackoff returned ${typeof answer === "number" ? String(answer) : typeof answer} for attempt ${attempt}; it must return an integer number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS} (use Math.round). The task retries after the default backoff instead`,
    );
    return { delayMs: fallback(), problem };
  }
  return { delayMs: answer, problem: null };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}
