/**
 * Times for people, shared by the client's `explain` and the `cairnq` CLI so
 * that both say "in 5 min", "3 s ago" and "4 min 10 s" the same way:
 * durations, relative times, ISO instants.
 */

const UNITS: readonly (readonly [ms: number, label: string])[] = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1000, "s"],
];

/**
 * How {@link formatDuration} drops what its units cannot show:
 * - `"down"`: at most two units, the rest dropped — for how long ago or how
 *   long something took, where "4 min 10 s" for 4 min 10.8 s is fine;
 * - `"up"`: never less than the duration — to say when something will be so
 *   (a wait it must not undercut): tenths of a second below a minute
 *   (`"2.7 s"` for 2 670 ms), else two units with the last rounded up
 *   (`"1 min 2 s"` for 61 001 ms);
 * - `"exact"`: every unit needed, seconds with their milliseconds
 *   (`"1.5 s"`, `"59.999 s"`, `"1 min 30.5 s"`) — for a configured length,
 *   such as a rate limit's window, which must be shown as it is.
 */
export type DurationRounding = "down" | "up" | "exact";

/**
 * A duration for people: `"850 ms"`, `"12 s"`, `"4 min 10 s"`, `"3 h 5 min"`,
 * `"2 d 4 h"` (at most two units, rounded down), unless `rounding` says
 * otherwise ({@link DurationRounding}). Below a second it is always in ms.
 *
 * @param rounding - What to do with what two units cannot show. @default "down"
 * @example
 * ```ts
 * formatDuration(250_000); // "4 min 10 s"
 * formatDuration(2_670, "up"); // "2.7 s": never early
 * formatDuration(1_500, "exact"); // "1.5 s"
 * ```
 */
export function formatDuration(ms: number, rounding: DurationRounding = "down"): string {
  if (rounding === "exact") return exactDuration(Math.abs(Math.round(ms)));
  if (rounding === "down") return twoUnits(Math.abs(Math.round(ms)));
  const abs = Math.ceil(Math.abs(ms));
  if (abs < 1000) return `${abs} ms`;
  // Rounded up to the last unit shown, the value is exactly two units (or, when it carried into the next
  // unit, exactly that one: 59 999 ms is 1 min), so the two-unit form then drops nothing.
  const step = abs < 60_000 ? 100 : abs < 3_600_000 ? 1000 : abs < 86_400_000 ? 60_000 : 3_600_000;
  const up = Math.ceil(abs / step) * step;
  return up < 60_000 ? `${up / 1000} s` : twoUnits(up);
}

/** At most two units, the rest dropped; `abs` ≥ 0. */
function twoUnits(abs: number): string {
  if (abs < 1000) return `${abs} ms`;
  const first = UNITS.findIndex(([unit]) => abs >= unit);
  const [unit, label] = UNITS[first] as readonly [number, string];
  const n = Math.floor(abs / unit);
  const next = UNITS[first + 1];
  if (next === undefined) return `${n} ${label}`;
  const m = Math.floor((abs - n * unit) / next[0]);
  return m === 0 ? `${n} ${label}` : `${n} ${label} ${m} ${next[1]}`;
}

/** Every unit with a count, seconds with their milliseconds as decimals; `abs` ≥ 0, whole ms. */
function exactDuration(abs: number): string {
  if (abs < 1000) return `${abs} ms`;
  const parts: string[] = [];
  let rest = abs;
  for (const [unit, label] of UNITS) {
    const n = unit === 1000 ? rest / 1000 : Math.floor(rest / unit);
    if (n > 0) parts.push(`${n} ${label}`);
    rest -= unit === 1000 ? rest : n * unit;
  }
  return parts.join(" ");
}

/**
 * An instant relative to `nowMs`: `"in 5 min"`, `"3 s ago"`, `"just now"`
 * (within a second).
 *
 * @example
 * ```ts
 * formatRelative(Date.now() - 90_000, Date.now()); // "1 min 30 s ago"
 * ```
 */
export function formatRelative(atMs: number, nowMs: number): string {
  const delta = atMs - nowMs;
  if (Math.abs(delta) < 1000) return "just now";
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(delta)} ago`;
}

/** The largest instant a JavaScript `Date` holds, either side of the epoch (ms). */
const DATE_LIMIT_MS = 8_640_000_000_000_000;

/** Whether `atMs` is an instant a `Date` can show (a v1 peer may store one past it: docs/protocol.md, "Delay limit"). */
function isDateInstant(atMs: number): boolean {
  return Math.abs(atMs) <= DATE_LIMIT_MS;
}

/**
 * An instant as ISO 8601 UTC (`2026-12-01T09:30:00.000Z`). One no `Date`
 * holds — a v1 peer may store `run_at_ms` = 9223372036854775807 — is shown
 * as the number read, and which end of the range it is past, never thrown on:
 * `"9223372036854776000 ms since the epoch (beyond the year 275760)"`.
 *
 * @example
 * ```ts
 * formatInstant(task.created_at_ms); // "2026-12-01T09:30:00.000Z"
 * ```
 */
export function formatInstant(atMs: number): string {
  if (isDateInstant(atMs)) return new Date(atMs).toISOString();
  const side = Number.isNaN(atMs) ? "not a number" : atMs > 0 ? "beyond the year 275760" : "before the year -271821";
  return `${String(atMs)} ms since the epoch (${side})`;
}

/**
 * `"2026-12-01T09:30:00.000Z (in 5 min)"`: the instant, then how far from now.
 * An instant no `Date` holds is {@link formatInstant}'s text alone (how far
 * from now adds nothing past the year 275760).
 *
 * @example
 * ```ts
 * formatWhen(task.run_at_ms, Date.now()); // "2026-12-01T09:35:00.000Z (in 5 min)"
 * ```
 */
export function formatWhen(atMs: number, nowMs: number): string {
  if (!isDateInstant(atMs)) return formatInstant(atMs);
  return `${formatInstant(atMs)} (${formatRelative(atMs, nowMs)})`;
}
