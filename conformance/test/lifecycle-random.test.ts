/**
 * The randomized lifecycle case's own machinery: the seeds it runs, and the
 * model's clock-window comparisons it judges every row by.
 */
import type { Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { instantsBetween, rowDiff } from "../src/cases/lifecycle-model.ts";
import { LIFECYCLE_WALK_SEEDS, lifecycleWalkSeeds } from "../src/cases/lifecycle-random.ts";

describe("lifecycleWalkSeeds", () => {
  it("runs the fixed seeds unless CAIRNQ_KIT_LIFECYCLE_SEEDS names others, as a list or ranges", () => {
    expect(lifecycleWalkSeeds(undefined)).toEqual([...LIFECYCLE_WALK_SEEDS]);
    expect(lifecycleWalkSeeds(" ")).toEqual([...LIFECYCLE_WALK_SEEDS]);
    expect(lifecycleWalkSeeds("7,12")).toEqual([7, 12]);
    expect(lifecycleWalkSeeds("3-5, 9")).toEqual([3, 4, 5, 9]);
    expect(() => lifecycleWalkSeeds("1,x")).toThrow(/"x" is neither a seed nor a range/);
  });
});

const row = (fields: Partial<Task>): Task => ({ id: "task_A", status: "queued", attempt: 0, run_at_ms: 1000, payload: { a: 1 }, ...fields }) as Task;

describe("rowDiff", () => {
  it("takes clock columns within the window, everything else exactly", () => {
    const lo = row({ run_at_ms: 1000 });
    const hi = row({ run_at_ms: 1020 });
    expect(rowDiff(lo, hi, row({ run_at_ms: 1010 }))).toBeNull();
    expect(rowDiff(lo, hi, row({ run_at_ms: 1021 }))).toMatch(/run_at_ms 1021, expected within \[1000, 1020\]/);
    expect(rowDiff(lo, hi, row({ run_at_ms: 1010, attempt: 1 }))).toMatch(/attempt 1, expected 0/);
    expect(rowDiff(lo, hi, row({ run_at_ms: 1010, payload: { a: 2 } }))).toMatch(/payload/);
    expect(rowDiff(lo, lo, row({ run_at_ms: 1000, status: "running" }))).toMatch(/status "running", expected "queued"/);
  });
});

describe("instantsBetween", () => {
  it("gives the window's ends and each instant inside it where a row's clock column is passed", () => {
    const rows = [row({ run_at_ms: 1005 }), row({ run_at_ms: 900 }), row({ run_at_ms: 2000 })];
    expect(instantsBetween({ lo: 1000, hi: 1010 }, rows, "run_at_ms")).toEqual([1000, 1005, 1006, 1010]);
    expect(instantsBetween({ lo: 1000, hi: 1010 }, rows, "run_at_ms", 3)).toEqual([1000, 1008, 1009, 1010]);
  });
});
