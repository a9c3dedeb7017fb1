/**
 * Durations on the command line: `500ms`, `30s`, `15m`, `12h`, `7d`, `2w`,
 * and sums such as `1h30m`. A bare number is refused (is `30` seconds or
 * days?), with the spelling to use instead.
 */
import { UsageError } from "./usage-error.js";

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const PART = /(\d+(?:\.\d+)?)(ms|min|s|m|h|d|w)/gy;

/**
 * Parses a duration into milliseconds.
 *
 * @throws UsageError naming the option and the accepted spellings.
 * @example
 * ```ts
 * parseDuration("1h30m", "--older-than"); // 5_400_000
 * ```
 */
export function parseDuration(text: string, option: string): number {
  const trimmed = text.trim();
  const hint = `${option} takes a duration with a unit, such as 30s, 15m, 12h, 7d or 1h30m`;
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    throw new UsageError(`${hint}; got a bare number ${JSON.stringify(text)} — try ${option} ${trimmed}d (days) or ${option} ${trimmed}h (hours)`);
  }
  PART.lastIndex = 0;
  let total = 0;
  let matched = 0;
  for (let m = PART.exec(trimmed); m !== null; m = PART.exec(trimmed)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    matched = PART.lastIndex;
  }
  if (trimmed === "" || matched !== trimmed.length) throw new UsageError(`${hint}; got ${JSON.stringify(text)}`);
  return Math.round(total);
}
