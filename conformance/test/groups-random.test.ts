/**
 * The randomized group case's own machinery: the seeds it runs and its PRNG,
 * which must replay a walk from its seed.
 */
import { describe, expect, it } from "vitest";
import { Rng } from "../src/cases/group-model.ts";
import { GROUP_WALK_SEEDS, groupWalkSeeds } from "../src/cases/groups-random.ts";

describe("groupWalkSeeds", () => {
  it("runs the fixed seeds unless CAIRNQ_KIT_GROUP_SEEDS names others, as a list or ranges", () => {
    expect(groupWalkSeeds(undefined)).toEqual([...GROUP_WALK_SEEDS]);
    expect(groupWalkSeeds(" ")).toEqual([...GROUP_WALK_SEEDS]);
    expect(groupWalkSeeds("7,12")).toEqual([7, 12]);
    expect(groupWalkSeeds("3-5, 9")).toEqual([3, 4, 5, 9]);
    expect(() => groupWalkSeeds("1,x")).toThrow(/"x" is neither a seed nor a range/);
  });
});

describe("Rng", () => {
  it("gives the same sequence for the same seed and another for another seed, within its ranges", () => {
    const draw = (seed: number): number[] => {
      const rng = new Rng(seed);
      return Array.from({ length: 50 }, () => rng.int(0, 9));
    };
    expect(draw(41)).toEqual(draw(41));
    expect(draw(41)).not.toEqual(draw(42));
    for (const n of draw(7)) expect(n >= 0 && n <= 9).toBe(true);
    const rng = new Rng(1);
    const seen = new Set(Array.from({ length: 200 }, () => rng.pick(["a", "b", "c"])));
    expect([...seen].sort()).toEqual(["a", "b", "c"]);
  });
});
