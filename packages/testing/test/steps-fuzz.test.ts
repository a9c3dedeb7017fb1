/**
 * Durable steps under random programs (`@cairnq/test-support`
 * `step-programs.ts`) on the virtual clock, on the in-memory store and on
 * SQLite: steps that return JSON of varied shapes or throw once, steps in
 * parallel, sleeps, waits with messages sent before or after them and
 * timeouts, children that succeed, fail or are canceled, joins — with
 * crashes and pauses of the parent's worker and injected failures at random
 * points. Each program's result must equal what a run without interruptions
 * returns, and the journal, the children and the step bodies' counters must
 * agree (`step-program-run.ts`). The same programs run on Postgres and
 * MariaDB in real time in `packages/cairnq/test/integration/steps-fuzz-*`.
 *
 * The seeds are fixed; `CAIRNQ_FUZZ_SEEDS=<n>` runs n more, from
 * `CAIRNQ_FUZZ_FROM` (default: drawn from the time, and printed), so a
 * failing seed reproduces with `CAIRNQ_FUZZ_SEEDS=1 CAIRNQ_FUZZ_FROM=<seed>`.
 * A failure prints the program.
 */
import { describe, expect, it } from "vitest";
import type { ProgramHost } from "@cairnq/test-support/step-program-run";
import { runProgram } from "@cairnq/test-support/step-program-run";
import { fuzzSeeds, generateProgram } from "@cairnq/test-support/step-programs";
import type { TestQueue } from "@cairnq/testing";
import { createTestQueue } from "@cairnq/testing";

const START = Date.UTC(2030, 0, 1);
const UNIT_MS = 10;
const LEASE_MS = 1000;
/** 284: a message in time woke the wait, the resumed run crashed, and the resume after the lease ran out timed the wait out. */
const FIXED_SEEDS = [284, ...Array.from({ length: 15 }, (_, i) => 1000 + i)];

function hostOf(queue: TestQueue): ProgramHost {
  return {
    client: queue.client,
    leaseMs: LEASE_MS,
    startWorker({ concurrency, leaseMs }, handlers) {
      const worker = queue.worker({ concurrency, leaseMs, stopTimeoutMs: 0, retryBackoffMs: 5, logger: null });
      for (const [name, handler] of Object.entries(handlers)) worker.task(name, handler as unknown as Parameters<typeof worker.task>[1]);
      return worker;
    },
    startTimer: (callback, ms) => void queue.clock.startTimer(callback, ms),
    sleep: (ms) => queue.clock.sleep(ms),
    advance: (ms) => queue.advance(ms),
  };
}

describe.each(["memory", "sqlite"] as const)("random step programs on the %s store", (store) => {
  it.each(fuzzSeeds(FIXED_SEEDS))("seed %i", async (seed) => {
    const program = generateProgram(seed, { maxSleepMs: 5 * UNIT_MS, timeUnitMs: UNIT_MS, racySends: true });
    const queue = await createTestQueue({ store, now: START });
    try {
      const problems = await runProgram(hostOf(queue), program, { startDelayMs: 1, cancelAfterMs: UNIT_MS, roundMs: LEASE_MS, rounds: 200 });
      expect(problems.join("\n")).toBe("");
    } finally {
      await queue.close();
    }
  });
});
