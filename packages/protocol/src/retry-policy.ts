/**
 * Retry policy per task name: task options that replace the worker's retry
 * backoff (§6) for one name. A worker calls {@link policyRetryDelayMs} for
 * every retryable failure of a name that has a policy, and `retryDelayMs`
 * with its own settings for every other name.
 */
import { retryDelayMs } from "./backoff.js";
import { describe } from "./describe.js";
import { InvalidArgument } from "./errors.js";

/** The retry options of one task name (task options of `worker.task`). */
export interface RetryPolicy {
  /**
   * Base of this name's retry backoff (§6); 0 disables backoff. Refused when
   * it is above the cap in effect, if that cap was set explicitly (here or on
   * the worker); see {@link requireCapNotBelowBase}.
   * @default the worker's `retryBackoffMs`
   */
  readonly retryBackoffMs?: number;
  /**
   * Cap of this name's backoff window. Refused when below the base in effect,
   * if that base was set explicitly (here or on the worker).
   * @default the worker's `retryBackoffMaxMs`
   */
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

/**
 * The longest retry delay a task name's policy may ask for: its durations, and what its `retryBackoff`
 * returns (a longer answer is reported and replaced by the default backoff). The value is the largest delay
 * a Node timer honours; the delay itself is written as the task's run time, not set as a timer, so the
 * worker-wide options are bounded by `MAX_DELAY_MS` instead.
 */
export const MAX_RETRY_DELAY_MS = 2_147_483_647;

function durationOrNull(value: unknown, argument: string): number | null {
  if (value === undefined) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_RETRY_DELAY_MS) {
    throw new InvalidArgument(argument, `${argument} must be an integer number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS}, got ${describe(value)}`);
  }
  return value;
}

/** A backoff duration as a user set it, and how the message names it. */
export interface NamedDuration {
  readonly ms: number;
  /** E.g. `retryBackoffMs`, `task 'email' options.retryBackoffMaxMs`, `the worker's retryBackoffMs`. */
  readonly name: string;
}

/**
 * Refuses a retry backoff whose cap is below its base. §6 clamps every
 * window to the cap, so such a configuration runs — every retry waits
 * between half the cap and the cap — but no retry ever waits the base that
 * was asked for: almost certainly a mistake (the two swapped, or a unit
 * slip). Checked only when both were set explicitly: `null` stands for a
 * duration left to its default, so `retryBackoffMs: 600_000` alone keeps
 * §6's default cap of 30000 and is accepted, as §6 computes it.
 *
 * @param argument - The input the error names: the one the caller set in the call being checked.
 * @throws InvalidArgument naming `argument` and both values.
 * @example
 * ```ts
 * requireCapNotBelowBase({ ms: 5000, name: "retryBackoffMs" }, { ms: 1000, name: "retryBackoffMaxMs" }, "retryBackoffMaxMs"); // throws
 * ```
 */
export function requireCapNotBelowBase(base: NamedDuration | null, cap: NamedDuration | null, argument: string): void {
  if (base === null || cap === null || cap.ms >= base.ms) return;
  throw new InvalidArgument(
    argument,
    `${cap.name} (${cap.ms}) is below ${base.name} (${base.ms}): the cap clamps every backoff window (§6), so no retry would wait as long as the base asks; ` +
      `raise ${cap.name} to at least ${base.ms}, or lower ${base.name}`,
  );
}

/** The worker's backoff durations as its options set them: `null` for one left to its default. */
export interface GivenBackoff {
  readonly baseMs: number | null;
  readonly capMs: number | null;
}

/**
 * Validates one name's retry options: integers ≥ 0 for the two durations, a
 * function for `retryBackoff`, never a function together with a duration,
 * and ({@link requireCapNotBelowBase}) a cap in effect not below the base in
 * effect, each the name's own, else the worker's when set explicitly.
 *
 * @param argument - How the caller names the options in messages, e.g. `task 'email' options`.
 * @param worker - The worker's `retryBackoffMs` / `retryBackoffMaxMs` as given (`null`: its default). @default neither given
 * @returns `null` when none is set.
 */
export function normalizeRetryPolicy(input: RetryPolicy, argument = "retry policy", worker: GivenBackoff = { baseMs: null, capMs: null }): NormalizedRetryPolicy | null {
  const baseMs = durationOrNull(input.retryBackoffMs, `${argument}.retryBackoffMs`);
  const capMs = durationOrNull(input.retryBackoffMaxMs, `${argument}.retryBackoffMaxMs`);
  const compute = input.retryBackoff;
  if (compute !== undefined && typeof compute !== "function") {
    throw new InvalidArgument(`${argument}.retryBackoff`, `${argument}.retryBackoff must be a function (attempt, error) => delay in ms, got ${describe(compute)}`);
  }
  if (compute !== undefined && (baseMs !== null || capMs !== null)) {
    throw new InvalidArgument(
      `${argument}.retryBackoff`,
      `${argument} sets retryBackoff together with retryBackoffMs/retryBackoffMaxMs; retryBackoff computes the whole delay, so set either the function or the two durations`,
    );
  }
  if (baseMs === null && capMs === null) return compute === undefined ? null : Object.freeze({ baseMs, capMs, compute });
  const own = (ms: number | null, option: string): NamedDuration | null => (ms === null ? null : { ms, name: `${argument}.${option}` });
  const workers = (ms: number | null, option: string): NamedDuration | null => (ms === null ? null : { ms, name: `the worker's ${option}` });
  requireCapNotBelowBase(
    own(baseMs, "retryBackoffMs") ?? workers(worker.baseMs, "retryBackoffMs"),
    own(capMs, "retryBackoffMaxMs") ?? workers(worker.capMs, "retryBackoffMaxMs"),
    // The option this call set; the cap when it set both.
    capMs !== null ? `${argument}.retryBackoffMaxMs` : `${argument}.retryBackoffMs`,
  );
  return Object.freeze({ baseMs, capMs, compute: null });
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
