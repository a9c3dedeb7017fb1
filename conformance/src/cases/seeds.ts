/**
 * The seeds a randomized case runs: its defaults, or those an environment
 * variable names (`7,12`, a range `1-500`, or both: `3-5, 9`) for local
 * exploration. One parser for every walk of the kit, so each reads the same
 * way and a typo names its variable.
 */

/**
 * `spec` (the value of `variable`) as seeds, or `defaults` when it is unset or blank.
 *
 * @throws Error naming `variable` for a part that is neither a seed nor a range `a-b`.
 */
export function seedList(spec: string | undefined, variable: string, defaults: readonly number[]): number[] {
  if (spec === undefined || spec.trim() === "") return [...defaults];
  const seeds: number[] = [];
  for (const part of spec.split(",")) {
    const range = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(part);
    if (range !== null) for (let s = Number(range[1]); s <= Number(range[2]); s++) seeds.push(s);
    else if (/^\s*\d+\s*$/.test(part)) seeds.push(Number(part));
    else throw new Error(`${variable}: "${part}" is neither a seed nor a range a-b`);
  }
  return seeds;
}
