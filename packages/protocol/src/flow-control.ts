/**
 * Flow control across processes — an extension of protocol v1 (not part of
 * the v1 contract; a v1 peer sharing the database neither knows nor obeys it).
 *
 * Terminology:
 * - **limited name**: a task name a claim carries {@link FlowControl} for.
 * - **running** (what `globalConcurrency` counts): rows of that name with
 *   `status = 'running'` and a lease ({@link RUNNING_OF_NAME}) after the
 *   claim's own lease recovery — so an expired lease stops counting as soon
 *   as any claim cycle recovers it, and a task whose handler lost its lease
 *   is no longer counted even if that handler is still executing somewhere.
 * - **rate window** (what `rateLimit` counts): the claims of that name
 *   recorded at `claimed_at_ms` with `claimed_at_ms > now − perMs`
 *   ({@link inRateWindow}); "at most `max` claims in any window of `perMs`"
 *   means every half-open interval `(t − perMs, t]` holds at most `max`
 *   recorded claims. A claim is recorded by a statement after its draw (so
 *   the recorded time is never before the row's lease start) and checked by a
 *   statement before the draw; with the check serialised per name this makes
 *   the bound exact for recorded times and draw times alike.
 * - **allowance**: how many more rows of a limited name one claim cycle may
 *   take ({@link flowAllowance}).
 *
 * Where the check is exact: a store evaluates the allowance inside the claim
 * transaction, after lease recovery, holding a lock that serialises claims
 * of that name ({@link flowLockKey} through the store's key lock: SQLite's
 * single writer needs none, Postgres takes a transaction-scoped advisory lock
 * on it). Claims of other names never wait for it. Every worker claiming a
 * limited name must declare the same limits: a claim that carries none (or
 * a peer's) is not held back.
 */
import type { Expr } from "./expr.js";
import { x } from "./expr.js";
import { describe } from "./describe.js";
import { InvalidArgument } from "./errors.js";
import type { ClaimDraw, ClaimInput } from "./store.js";
import type { Task } from "./task.js";

/** At most `max` claims of a name in any window of `perMs` milliseconds, across every worker of the database. */
export interface RateLimit {
  /** Claims per window, an integer ≥ 1. */
  readonly max: number;
  /** The window, integer milliseconds ≥ 1 (at most 2^31 − 1). */
  readonly perMs: number;
}

/** The cross-process limits of one task name (task options `globalConcurrency`, `rateLimit`). */
export interface FlowControl {
  /** At most this many tasks of the name `running` across every worker of the database; an integer ≥ 1. @default unlimited */
  readonly globalConcurrency?: number;
  /** @default unlimited */
  readonly rateLimit?: RateLimit;
  /** At most this many tasks of the name and one group `running` across every worker (see `groups.ts`); an integer ≥ 1. @default unlimited */
  readonly groupConcurrency?: number;
  /** At most `max` claims of the name and one group in any window of `perMs` (see `groups.ts`). @default unlimited */
  readonly groupRateLimit?: RateLimit;
}

/** A validated {@link FlowControl}: `null` = that limit is not set. */
export interface NormalizedFlowControl {
  readonly globalConcurrency: number | null;
  readonly rateLimit: RateLimit | null;
  /** Absent or `null` = not set. */
  readonly groupConcurrency?: number | null;
  /** Absent or `null` = not set. */
  readonly groupRateLimit?: RateLimit | null;
}

/** The longest window a rate limit may have (the largest delay Node timers honour). */
export const MAX_RATE_WINDOW_MS = 2_147_483_647;
/** Key-lock prefix of the per-name flow-control lock ({@link flowLockKey}). */
export const FLOW_LOCK_PREFIX = "cairnq:flow:";

const FLOW_KEYS = ["globalConcurrency", "rateLimit", "groupConcurrency", "groupRateLimit"] as const;
const RATE_KEYS = ["max", "perMs"] as const;

function fail(argument: string, message: string): never {
  throw new InvalidArgument(argument, message);
}

function plainObject(value: unknown, argument: string, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(argument, `${argument} must be ${what}, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], argument: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(`${argument}.${key}`, `${argument} has no option '${key}'; valid options are ${allowed.join(", ")}`);
  }
}

function positiveInt(value: unknown, argument: string, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    fail(argument, `${argument} must be an integer from 1 to ${max}, got ${describe(value)}`);
  }
  return value;
}

/**
 * Validates one name's limits strictly: unknown keys, non-integers and
 * values below 1 are an `InvalidArgument` naming the option.
 *
 * @param argument - How the caller names the object in messages, e.g. `task 'email' options`.
 * @returns `null` when neither limit is set.
 */
export function normalizeFlowControl(input: unknown, argument = "flowControl"): NormalizedFlowControl | null {
  if (input === undefined || input === null) return null;
  const value = plainObject(input, argument, "an object { globalConcurrency?, rateLimit?, groupConcurrency?, groupRateLimit? }");
  onlyKeys(value, FLOW_KEYS, argument);
  const globalConcurrency = value.globalConcurrency === undefined ? null : positiveInt(value.globalConcurrency, `${argument}.globalConcurrency`, 2_147_483_647);
  const rateLimit = rateLimitOf(value.rateLimit, `${argument}.rateLimit`);
  const groupConcurrency = value.groupConcurrency === undefined ? null : positiveInt(value.groupConcurrency, `${argument}.groupConcurrency`, 2_147_483_647);
  const groupRateLimit = rateLimitOf(value.groupRateLimit, `${argument}.groupRateLimit`);
  if (globalConcurrency === null && rateLimit === null && groupConcurrency === null && groupRateLimit === null) return null;
  if (groupConcurrency === null && groupRateLimit === null) return Object.freeze({ globalConcurrency, rateLimit });
  return Object.freeze({ globalConcurrency, rateLimit, groupConcurrency, groupRateLimit });
}

function rateLimitOf(input: unknown, argument: string): RateLimit | null {
  if (input === undefined) return null;
  const rate = plainObject(input, argument, "an object { max, perMs }");
  onlyKeys(rate, RATE_KEYS, argument);
  if (rate.max === undefined || rate.perMs === undefined) fail(argument, `${argument} needs both max and perMs, e.g. { max: 10, perMs: 1000 }`);
  return Object.freeze({
    max: positiveInt(rate.max, `${argument}.max`, 2_147_483_647),
    perMs: positiveInt(rate.perMs, `${argument}.perMs`, MAX_RATE_WINDOW_MS),
  });
}

/** Whether `limits` has a group limit (`groupConcurrency` or `groupRateLimit`), which makes its name grouped (see `groups.ts`). */
export function hasGroupLimits(limits: NormalizedFlowControl | null | undefined): boolean {
  return limits != null && ((limits.groupConcurrency ?? null) !== null || (limits.groupRateLimit ?? null) !== null);
}

/**
 * The limits of a claim (`ClaimInput.flowControl`), validated: name → limits,
 * names without a limit left out. `null` when the claim carries none.
 */
export function claimFlowControl(input: Pick<ClaimInput, "flowControl">): ReadonlyMap<string, NormalizedFlowControl> | null {
  const raw = input.flowControl;
  if (raw === undefined || raw === null) return null;
  const byName = plainObject(raw, "flowControl", "an object mapping task names to { globalConcurrency?, rateLimit? }");
  const out = new Map<string, NormalizedFlowControl>();
  for (const [name, limits] of Object.entries(byName)) {
    if (name.length === 0) fail("flowControl", "flowControl names must be non-empty strings");
    const normalized = normalizeFlowControl(limits, `flowControl['${name}']`);
    if (normalized !== null) out.set(name, normalized);
  }
  return out.size === 0 ? null : out;
}

/** The key a store locks (with its key lock) to serialise the flow-control check of `name`. */
export function flowLockKey(name: string): string {
  return FLOW_LOCK_PREFIX + name;
}

/** The parameter the running count filters on. */
export const FLOW_NAME = x.param("name", "text");

/**
 * What `globalConcurrency` counts: running rows of `:name`. Written with the
 * predicate of the partial lease index (`status = 'running' AND
 * lease_until_ms IS NOT NULL`, equivalent by the §4 invariant) so a store
 * reads only running rows, however many finished rows the name has.
 */
export const RUNNING_OF_NAME: Expr = x.and(x.eq(x.col("status"), x.lit("running")), x.notNull(x.col("lease_until_ms")), x.eq(x.col("name"), FLOW_NAME));

/** Whether a claim recorded at `claimedAtMs` is inside the rate window ending at `nowMs`: `claimedAtMs > nowMs − perMs`. */
export function inRateWindow(claimedAtMs: number, nowMs: number, perMs: number): boolean {
  return claimedAtMs > nowMs - perMs;
}

/** Recorded claims at or before this instant are outside every window still to be checked, and may be deleted. */
export function rateWindowStartMs(nowMs: number, perMs: number): number {
  return nowMs - perMs;
}

/**
 * How many more rows of a name this claim cycle may take: the smaller of
 * `globalConcurrency − running` and `rateLimit.max − claims in the window`
 * (each only when set), never below 0.
 */
export function flowAllowance(limits: NormalizedFlowControl, running: number, claimsInWindow: number): number {
  let allowance = Number.POSITIVE_INFINITY;
  if (limits.globalConcurrency !== null) allowance = Math.min(allowance, limits.globalConcurrency - running);
  if (limits.rateLimit !== null) allowance = Math.min(allowance, limits.rateLimit.max - claimsInWindow);
  return Math.max(0, allowance);
}

/** A claim's draw planner (`ClaimInput.draws`). */
export type DrawPlanner = (claimedSoFar: readonly Task[], index: number) => ClaimDraw | null;

/**
 * Wraps a claim's draw planner so no draw takes more rows of a limited name
 * than its allowance. Each draw `(names, limit)` becomes: one draw over its
 * unlimited names, then one draw per limited name capped by what is left of
 * both `limit` and that name's allowance (a cap of 0 draws nothing, so the
 * store runs no statement). Rows of limited names consume the allowance as
 * they are drawn. A draw the inner planner marks `last` passes the mark to
 * the last of its parts (nothing follows that one either). A draw with `names: null` (any name) cannot be capped per
 * name, so it is rejected while limits are in force.
 *
 * @param allowance - Name → allowance at the start of the cycle ({@link flowAllowance}); decremented in place.
 */
export function flowLimitedDraws(draws: DrawPlanner, allowance: Map<string, number>): DrawPlanner {
  const pending: { names: string[]; cap: string | null }[] = [];
  let seen = 0;
  let index = 0;
  let current: { limit: number; start: number; last: boolean } | null = null;
  return (claimedSoFar) => {
    for (; seen < claimedSoFar.length; seen++) {
      const name = (claimedSoFar[seen] as Task).name;
      const left = allowance.get(name);
      if (left !== undefined) allowance.set(name, left - 1);
    }
    for (;;) {
      const next = pending.shift();
      if (next !== undefined && current !== null) {
        const remaining = current.limit - (claimedSoFar.length - current.start);
        const cap = next.cap === null ? remaining : Math.min(remaining, Math.max(0, allowance.get(next.cap) as number));
        // The inner draw's promise carries over to the last of its parts.
        return current.last && pending.length === 0 ? { names: next.names, limit: Math.max(0, cap), last: true } : { names: next.names, limit: Math.max(0, cap) };
      }
      const draw = draws(claimedSoFar, index++);
      if (draw === null) return null;
      if (draw.names === null) {
        fail("draws", "a claim with flowControl must name the task names of every draw (names: null would take limited names unchecked)");
      }
      current = { limit: draw.limit, start: claimedSoFar.length, last: draw.last === true };
      const free = draw.names.filter((name) => !allowance.has(name));
      if (free.length > 0) pending.push({ names: free, cap: null });
      for (const name of draw.names) if (allowance.has(name)) pending.push({ names: [name], cap: name });
      if (pending.length === 0) return { names: [], limit: 0 };
    }
  };
}
