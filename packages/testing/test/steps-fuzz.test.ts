/**
 * Durable steps under random programs (`support/step-programs.ts`): steps
 * that return JSON of varied shapes or throw once, sleeps, waits with
 * messages sent before or after them and timeouts, children that succeed,
 * fail or are canceled, joins — with crashes of the parent's worker and
 * injected failures at random points. Each program's result must equal
 * what a run without interruptions returns, and the journal, the children
 * and the step bodies' counters must agree (`support/step-program-run.ts`).
 *
 * The seeds are fixed; `CAIRNQ_FUZZ_SEEDS=<n>` runs n more, drawn from
 * `CAIRNQ_FUZZ_FROM` (default: the time), printed so a failure reproduces
 * with `CAIRNQ_FUZZ_SEEDS=1 CAIRNQ_FUZZ_FROM=<seed>`.
 */
import { describe, expect, it } from "vitest";
import { createTestQueue } from "@cairnq/testing";
import { generateProgram } from "./support/step-programs.ts";
import { runProgram } from "./support/step-program-run.ts";

const START = Date.UTC(2030, 0, 1);
const UNIT_MS = 10;
const FIXED_SEEDS = Array.from({ length: 12 }, (_, i) => 1000 + i);

function extraSeeds(): number[] {
  const n = Number(process.env.CAIRNQ_FUZZ_SEEDS ?? 0);
  if (!Number.isInteger(n) || n <= 0) return [];
  const from = Number(process.env.CAIRNQ_FUZZ_FROM ?? Date.now() % 1_000_000_000);
  console.log(`steps-fuzz: ${n} extra seeds from ${from}`);
  return Array.from({ length: n }, (_, i) => from + i);
}

describe.each(["memory", "sqlite"] as const)("random step programs on the %s store", (store) => {
  it.each([...FIXED_SEEDS, ...extraSeeds()])("seed %i", async (seed) => {
    const program = generateProgram(seed, { maxSleepMs: 5 * UNIT_MS, timeUnitMs: UNIT_MS, racySends: true });
    const queue = await createTestQueue({ store, now: START });
    try {
      const problems = await runProgram(queue, program, UNIT_MS);
      expect(problems.join("\n")).toBe("");
    } finally {
      await queue.close();
    }
  });
});
