import { describe, expect, it } from "vitest";
import type { ClaimDraw, Task } from "@cairnq/protocol";
import type { DrawSource, NameRule, PlanSnapshot } from "../src/planner.js";
import { buildSources, planDraws, rotate, splitCalls } from "../src/planner.js";

const rule = (name: string, extra: Partial<NameRule> = {}): NameRule => ({ name, batch: null, concurrency: null, resource: null, ...extra });
const row = (name: string, n: number): Task => ({ id: `${name}-${n}`, name }) as Task;
const rows = (name: string, n: number): Task[] => Array.from({ length: n }, (_, i) => row(name, i));

function snapshot(extra: Partial<PlanSnapshot> = {}): PlanSnapshot {
  return {
    free: 10,
    claimBatch: null,
    nameCalls: new Map(),
    resourceCalls: new Map(),
    capacities: {},
    batchOf: () => 1,
    ...extra,
  };
}

/** Drives a planner like a store would, handing each draw `returned(draw)` rows. */
function drive(planner: ReturnType<typeof planDraws>, returned: (draw: ClaimDraw) => Task[]): ClaimDraw[] {
  const claimed: Task[] = [];
  const draws: ClaimDraw[] = [];
  for (let i = 0; ; i++) {
    const draw = planner(claimed, i);
    if (draw === null) return draws;
    draws.push(draw);
    claimed.push(...returned(draw));
  }
}

describe("buildSources", () => {
  it("gives names with batch/concurrency/resource their own source; the rest share one", () => {
    const sources = buildSources([
      rule("a"),
      rule("b", { batch: 5 }),
      rule("c"),
      rule("d", { concurrency: 2 }),
      rule("e", { resource: "gpu" }),
    ]);
    expect(sources).toEqual([
      { names: ["a", "c"], batch: 1, concurrency: null, resource: null },
      { names: ["b"], batch: 5, concurrency: null, resource: null },
      { names: ["d"], batch: 1, concurrency: 2, resource: null },
      { names: ["e"], batch: 1, concurrency: null, resource: "gpu" },
    ]);
  });

  it("rotate shifts the first source by one per poll", () => {
    expect(rotate([1, 2, 3], 0)).toEqual([1, 2, 3]);
    expect(rotate([1, 2, 3], 1)).toEqual([2, 3, 1]);
    expect(rotate([1, 2, 3], 5)).toEqual([3, 1, 2]);
    expect(rotate([], 3)).toEqual([]);
  });
});

describe("splitCalls", () => {
  it("keeps the rows' order: a call sits where its first row was, a row joins its name's open call up to the batch", () => {
    const mixed = [row("b", 0), row("a", 0), row("b", 1), row("b", 2), row("a", 1)];
    const calls = splitCalls(mixed, (name) => (name === "b" ? 2 : 1));
    expect(calls.map((c) => c.map((r) => r.id))).toEqual([["b-0", "b-1"], ["a-0"], ["b-2"], ["a-1"]]);
  });
});

describe("planDraws (§8.3)", () => {
  it("without ceilings a source takes everything left", () => {
    const sources: DrawSource[] = [{ names: ["a", "b"], batch: 1, concurrency: null, resource: null }];
    expect(drive(planDraws(sources, snapshot({ free: 4 })), (d) => rows("a", d.limit))).toEqual([{ names: ["a", "b"], limit: 4, last: true }]);
  });

  it("claimBatch caps calls per draw: max(1, floor(claimBatch / batch))", () => {
    const sources: DrawSource[] = [
      { names: ["b"], batch: 4, concurrency: null, resource: null },
      { names: ["x"], batch: 1, concurrency: null, resource: null },
    ];
    const s = snapshot({ free: 10, claimBatch: 3, batchOf: (n) => (n === "b" ? 4 : 1) });
    // b: max(1, floor(3/4)) = 1 call of 4 rows; x: 3 calls.
    expect(drive(planDraws(sources, s), () => [])).toEqual([
      { names: ["b"], limit: 4 },
      { names: ["x"], limit: 3, last: true },
    ]);
  });

  it("later sources get what earlier draws left, counted in calls", () => {
    const sources: DrawSource[] = [
      { names: ["b"], batch: 3, concurrency: null, resource: null },
      { names: ["x"], batch: 1, concurrency: null, resource: null },
    ];
    const s = snapshot({ free: 3, batchOf: (n) => (n === "b" ? 3 : 1) });
    // b draws 9 rows but only 4 come back: 2 calls (3 + 1), so x may start 1.
    const draws = drive(planDraws(sources, s), (d) => (d.names?.[0] === "b" ? rows("b", 4) : rows("x", d.limit)));
    expect(draws).toEqual([
      { names: ["b"], limit: 9 },
      { names: ["x"], limit: 1, last: true },
    ]);
  });

  it("stops once nothing is left", () => {
    const sources: DrawSource[] = [
      { names: ["a"], batch: 1, concurrency: null, resource: null },
      { names: ["b"], batch: 1, concurrency: null, resource: null },
    ];
    expect(drive(planDraws(sources, snapshot({ free: 2 })), (d) => rows("a", d.limit))).toEqual([{ names: ["a"], limit: 2 }]);
  });

  it("a name's concurrency counts its calls in flight; a full name is skipped", () => {
    const sources: DrawSource[] = [
      { names: ["a"], batch: 1, concurrency: 3, resource: null },
      { names: ["b"], batch: 1, concurrency: 1, resource: null },
      { names: ["c"], batch: 1, concurrency: null, resource: null },
    ];
    const s = snapshot({ free: 10, nameCalls: new Map([["a", 1], ["b", 1]]) });
    expect(drive(planDraws(sources, s), () => [])).toEqual([
      { names: ["a"], limit: 2 },
      { names: ["c"], limit: 10, last: true },
    ]);
  });

  it("a resource's capacity counts calls in flight and units taken earlier this poll", () => {
    const sources: DrawSource[] = [
      { names: ["x"], batch: 1, concurrency: null, resource: "gpu" },
      { names: ["y"], batch: 2, concurrency: null, resource: "gpu" },
      { names: ["z"], batch: 1, concurrency: null, resource: "gpu" },
    ];
    const s = snapshot({ free: 10, capacities: { gpu: 4 }, resourceCalls: new Map([["gpu", 1]]), batchOf: (n) => (n === "y" ? 2 : 1) });
    const draws = drive(planDraws(sources, s), (d) => rows(d.names![0]!, d.names![0] === "x" ? 2 : 1));
    // x: 4 − 1 = 3 calls, got 2; y: 4 − 1 − 2 = 1 call (2 rows), got 1 row = 1 call; z: 0 → skipped.
    expect(draws).toEqual([
      { names: ["x"], limit: 3 },
      { names: ["y"], limit: 2 },
    ]);
  });

  it("marks a draw of the last source `last`: whatever it claims, the planner returns null next", () => {
    const sources: DrawSource[] = [
      { names: ["a"], batch: 1, concurrency: null, resource: null },
      { names: ["b"], batch: 1, concurrency: null, resource: null },
    ];
    for (const got of [0, 1, 2]) {
      const planner = planDraws(sources, snapshot({ free: 10 }));
      expect(planner([], 0)?.last).toBeUndefined();
      expect(planner(rows("a", got), 1)?.last).toBe(true);
      expect(planner([...rows("a", got), ...rows("b", got)], 2)).toBeNull();
    }
  });

  it("starts over from the snapshot when the store replays its transaction", () => {
    const sources: DrawSource[] = [
      { names: ["a"], batch: 1, concurrency: null, resource: null },
      { names: ["b"], batch: 1, concurrency: null, resource: null },
    ];
    const planner = planDraws(sources, snapshot({ free: 3 }));
    const first = drive(planner, (d) => rows("a", d.names![0] === "a" ? 1 : 0));
    const replay = drive(planner, (d) => rows("a", d.names![0] === "a" ? 1 : 0));
    expect(replay).toEqual(first);
    expect(first).toEqual([
      { names: ["a"], limit: 3 },
      { names: ["b"], limit: 2, last: true },
    ]);
  });

  it("a source that may not prefetch draws only from the slots left, after the sources before it", () => {
    const sources: DrawSource[] = [
      { names: ["a"], batch: 1, concurrency: null, resource: null },
      { names: ["lim"], batch: 1, concurrency: null, resource: null, prefetch: false },
      { names: ["b"], batch: 1, concurrency: null, resource: null },
    ];
    // 3 slots + 5 prefetch: "a" fills 2 slots, "lim" gets the 1 slot left, "b" the prefetch room.
    expect(drive(planDraws(sources, snapshot({ free: 8, slots: 3 })), (d) => rows(d.names?.[0] as string, Math.min(d.limit, 2)))).toEqual([
      { names: ["a"], limit: 8 },
      { names: ["lim"], limit: 1 },
      { names: ["b"], limit: 5, last: true },
    ]);
    // No slot free (the buffer covers them): "lim" is skipped.
    expect(drive(planDraws(sources.slice(1), snapshot({ free: 4, slots: 0 })), (d) => rows(d.names?.[0] as string, d.limit))).toEqual([
      { names: ["b"], limit: 4, last: true },
    ]);
  });

  it("buildSources marks a name with globalConcurrency or rateLimit as not prefetchable", () => {
    const sources = buildSources([rule("a"), rule("lim", { flowControl: { globalConcurrency: 2, rateLimit: null } })]);
    expect(sources).toEqual([
      { names: ["a"], batch: 1, concurrency: null, resource: null },
      { names: ["lim"], batch: 1, concurrency: null, resource: null, prefetch: false },
    ]);
  });
});
