/**
 * The `groupRateLimit` check of the group stress runs (`group-stress.ts`,
 * `group-stress-leases.ts`), on the claim times they saw: claims of one group
 * in any window `(t − perMs, t]` must be at most `max`.
 */

/**
 * Sorts each group's claim times and slides the window over them; `onExcess` is told of the first run of
 * claims above `max` in a group (the callers' `fail` throws). Returns the most claims of one group found in
 * one window.
 */
export function checkRateWindows(
  claimTimes: ReadonlyMap<string, number[]>,
  rate: { readonly max: number; readonly perMs: number },
  onExcess: (group: string, count: number, times: readonly number[]) => void,
): number {
  let peak = 0;
  for (const [group, times] of claimTimes) {
    times.sort((a, b) => a - b);
    for (let i = 0, lo = 0; i < times.length; i++) {
      while ((times[lo] as number) <= (times[i] as number) - rate.perMs) lo += 1;
      peak = Math.max(peak, i - lo + 1);
      if (i - lo + 1 > rate.max) onExcess(group, i - lo + 1, times.slice(lo, i + 1));
    }
  }
  return peak;
}
