/**
 * Delays are bounded (`MAX_DELAY_MS`, 100 years): a store adds a delay to its
 * own clock — `run_at_ms = now + runAtDelayMs`, a retry's `now + delayMs`, a
 * lease's `now + leaseMs`, a debounce's push-out, a park's wake time — so a
 * longer one would write an instant no JavaScript `Date` holds (and on some
 * backends overflow the column). A delay past the bound is rejected before
 * anything is written; the bound itself is accepted and written exactly.
 */
import type { SubmitInput, TaskStepStore } from "@cairnq/protocol";
import { MAX_DELAY_MS } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { CLOCK_SLACK_MS } from "../invariants.js";
import { needsGroups } from "./groups.js";
import { needsSteps } from "./steps.js";

/** Delays just past the bound, and the largest safe integer (which was once written as a run time). */
const PAST_BOUND: readonly [string, number][] = [
  ["MAX_DELAY_MS + 1", MAX_DELAY_MS + 1],
  ["Number.MAX_SAFE_INTEGER", Number.MAX_SAFE_INTEGER],
];

/** Asserts `atMs` is `delayMs` after `fromMs` (within the clock slack) and a valid `Date`. */
function expectDelayed(t: CaseContext, atMs: number, fromMs: number, delayMs: number, what: string): void {
  t.expect({ what, valid: Number.isSafeInteger(atMs) && !Number.isNaN(new Date(atMs).getTime()) }).toEqual({ what, valid: true });
  t.expect(Math.abs(atMs - (fromMs + delayMs))).toBeLessThanOrEqual(CLOCK_SLACK_MS);
}

/** The core operations' delays (run for every store). */
export const delayCases: readonly ConformanceCase[] = [
  {
    id: "input-delay-past-bound",
    title: "a runAtDelayMs, fail delayMs or leaseMs past MAX_DELAY_MS is rejected, writing nothing",
    spec: "§5.1 (validate first), §5.10–§5.12, §5.16; MAX_DELAY_MS",
    async run(t) {
      const task = await t.submitAndClaim(t.w1);
      await t.submit("idle");
      const before = await t.all();
      for (const [label, delayMs] of PAST_BOUND) {
        const input: SubmitInput = { name: "job", runAtDelayMs: delayMs };
        await t.rejectsAny(t.store.submit(input), `submit with runAtDelayMs ${label}`);
        await t.rejectsAny(t.store.submit({ ...input, key: `k-${label}` }), `keyed submit with runAtDelayMs ${label}`);
        t.expect(await t.store.getByKey(`k-${label}`)).toBeNull();
        await t.rejectsAny(t.store.fail({ taskId: task.id, workerId: t.w1, error: {}, delayMs }), `fail with delayMs ${label}`);
        await t.rejectsAny(t.store.claim({ queues: ["default"], workerId: t.w2, leaseMs: delayMs }), `claim with leaseMs ${label}`);
        await t.rejectsAny(t.store.heartbeat({ taskId: task.id, workerId: t.w1, leaseMs: delayMs }), `heartbeat with leaseMs ${label}`);
        await t.rejectsAny(t.store.heartbeatBatch({ taskIds: [task.id], workerId: t.w1, leaseMs: delayMs }), `heartbeatBatch with leaseMs ${label}`);
      }
      t.expect(await t.all()).toEqual(before);
    },
  },
  {
    id: "input-delay-at-bound",
    title: "a runAtDelayMs and a fail delayMs of exactly MAX_DELAY_MS are accepted: the run time is now + 100 years, exactly, and a valid Date",
    spec: "§5.1, §5.16; MAX_DELAY_MS",
    async run(t) {
      const far = await t.submit("far", { runAtDelayMs: MAX_DELAY_MS });
      expectDelayed(t, far.run_at_ms, far.created_at_ms, MAX_DELAY_MS, "submit's run_at_ms");
      t.fields(await t.get(far.id), { run_at_ms: far.run_at_ms, status: "queued" });
      t.expect(await t.claim(t.w1, { names: ["far"] })).toEqual([]);
      const task = await t.submitAndClaim(t.w1);
      const failed = await t.store.fail({ taskId: task.id, workerId: t.w1, attempt: task.attempt, error: {}, retryable: true, delayMs: MAX_DELAY_MS });
      t.fields(failed, { status: "queued" });
      expectDelayed(t, failed.run_at_ms, failed.updated_at_ms, MAX_DELAY_MS, "fail's run_at_ms");
    },
  },
];

/** The debounce's delays (run for stores declaring `groups`, beside the other debounce cases). */
export const debounceDelayCases: readonly ConformanceCase[] = [
  {
    id: "group-debounce-delay-past-bound",
    title: "a debounce delayMs or maxDelayMs past MAX_DELAY_MS is rejected, writing nothing; MAX_DELAY_MS itself is accepted",
    spec: "store.ts SubmitInput.debounce, debounce.ts; MAX_DELAY_MS",
    skipUnless: needsGroups,
    async run(t) {
      for (const [label, delayMs] of PAST_BOUND) {
        await t.rejectsAny(t.store.submit({ name: "d", key: "dk", debounce: { delayMs } }), `debounce delayMs ${label}`);
        await t.rejectsAny(t.store.submit({ name: "d", key: "dk", debounce: { delayMs: 0, maxDelayMs: delayMs } }), `debounce maxDelayMs ${label}`);
      }
      t.expect(await t.store.getByKey("dk")).toBeNull();
      t.expect(await t.all()).toEqual([]);
      const far = await t.submit("d", { key: "dk", debounce: { delayMs: MAX_DELAY_MS, maxDelayMs: MAX_DELAY_MS } });
      expectDelayed(t, far.run_at_ms, far.created_at_ms, MAX_DELAY_MS, "debounced run_at_ms");
      const pushed = await t.submit("d", { key: "dk", debounce: { delayMs: MAX_DELAY_MS, maxDelayMs: MAX_DELAY_MS } });
      t.expect(pushed.id).toBe(far.id);
      t.expect(pushed.run_at_ms).toBe(far.created_at_ms + MAX_DELAY_MS);
    },
  },
];

/** The durable steps' delays (run for stores declaring `durableSteps`, beside the other step cases). */
export const stepDelayCases: readonly ConformanceCase[] = [
  {
    id: "steps-delay-past-bound",
    title: "a park delayMs or a spawned child's runAtDelayMs past MAX_DELAY_MS is rejected, writing nothing",
    spec: "store.ts TaskStepStore, steps.ts; MAX_DELAY_MS",
    skipUnless: needsSteps,
    async run(t) {
      const s = t.store.inner as TaskStepStore;
      const task = await t.submitAndClaim(t.w1);
      const owned = { taskId: task.id, workerId: t.w1, attempt: task.attempt };
      const before = await t.all();
      for (const [label, delayMs] of PAST_BOUND) {
        await t.rejectsAny(s.parkStep({ ...owned, name: "nap", kind: "sleep", seq: 1, delayMs }), `park a sleep of ${label}`);
        await t.rejectsAny(s.spawnStep({ ...owned, name: "kid", seq: 1, child: { name: "child", runAtDelayMs: delayMs } }), `spawn a child due in ${label}`);
      }
      t.expect(await t.all()).toEqual(before);
      t.expect(await s.steps(task.id)).toEqual([]);
    },
  },
];
