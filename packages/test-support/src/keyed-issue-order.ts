/**
 * Keyed submits issued together from one store instance (called in order, not
 * awaited): the key must end on the one issued last (debounce,
 * `conflict: "replace"`) or first (`conflict: "reuse"`), as when each is
 * awaited. Without the store keeping call order, each submit's transaction
 * reached the key lock in pool order and Postgres ended on an arbitrary
 * payload of a 20-submit burst in most bursts. Shared by the integration
 * tests of store-sqlite, store-postgres and store-mysql.
 *
 * Terminology:
 * - **burst**: `SUBMITS` submits of one key and mode, payload `{ n }` with n
 *   = 1…`SUBMITS` in call order, a few of them a macrotask apart (so later
 *   ones find earlier ones already in flight), then awaited together.
 */
import type { SubmitInput, Task, TaskStore } from "@cairnq/protocol";

/** Submits per burst: the sweep saw a wrong payload in 4 of 5 such bursts on Postgres. */
const SUBMITS = 20;

/** What a burst's key ended on, per mode: the `n` of its task's payload, burst by burst. */
export interface KeyedIssueOrderReport {
  readonly debounce: number[];
  readonly replace: number[];
  readonly reuse: number[];
  /** Every burst's expected `n`: `SUBMITS` (last issued) for debounce and replace, 1 (first) for reuse. */
  readonly last: number;
}

const MODES: Record<"debounce" | "replace" | "reuse", Partial<SubmitInput>> = {
  debounce: { debounce: { delayMs: 60_000 } },
  replace: { conflict: "replace" },
  reuse: { conflict: "reuse" },
};

/**
 * Runs `bursts` bursts per mode on `store` (which must not have run them
 * before: keys are `issue-order:<mode>:<burst>`) and reports what each key
 * ended on.
 *
 * @example
 * const report = await runKeyedIssueOrder(store, 5);
 * expect(report.debounce).toEqual([20, 20, 20, 20, 20]);
 */
export async function runKeyedIssueOrder(store: TaskStore, bursts: number): Promise<KeyedIssueOrderReport> {
  const report = { debounce: [] as number[], replace: [] as number[], reuse: [] as number[], last: SUBMITS };
  for (let burst = 0; burst < bursts; burst++) {
    for (const mode of ["debounce", "replace", "reuse"] as const) {
      const key = `issue-order:${mode}:${burst}`;
      const inFlight: Promise<Task>[] = [];
      for (let n = 1; n <= SUBMITS; n++) {
        inFlight.push(store.submit({ name: "issue-order", payload: { n }, key, ...MODES[mode] }));
        if (n % 4 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await Promise.all(inFlight);
      const task = await store.getByKey(key);
      report[mode].push((task?.payload as { n?: number } | undefined)?.n ?? -1);
    }
  }
  return report;
}

