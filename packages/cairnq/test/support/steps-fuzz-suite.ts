/**
 * The randomized durable-step programs (`@cairnq/test-support`
 * `step-programs.ts`, on the virtual clock in
 * `packages/testing/test/steps-fuzz.test.ts`) in real time on a server
 * store: a smaller fixed seed list, with a short real lease, sleeps and
 * timeouts of tens of milliseconds, and no message sent within a few units
 * of its wait's timeout (the outcome of such a race is decided by
 * scheduling, not by the program). Workers, client and store share one
 * process; a crash stops the parent's worker without settling.
 */
import { expect, it } from "vitest";
import type { TaskStore } from "cairnq";
import { CairnQ, Worker } from "cairnq";
import type { ProgramHost } from "@cairnq/test-support/step-program-run";
import { runProgram } from "@cairnq/test-support/step-program-run";
import { fuzzSeeds, generateProgram } from "@cairnq/test-support/step-programs";

const UNIT_MS = 50;
const LEASE_MS = 400;
/** Seeds whose programs crash, pause or throw, wait with and without timeouts, and spawn children of each outcome. */
const FIXED_SEEDS = [284, 1000, 1001, 1002, 1003, 1005, 1006];

export interface FuzzBackend {
  readonly label: string;
  /** A store on a fresh, empty database or schema, and how to drop it. */
  fresh(): Promise<{ store: TaskStore; dispose: () => Promise<void> }>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function realTimeHost(store: TaskStore, client: CairnQ, workers: Worker[], timers: Promise<void>[]): ProgramHost {
  return {
    client,
    leaseMs: LEASE_MS,
    startWorker({ concurrency, leaseMs }, handlers) {
      const worker = new Worker(store, { concurrency, leaseMs, stopTimeoutMs: 0, retryBackoffMs: 5, pollIntervalMs: 25, logger: null });
      for (const [name, handler] of Object.entries(handlers)) worker.task(name, handler as unknown as Parameters<typeof worker.task>[1]);
      workers.push(worker);
      void worker.run();
      return worker;
    },
    startTimer: (callback, ms) => void timers.push(sleep(ms).then(callback)),
    sleep,
    advance: sleep,
  };
}

/** One test per seed: a fresh database, the program run to its end, the checks of `runProgram`. */
export function describeStepsFuzz(backend: FuzzBackend): void {
  it.each(fuzzSeeds(FIXED_SEEDS))(`random step programs on ${backend.label}: seed %i`, { timeout: 60_000 }, async (seed) => {
    const program = generateProgram(seed, { maxSleepMs: 2 * UNIT_MS, timeUnitMs: UNIT_MS, racySends: false });
    const { store, dispose } = await backend.fresh();
    const client = new CairnQ(store);
    const workers: Worker[] = [];
    const timers: Promise<void>[] = [];
    try {
      const problems = await runProgram(realTimeHost(store, client, workers, timers), program, { startDelayMs: 4 * UNIT_MS, cancelAfterMs: UNIT_MS, roundMs: 2 * UNIT_MS, rounds: 300 });
      expect(problems.join("\n")).toBe("");
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await Promise.all(timers);
      await client.close();
      await store.close();
      await dispose();
    }
  });
}
