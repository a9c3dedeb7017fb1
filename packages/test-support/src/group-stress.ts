/**
 * Concurrent group claims, exact limits: several store instances on one
 * database claim one grouped name at once (`Promise.all`), with random
 * `groupConcurrency` (1–3) and, mostly, a `groupRateLimit` whose window
 * turns over during the run, over many groups, while settlements (completes
 * and retryable fails) and new submits interleave with the claims. Shared by
 * the integration tests of store-sqlite (two stores on one file),
 * store-postgres and store-mysql.
 *
 * Terminology:
 * - **round**: one `Promise.all` of claims from every store, settlements of
 *   tasks running at the round's start and submits, in a shuffled order.
 * - **claim time**: the store's own clock when its draw took a task,
 *   `lease_until_ms − leaseMs` of the row the claim returned.
 *
 * Checked after every round, from what the run did and what the stores
 * answered:
 * - no task is taken while it runs: a task a claim returns was queued, or was
 *   running at the round's start and failed back to the queue in this round;
 *   its attempt is one more than the last;
 * - running per group ≤ `groupConcurrency`: the tasks certainly running at
 *   once at the end of the round's claims — taken in the round, or running
 *   since before it and settled by nobody in it (a settlement in flight may
 *   free its slot for its store's claims, so those are left out);
 * - claims per group in any window `(t − perMs, t]` ≤ `max`, judged on the
 *   stores' claim times;
 * and at the end (everything drained): every task succeeded, completed
 * exactly once, with as many attempts as its claims.
 *
 * Seeds: the caller's defaults, or `CAIRNQ_TEST_GROUP_STRESS_SEEDS`
 * (`1,2,3` or `1-50`); a failure names its seed and the round.
 */
import type { FlowControl, Task, TaskStore } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { checkRateWindows } from "./rate-windows.js";
import { Rng, seedList } from "./seeded.js";

/** Lease of every claim: longer than any run, so only settlements end a task's run. */
const LEASE_MS = 600_000;
/** Rounds of mixed work before the drain. */
const ROUNDS = 24;
/** Drain rounds at most (a spent rate window can hold work back for up to `perMs`). */
const DRAIN_ROUNDS = 400;


/** The seeds to run: `CAIRNQ_TEST_GROUP_STRESS_SEEDS` (`1,2` or `1-50`) when set, else `defaults`. */
export function groupStressSeeds(defaults: readonly number[], spec: string | undefined = process.env.CAIRNQ_TEST_GROUP_STRESS_SEEDS): number[] {
  return seedList(spec, "CAIRNQ_TEST_GROUP_STRESS_SEEDS", defaults);
}

interface StressTask {
  readonly id: string;
  readonly group: string;
  status: "queued" | "running" | "succeeded";
  attempt: number;
  worker: string;
  /** Store index that took it last. */
  claims: number;
  completes: number;
}

/** What one run did, for the caller's log. */
export interface GroupStressReport {
  readonly seed: number;
  readonly groups: number;
  readonly tasks: number;
  readonly claims: number;
  readonly rounds: number;
  readonly limits: FlowControl;
  /** The most tasks of one group certainly running at once, and the most claims of one group in one window. */
  readonly peakRunning: number;
  readonly peakWindow: number;
}

/**
 * One seeded run over `stores` (connected, on one database, with the group tables; each used by the run
 * alone). The name is `stress<seed>`, so runs of several seeds may share the stores.
 */
export async function runGroupStress(stores: readonly TaskStore[], seed: number): Promise<GroupStressReport> {
  const rng = new Rng(seed * 104_729 + 7);
  const name = `stress${seed}`;
  const concurrency = rng.int(1, 3);
  const rate = rng.chance(0.7) ? { max: rng.int(2, 5), perMs: rng.int(200, 800) } : null;
  const limits: FlowControl = { groupConcurrency: concurrency, ...(rate === null ? {} : { groupRateLimit: rate }) };
  const groups = Array.from({ length: rng.int(20, 70) }, (_, i) => `t${String(i).padStart(3, "0")}`);
  const workers = stores.map(() => [newWorkerId(), newWorkerId()]);
  const tasks = new Map<string, StressTask>();
  /** Claim times per group (the stores' clocks). */
  const claimTimes = new Map<string, number[]>();
  const log: string[] = [`stress seed ${seed}: ${stores.length} stores, ${groups.length} groups, limits ${JSON.stringify(limits)}`];
  let claims = 0;
  let peakRunning = 0;
  let peakWindow = 0;
  let round = 0;

  const fail = (message: string): never => {
    throw new Error(`group stress seed ${seed} round ${round} (replay: CAIRNQ_TEST_GROUP_STRESS_SEEDS=${seed}): ${message}\n--- log (last 40)\n${log.slice(-40).join("\n")}`);
  };

  // A third of the submits go to a few hot groups, so their limits are contended; the rest spread over every group.
  const hot = groups.slice(0, rng.int(2, 6));
  const submit = async (store: TaskStore): Promise<void> => {
    const group = rng.chance(0.35) ? rng.pick(hot) : rng.pick(groups);
    const row = await store.submit({ name, group, priority: rng.pick([0, 0, 1]), maxAttempts: 1000, payload: { group } });
    tasks.set(row.id, { id: row.id, group, status: "queued", attempt: 0, worker: "", claims: 0, completes: 0 });
  };
  for (let i = groups.length * rng.int(1, 3); i > 0; i--) await submit(rng.pick(stores));

  /** One round: `drain` makes no submits and no fails. Returns how many tasks its claims took. */
  const playRound = async (drain: boolean): Promise<number> => {
    round += 1;
    const runningAtStart = [...tasks.values()].filter((t) => t.status === "running");
    const settled = new Set<string>();
    const failedBack = new Map<string, number>();
    const ops: (() => Promise<void>)[] = [];
    const taken: { task: Task; store: number }[] = [];
    for (const [i, store] of stores.entries()) {
      for (let n = rng.int(1, 3); n > 0; n--) {
        const workerId = rng.pick(workers[i] as string[]);
        const limit = rng.pick([1, 1, 2, 3, 5, 8]);
        ops.push(async () => {
          const rows = await store.claim({ queues: ["default"], workerId, names: [name], limit, leaseMs: LEASE_MS, flowControl: { [name]: limits } });
          for (const task of rows) taken.push({ task, store: i });
        });
      }
    }
    const toSettle = [...runningAtStart].sort(() => rng.next() - 0.5).slice(0, drain ? runningAtStart.length : rng.int(0, Math.min(8, runningAtStart.length)));
    for (const t of toSettle) {
      settled.add(t.id);
      const store = rng.pick(stores);
      const attempt = t.attempt;
      const workerId = t.worker;
      if (!drain && rng.chance(0.3)) {
        ops.push(async () => {
          const row = await store.fail({ taskId: t.id, workerId, attempt, error: { code: "stress" }, retryable: true, delayMs: 0 });
          if (row.status !== "queued") fail(`a retryable fail of ${t.id} (attempt ${attempt}) left it ${row.status}`);
          failedBack.set(t.id, attempt);
        });
      } else {
        ops.push(async () => {
          const row = await store.complete({ taskId: t.id, workerId, attempt, result: null });
          if (row.status !== "succeeded") fail(`complete of ${t.id} (attempt ${attempt}) left it ${row.status}`);
          t.completes += 1;
        });
      }
    }
    if (!drain) for (let n = rng.int(0, 4); n > 0; n--) ops.push(() => submit(rng.pick(stores)));
    // Shuffled, then all at once.
    for (let i = ops.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [ops[i], ops[j]] = [ops[j] as () => Promise<void>, ops[i] as () => Promise<void>];
    }
    await Promise.all(ops.map((op) => op()));

    // The settlements first: a completed task ends; a failed one is queued (unless a claim of this round took it again).
    for (const t of toSettle) {
      if (failedBack.has(t.id)) t.status = "queued";
      else if (t.completes > 0) t.status = "succeeded";
    }
    const seen = new Set<string>();
    for (const { task: row, store } of taken) {
      const t = tasks.get(row.id);
      if (t === undefined) return fail(`a claim returned ${row.id}, which the run never submitted`);
      if (seen.has(t.id)) fail(`two claims of round ${round} both took ${t.id}`);
      seen.add(t.id);
      if (t.status !== "queued") fail(`store ${store} took ${t.id} (group ${t.group}), which was ${t.status} (attempt ${t.attempt} by ${t.worker})`);
      if (row.attempt !== t.attempt + 1) fail(`store ${store} took ${t.id} as attempt ${row.attempt}, expected ${t.attempt + 1}`);
      if (row.lease_until_ms === null) return fail(`store ${store} took ${t.id} without a lease`);
      t.status = "running";
      t.attempt = row.attempt;
      t.worker = row.worker_id ?? "";
      t.claims += 1;
      claims += 1;
      const times = claimTimes.get(t.group) ?? [];
      times.push(row.lease_until_ms - LEASE_MS);
      claimTimes.set(t.group, times);
    }
    log.push(`round ${round}${drain ? " (drain)" : ""}: ${taken.length} taken, ${toSettle.length} settled (${failedBack.size} failed back), ${[...tasks.values()].filter((t) => t.status === "queued").length} queued`);

    // Running per group: taken in this round, or running since before it and settled by nobody in it.
    const certain = new Map<string, string[]>();
    for (const t of tasks.values()) {
      if (t.status !== "running") continue;
      if (!seen.has(t.id) && settled.has(t.id)) continue;
      certain.set(t.group, [...(certain.get(t.group) ?? []), t.id]);
    }
    for (const [group, ids] of certain) {
      peakRunning = Math.max(peakRunning, ids.length);
      if (ids.length > concurrency) fail(`group ${group} has ${ids.length} tasks running at once (${ids.join(" ")}), above its groupConcurrency ${concurrency}`);
    }
    // Claims per group per window, on the stores' claim times.
    if (rate !== null) {
      const peak = checkRateWindows(claimTimes, rate, (group, count, times) =>
        fail(`group ${group} has ${count} claims within ${rate.perMs} ms (at ${times.join(", ")}), above its groupRateLimit max ${rate.max}`),
      );
      peakWindow = Math.max(peakWindow, peak);
    }
    return taken.length;
  };

  for (let r = 0; r < ROUNDS; r++) await playRound(false);
  for (let r = 0; r < DRAIN_ROUNDS; r++) {
    const left = [...tasks.values()].some((t) => t.status !== "succeeded");
    if (!left) break;
    const took = await playRound(true);
    // Only a spent rate window holds work back now: wait a little for it.
    if (took === 0 && ![...tasks.values()].some((t) => t.status === "running")) await new Promise((resolve) => setTimeout(resolve, rate === null ? 5 : Math.max(10, rate.perMs / 8)));
  }
  for (const t of tasks.values()) {
    if (t.status !== "succeeded") fail(`after the drain ${t.id} (group ${t.group}) is ${t.status}`);
    if (t.completes !== 1) fail(`${t.id} completed ${t.completes} times`);
    const row = await (stores[0] as TaskStore).get(t.id);
    if (row?.status !== "succeeded" || row.attempt !== t.claims) fail(`${t.id} reads ${row?.status ?? "missing"} with attempt ${row?.attempt ?? "?"}, after ${t.claims} claims and one complete`);
  }
  const report = { seed, groups: groups.length, tasks: tasks.size, claims, rounds: round, limits, peakRunning, peakWindow };
  if (process.env.CAIRNQ_TEST_GROUP_STRESS_REPORT === "1") console.log(`group stress ${JSON.stringify(report)}`);
  return report;
}
