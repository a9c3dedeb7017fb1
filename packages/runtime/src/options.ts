/**
 * The one options checker every CairnQ role uses (client, worker, task
 * options, factories, sweeper, scheduler): unknown keys are rejected with
 * the valid ones listed, durations and counts are checked, never coerced.
 */
import { InvalidArgument } from "@cairnq/protocol";
import { describe } from "@cairnq/protocol/adapter";

/**
 * The longest duration an option may hold: 2^52 ms (about 142,000 years).
 * Timers here honour any length by chaining; the bound keeps
 * `Date.now() + duration` a safe integer, as the protocol's `*_at_ms`
 * columns need.
 */
export const MAX_DURATION_MS = 2 ** 52;

/**
 * Rejects anything but a plain options object, and keys that are not
 * options: `concurency: 8` silently ignored would run at 1. `undefined` and
 * `null` stand for "no options" and give `{}`.
 *
 * @param what - How the caller wrote the call, for the message: `"new Worker(store, options)"`.
 * @param allowed - Every valid key.
 * @throws InvalidArgument naming the first unknown key, a close valid key
 *   ("did you mean 'concurrency'?") and the whole list.
 * @example
 * ```ts
 * const opts = checkOptions(options, "new Worker(store, options)", WORKER_OPTION_KEYS);
 * ```
 */
export function checkOptions(value: unknown, what: string, allowed: readonly string[]): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    // `what` is a call ("submit") or an option holding an object ("the combine option"), which has no "options" of its own.
    const subject = what.endsWith(" option") ? what : `${what} options`;
    throw new InvalidArgument("options", `${subject} must be an object, got ${Array.isArray(value) ? "an array" : `a ${typeof value}`}`);
  }
  for (const key of Object.keys(value)) {
    if (allowed.includes(key)) continue;
    const near = closest(key, allowed);
    const hint = near === null ? "" : ` (did you mean '${near}'?)`;
    throw new InvalidArgument(key, `'${key}' is not an option of ${what}${hint}; the options are ${allowed.join(", ")}`);
  }
  return value as Record<string, unknown>;
}

/**
 * The valid key closest to a misspelt one: a case-only difference, or at
 * most two single-character edits (insert, delete, substitute, swap of
 * neighbours) for keys of four or more characters; `null` when nothing is
 * that close.
 */
export function closest(key: string, allowed: readonly string[]): string | null {
  const lower = key.toLowerCase();
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    if (candidate.toLowerCase() === lower) return candidate;
    const limit = Math.min(2, Math.floor(Math.min(key.length, candidate.length) / 4));
    if (limit === 0) continue;
    const distance = editDistance(lower, candidate.toLowerCase(), limit);
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance, stopping early once every path exceeds `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev2: number[] = [];
  let prev: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row: number[] = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (prev2[j - 2] as number) + 1);
      row.push(d);
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > limit) return limit + 1;
    prev2 = prev;
    prev = row;
  }
  return prev[b.length] as number;
}

/** Options of {@link requireDurationMs}. */
export interface DurationRule {
  /** The smallest value allowed: 0 where "no wait" makes sense, 1 where it cannot work. @default 0 */
  min?: number;
  /** The largest value allowed. @default MAX_DURATION_MS */
  max?: number;
}

/**
 * What kind of value `value` is, in a few words with its article, for an error message that refuses it:
 * `null`, `undefined`, "an array", "an object", "a string", "a function", … One wording for every package
 * (worker registration calls, the virtual clock, the option checks here), so a mistake reads the same wherever
 * it is made.
 *
 * @example
 * ```ts
 * throw new InvalidArgument("handler", `needs a handler function, got ${describeKind(handler)}`);
 * ```
 */
export function describeKind(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return type === "object" ? "an object" : `a ${type}`;
}

/**
 * A hook option (`onError`, `authorize`, …): a function, or `undefined` for none; anything else is refused
 * at construction, not when the hook would first be called.
 *
 * @param name - The option's name, also the `InvalidArgument`'s `argument`.
 * @param signature - How the hook is called, for the message: `"(error, info) => void"`.
 * @throws InvalidArgument `"<name> must be a function <signature>, got <value>"`.
 * @example
 * ```ts
 * requireHook(options.onError, "onError", "(error, info) => void");
 * ```
 */
export function requireHook(value: unknown, name: string, signature: string): void {
  if (value !== undefined && typeof value !== "function") {
    throw new InvalidArgument(name, `${name} must be a function ${signature}, got ${describe(value)}`);
  }
}


/**
 * A duration option in milliseconds: a finite integer in `[min, max]`.
 * Any such value is honoured exactly by the runtime's timers (they chain
 * past Node's 2^31 − 1 ms limit), so nothing is clamped.
 *
 * @throws InvalidArgument naming the option, the rule and the value given.
 * @example
 * ```ts
 * const maxRunMs = requireDurationMs(options.maxRunMs, "maxRunMs", { min: 1 });
 * ```
 */
export function requireDurationMs(value: unknown, argument: string, rule: DurationRule = {}): number {
  const min = rule.min ?? 0;
  const max = rule.max ?? MAX_DURATION_MS;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const range = max === MAX_DURATION_MS ? `an integer number of milliseconds ≥ ${min}` : `an integer number of milliseconds from ${min} to ${max}`;
    throw new InvalidArgument(argument, `${argument} must be ${range}, got ${describe(value)}`);
  }
  return value;
}

/** {@link requireDurationMs} for an optional option: `undefined` gives `fallback`. */
export function optionalDurationMs<F>(value: unknown, argument: string, fallback: F, rule: DurationRule = {}): number | F {
  return value === undefined ? fallback : requireDurationMs(value, argument, rule);
}

/**
 * A count option (concurrency, batch size, capacity): an integer ≥ `min`.
 * `0`, `-1` and `1.5` are rejected, never rounded or raised to 1.
 *
 * @throws InvalidArgument naming the option and the value given.
 * @example
 * ```ts
 * const concurrency = requireCount(options.concurrency, "concurrency");
 * ```
 */
export function requireCount(value: unknown, argument: string, min = 1): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgument(argument, `${argument} must be an integer ≥ ${min}, got ${describe(value)}`);
  }
  return value;
}

/** {@link requireCount} for an optional option: `undefined` gives `fallback`. */
export function optionalCount<F>(value: unknown, argument: string, fallback: F, min = 1): number | F {
  return value === undefined ? fallback : requireCount(value, argument, min);
}
