/**
 * What the seeded tests of this package share: one PRNG, so a seed gives
 * the same run on every machine, and one reader of the seed lists their
 * environment variables take (`1,2`, a range `1-50`, or both).
 */

/** mulberry32: a small, fast 32-bit PRNG; the same seed gives the same choices on every machine. */
export class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
}

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

/**
 * Runs `run` once per seed on fresh store instances from `open` (a new set per seed, as another process would open
 * them), connected first and closed after, so many seeds never pile up connections: the loop of the store packages'
 * group stress tests.
 */
export async function eachSeedOnStores<S extends { connect(): Promise<void>; close(): Promise<void> }>(
  seeds: readonly number[],
  open: () => readonly S[],
  run: (stores: readonly S[], seed: number) => Promise<void>,
): Promise<void> {
  for (const seed of seeds) {
    const stores = open();
    try {
      for (const store of stores) await store.connect();
      await run(stores, seed);
    } finally {
      for (const store of stores) await store.close();
    }
  }
}
