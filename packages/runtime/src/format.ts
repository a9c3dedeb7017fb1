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
 * A duration for people: `"850 ms"`, `"12 s"`, `"4 min 10 s"`, `"3 h 5 min"`,
 * `"2 d 4 h"` (at most two units, rounded down).
 *
 * @example
 * ```ts
 * formatDuration(250_000); // "4 min 10 s"
 * ```
 */
export function formatDuration(ms: number): string {
  const abs = Math.abs(Math.round(ms));
  if (abs < 1000) return `${abs} ms`;
  const first = UNITS.findIndex(([unit]) => abs >= unit);
  const [unit, label] = UNITS[first] as readonly [number, string];
  const n = Math.floor(abs / unit);
  const next = UNITS[first + 1];
  if (next === undefined) return `${n} ${label}`;
  const m = Math.floor((abs - n * unit) / next[0]);
  return m === 0 ? `${n} ${label}` : `${n} ${label} ${m} ${next[1]}`;
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

/**
 * An instant as ISO 8601 UTC (`2026-12-01T09:30:00.000Z`).
 *
 * @example
 * ```ts
 * formatInstant(task.created_at_ms); // "2026-12-01T09:30:00.000Z"
 * ```
 */
export function formatInstant(atMs: number): string {
  return new Date(atMs).toISOString();
}

/**
 * `"2026-12-01T09:30:00.000Z (in 5 min)"`: the instant, then how far from now.
 *
 * @example
 * ```ts
 * formatWhen(task.run_at_ms, Date.now()); // "2026-12-01T09:35:00.000Z (in 5 min)"
 * ```
 */
export function formatWhen(atMs: number, nowMs: number): string {
  return `${formatInstant(atMs)} (${formatRelative(atMs, nowMs)})`;
}
