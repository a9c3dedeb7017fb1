/**
 * Concurrent group claims with leases that run out, and claims without group
 * limits among them: several store instances on one database claim one
 * grouped name at once (`Promise.all`). Some claims take a short lease
 * (200–400 ms) and their holder abandons the tasks: it never settles them,
 * so the lease runs out and a later claim recovers them (T12: requeued with
 * the attempt counted, or failed at the last attempt with the lease-expired
 * envelope). Some claims declare no group limits (a worker that does not
 * declare `groupConcurrency`): they take grouped tasks in plain order,
 * ignoring the limits, and their running tasks count against the limits of
 * the claims that do (docs/protocol.md, "Groups"). Shared by the integration
 * tests of store-sqlite (two stores on one file), store-postgres and
 * store-mysql.
 *
 * Terminology:
 * - **round**: claims from every store (limited and, sometimes, unlimited),
 *   settlements of held tasks and submits, in a shuffled `Promise.all`; in a
 *   *split* round the unlimited claims go first, alone, and the rest after.
 * - **held** task: running under a long lease, settled by its holder in a
 *   later round. **Abandoned** task: running under a short lease, never
 *   settled by its holder (its late settlements must throw `LostLease`).
 *
 * Checked after every round, from what the run did and what the stores
 * answered (every abandoned task is read back after each round):
 * - a task a claim returns was queued, or running under a lease that ran out
 *   by the round's end (taken in an earlier round, or in this one under a
 *   short lease), or failed back to the queue in this round; its attempt is
 *   one more than the last; no two claims take it under one lease;
 * - an abandoned task whose lease ran out before the round began is no longer
 *   running after it (every claim cycle recovers across the table), and was
 *   recovered as T12 says: queued with its attempt kept and no worker, or
 *   failed at its last attempt with the `lease_expired` envelope;
 * - a late settlement by the holder of a lease that ran out throws
 *   `LostLease`, whether or not a claim recovered (or took again) the task;
 * - running per group ≤ `groupConcurrency` whenever a limited claim took a
 *   task of the group in the round: counting every task certainly running at
 *   that claim's instant and still running after the round — held ones,
 *   abandoned ones not yet recovered, the unlimited claims' ones (all of them
 *   in a split round; in a mixed round only those from earlier rounds) — and
 *   never a task recovered since (the recovery freed its slot);
 * - claims per group in any window `(t − perMs, t]` ≤ `max`, judged on the
 *   limited claims' claim times (`lease_until_ms − leaseMs`);
 * - the drain makes progress: with nothing running and no rate window spent,
 *   a round of claims takes something while tasks are queued (a recovered
 *   task is claimable again within its group's limits);
 * and at the end: every task succeeded exactly once, or failed by a lease
 * recovery at its last attempt, with as many attempts as its claims.
 *
 * Seeds: the caller's defaults, or `CAIRNQ_TEST_GROUP_LEASE_SEEDS`
 * (`1,2,3` or `1-50`); a failure names its seed and the round.
 */
import type { FlowControl, Task, TaskStore } from "@cairnq/protocol";
import { LostLease } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { checkRateWindows } from "./rate-windows.js";
import { Rng, seedList } from "./seeded.js";

/** The lease of a held task: longer than any run. */
const LONG_LEASE_MS = 600_000;
/** Rounds of mixed work before the drain. */
const ROUNDS = 20;
/** Drain rounds at most. */
const DRAIN_ROUNDS = 400;
/** Clock difference allowed between a store's clock and this process's (same host). */
const SLACK_MS = 20;

/** The seeds to run: `CAIRNQ_TEST_GROUP_LEASE_SEEDS` (`1,2` or `1-50`) when set, else `defaults`. */
export function groupLeaseStressSeeds(defaults: readonly number[], spec: string | undefined = process.env.CAIRNQ_TEST_GROUP_LEASE_SEEDS): number[] {
  return seedList(spec, "CAIRNQ_TEST_GROUP_LEASE_SEEDS", defaults);
}

interface LeaseTask {
  readonly id: string;
  readonly group: string;
  readonly maxAttempts: number;
  status: "queued" | "running" | "succeeded" | "failed";
  attempt: number;
  worker: string;
  leaseUntil: number;
  /** Running under a short lease, never settled by its holder. */
  abandoned: boolean;
  claims: number;
  completes: number;
}

/** What one run did, for the caller's log. */
export interface GroupLeaseReport {
  readonly seed: number;
  readonly groups: number;
  readonly tasks: number;
  readonly claims: number;
  readonly unlimitedClaims: number;
  readonly rounds: number;
  readonly limits: FlowControl;
  /** Abandoned tasks recovered back to the queue (read back queued, or taken again by a claim), and failed by recovery at their last attempt. */
  readonly recovered: number;
  readonly recoveredFailed: number;
  /** Late settlements refused with `LostLease`. */
  readonly lateRefused: number;
  /** Tasks recovered and taken again in the round that took them under a short lease (a slow round). */
  readonly retakenInRound: number;
  /** The most tasks of one group certainly running when a limited claim took one of it. */
  readonly peakRunning: number;
}

/**
 * One seeded run over `stores` (connected, on one database, with the group tables; each used by the run alone). The
 * name is `glease<seed>`, so runs of several seeds may share the stores.
 */
export async function runGroupLeaseStress(stores: readonly TaskStore[], seed: number): Promise<GroupLeaseReport> {
  const rng = new Rng(seed * 7919 + 13);
  const name = `glease${seed}`;
  const concurrency = rng.int(1, 3);
  const rate = rng.chance(0.3) ? { max: rng.int(3, 6), perMs: rng.int(200, 600) } : null;
  const limits: FlowControl = { groupConcurrency: concurrency, ...(rate === null ? {} : { groupRateLimit: rate }) };
  const shortLease = rng.int(200, 400);
  const groups = Array.from({ length: rng.int(4, 16) }, (_, i) => `g${String(i).padStart(2, "0")}`);
  const workers = stores.map(() => [newWorkerId(), newWorkerId()]);
  const tasks = new Map<string, LeaseTask>();
  const claimTimes = new Map<string, number[]>();
  const log: string[] = [`lease stress seed ${seed}: ${stores.length} stores, ${groups.length} groups, limits ${JSON.stringify(limits)}, short lease ${shortLease} ms`];
  let claims = 0;
  let unlimitedClaims = 0;
  let recovered = 0;
  let recoveredFailed = 0;
  let lateRefused = 0;
  let retakenInRound = 0;
  let peakRunning = 0;
  let round = 0;

  const fail = (message: string): never => {
    throw new Error(`group lease stress seed ${seed} round ${round} (replay: CAIRNQ_TEST_GROUP_LEASE_SEEDS=${seed}): ${message}\n--- log (last 40)\n${log.slice(-40).join("\n")}`);
  };

  const submit = async (store: TaskStore): Promise<void> => {
    const group = rng.pick(groups);
    const maxAttempts = rng.chance(0.2) ? rng.int(1, 2) : 1000;
    const row = await store.submit({ name, group, priority: rng.pick([0, 0, 1]), maxAttempts, payload: { group } });
    tasks.set(row.id, { id: row.id, group, maxAttempts, status: "queued", attempt: 0, worker: "", leaseUntil: 0, abandoned: false, claims: 0, completes: 0 });
  };
  for (let i = groups.length * rng.int(2, 4); i > 0; i--) await submit(rng.pick(stores));

  type Kind = "limited" | "unlimited" | "unlimited-first";
  interface Taken {
    readonly task: Task;
    readonly store: number;
    readonly kind: Kind;
    readonly leaseMs: number;
  }

  /** One round: `drain` makes no submits, no fails and no short leases. Returns how many tasks its claims took. */
  const playRound = async (drain: boolean): Promise<number> => {
    round += 1;
    const roundStart = Date.now();
    const held = [...tasks.values()].filter((t) => t.status === "running" && !t.abandoned);
    const settled = new Set<string>();
    const failedBack = new Set<string>();
    const taken: Taken[] = [];
    const split = rng.chance(0.5);
    const claimOp = (i: number, kind: Kind): (() => Promise<void>) => {
      const store = stores[i] as TaskStore;
      const workerId = rng.pick(workers[i] as string[]);
      const limit = rng.pick([1, 1, 2, 3, 5, 8]);
      const leaseMs = !drain && rng.chance(0.3) ? shortLease : LONG_LEASE_MS;
      return async () => {
        const input = { queues: ["default"], workerId, names: [name], limit, leaseMs };
        const rows = await store.claim(kind === "limited" ? { ...input, flowControl: { [name]: limits } } : input);
        for (const task of rows) taken.push({ task, store: i, kind, leaseMs });
      };
    };
    const first: (() => Promise<void>)[] = [];
    const ops: (() => Promise<void>)[] = [];
    for (const [i] of stores.entries()) {
      for (let n = rng.int(1, 3); n > 0; n--) ops.push(claimOp(i, "limited"));
      if (rng.chance(0.35)) (split ? first : ops).push(claimOp(i, split ? "unlimited-first" : "unlimited"));
    }
    const toSettle = [...held].sort(() => rng.next() - 0.5).slice(0, drain ? held.length : rng.int(0, Math.min(8, held.length)));
    for (const t of toSettle) {
      settled.add(t.id);
      const store = rng.pick(stores);
      const { attempt, worker: workerId } = t;
      if (!drain && rng.chance(0.3)) {
        ops.push(async () => {
          const row = await store.fail({ taskId: t.id, workerId, attempt, error: { code: "stress" }, retryable: true, delayMs: 0 });
          const last = attempt >= t.maxAttempts;
          if (row.status !== (last ? "failed" : "queued")) fail(`a retryable fail of ${t.id} (attempt ${attempt} of ${t.maxAttempts}) left it ${row.status}`);
          if (!last) failedBack.add(t.id);
          else t.status = "failed";
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
    for (let i = ops.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [ops[i], ops[j]] = [ops[j] as () => Promise<void>, ops[i] as () => Promise<void>];
    }
    if (first.length > 0) await Promise.all(first.map((op) => op()));
    await Promise.all(ops.map((op) => op()));
    const roundEnd = Date.now();

    for (const t of toSettle) {
      if (failedBack.has(t.id)) t.status = "queued";
      else if (t.completes > 0) t.status = "succeeded";
    }
    const seen = new Map<string, Kind>();
    const takes = (id: string): string =>
      taken
        .filter((x) => x.task.id === id)
        .map((x) => `store ${x.store} (${x.kind}, lease ${x.leaseMs} ms) as attempt ${x.task.attempt} by ${x.task.worker_id ?? "?"} until ${x.task.lease_until_ms ?? "?"}`)
        .join("; ");
    // In attempt order: a short lease taken in this round may run out before it ends, and another claim take the task again.
    taken.sort((a, b) => a.task.attempt - b.task.attempt);
    for (const { task: row, store, kind, leaseMs } of taken) {
      const t = tasks.get(row.id);
      if (t === undefined) return fail(`a claim returned ${row.id}, which the run never submitted`);
      const again = seen.has(t.id);
      if (again && t.leaseUntil > roundEnd + SLACK_MS) fail(`two claims of round ${round} (${roundStart}–${roundEnd}) both took ${t.id}, which was ${t.status} (attempt ${t.attempt}, lease until ${t.leaseUntil}): ${takes(t.id)}`);
      seen.set(t.id, kind);
      const expired = t.status === "running" && t.leaseUntil <= roundEnd + SLACK_MS;
      if (t.status !== "queued" && !expired) fail(`store ${store} (${kind}) took ${t.id} (group ${t.group}), which was ${t.status} (attempt ${t.attempt} by ${t.worker}, lease until ${t.leaseUntil})`);
      if (row.attempt !== t.attempt + 1) fail(`store ${store} took ${t.id} as attempt ${row.attempt}, expected ${t.attempt + 1}`);
      if (row.lease_until_ms === null) return fail(`store ${store} took ${t.id} without a lease`);
      if (expired) log.push(`  ${t.id} (${t.group}) recovered and taken again by store ${store} (${kind})${again ? " in the round that took it before" : ""}`);
      if (again) retakenInRound += 1;
      if (expired) recovered += 1;
      t.status = "running";
      t.attempt = row.attempt;
      t.worker = row.worker_id ?? "";
      t.leaseUntil = row.lease_until_ms;
      t.abandoned = leaseMs !== LONG_LEASE_MS;
      t.claims += 1;
      claims += 1;
      if (kind !== "limited") {
        unlimitedClaims += 1;
        continue;
      }
      const times = claimTimes.get(t.group) ?? [];
      times.push(row.lease_until_ms - leaseMs);
      claimTimes.set(t.group, times);
    }

    // Late settlements by the holders of leases that certainly ran out: refused, recovered or not.
    for (const t of tasks.values()) {
      if (t.status !== "running" || !t.abandoned || t.leaseUntil > Date.now() - SLACK_MS || !rng.chance(0.3)) continue;
      const store = rng.pick(stores);
      const late = rng.chance(0.5)
        ? store.complete({ taskId: t.id, workerId: t.worker, attempt: t.attempt, result: { late: true } })
        : store.fail({ taskId: t.id, workerId: t.worker, attempt: t.attempt, error: { code: "late" }, retryable: true });
      const outcome = await late.then(
        (row) => row,
        (error: unknown) => error,
      );
      if (!(outcome instanceof LostLease)) fail(`a late settlement of ${t.id} by its old holder (attempt ${t.attempt}, lease until ${t.leaseUntil}) answered ${outcome instanceof Error ? outcome.message : JSON.stringify((outcome as Task).status)}, expected LostLease`);
      lateRefused += 1;
    }

    // Every abandoned task read back (one taken in this round too: its short lease may have run out, and a later claim
    // of the round recovered it): recovered by the round's claim cycles once its lease ran out before the round.
    for (const t of tasks.values()) {
      if (t.status !== "running" || !t.abandoned) continue;
      const row = await (stores[0] as TaskStore).get(t.id);
      if (row === null) return fail(`${t.id} is gone`);
      if (row.status === "running" && row.attempt === t.attempt) {
        if (t.leaseUntil < roundStart - SLACK_MS) fail(`${t.id} (group ${t.group}) is still running (lease until ${t.leaseUntil}) after round ${round}, begun at ${roundStart}: the round's claims did not recover it`);
        continue;
      }
      if (t.leaseUntil > roundEnd + SLACK_MS) fail(`${t.id} reads ${row.status} attempt ${row.attempt}, but its lease (until ${t.leaseUntil}) had not run out by the round's end ${roundEnd}`);
      if (row.attempt !== t.attempt || row.lease_until_ms !== null) fail(`${t.id} recovered as ${JSON.stringify({ status: row.status, attempt: row.attempt, lease: row.lease_until_ms })}, expected attempt ${t.attempt} and no lease`);
      if (t.attempt < t.maxAttempts) {
        if (row.status !== "queued" || row.worker_id !== null) fail(`${t.id} (attempt ${t.attempt} of ${t.maxAttempts}) recovered as ${row.status} by ${row.worker_id ?? "nobody"}, expected queued with no worker`);
        t.status = "queued";
        recovered += 1;
      } else {
        const code = (row.error as { code?: unknown } | null)?.code;
        if (row.status !== "failed" || code !== "lease_expired") fail(`${t.id} (last attempt ${t.attempt}) recovered as ${row.status} with error ${JSON.stringify(row.error)}, expected failed with lease_expired`);
        t.status = "failed";
        recoveredFailed += 1;
      }
      t.abandoned = false;
      log.push(`  ${t.id} (${t.group}) recovered: ${t.status}`);
    }
    log.push(
      `round ${round}${drain ? " (drain)" : ""}${split ? " split" : ""}: ${taken.length} taken (${taken.filter((x) => x.kind !== "limited").length} unlimited), ${toSettle.length} settled, ` +
        `${[...tasks.values()].filter((t) => t.status === "queued").length} queued, ${[...tasks.values()].filter((t) => t.status === "running" && t.abandoned).length} abandoned`,
    );

    // Running per group where a limited claim took: what was certainly running at its instant and still runs.
    const limitedTook = new Set(taken.filter((x) => x.kind === "limited").map((x) => (tasks.get(x.task.id) as LeaseTask).group));
    const certain = new Map<string, string[]>();
    for (const t of tasks.values()) {
      if (t.status !== "running" || !limitedTook.has(t.group)) continue;
      const kind = seen.get(t.id);
      if (kind === "unlimited") continue;
      if (kind === undefined && settled.has(t.id)) continue;
      certain.set(t.group, [...(certain.get(t.group) ?? []), t.id]);
    }
    for (const [group, ids] of certain) {
      peakRunning = Math.max(peakRunning, ids.length);
      if (ids.length > concurrency) {
        fail(`group ${group} has ${ids.length} tasks running (${ids.map((id) => `${id}${seen.has(id) ? `:${seen.get(id) as string}` : ""}`).join(" ")}) after a limited claim took one, above its groupConcurrency ${concurrency}`);
      }
    }
    if (rate !== null) {
      checkRateWindows(claimTimes, rate, (group, count, times) =>
        fail(`group ${group} has ${count} limited claims within ${rate.perMs} ms (at ${times.join(", ")}), above its groupRateLimit max ${rate.max}`),
      );
    }
    return taken.length;
  };

  for (let r = 0; r < ROUNDS; r++) await playRound(false);
  let stalled = 0;
  for (let r = 0; r < DRAIN_ROUNDS; r++) {
    const open = [...tasks.values()].filter((t) => t.status === "queued" || t.status === "running");
    if (open.length === 0) break;
    const took = await playRound(true);
    const abandoned = [...tasks.values()].filter((t) => t.status === "running" && t.abandoned);
    if (abandoned.length > 0 && took === 0) {
      // Only abandoned leases hold work back: wait for the first to run out.
      const next = Math.min(...abandoned.map((t) => t.leaseUntil));
      await new Promise((resolve) => setTimeout(resolve, Math.max(5, next - Date.now() + SLACK_MS + 1)));
      continue;
    }
    const idle = took === 0 && ![...tasks.values()].some((t) => t.status === "running");
    stalled = idle ? stalled + 1 : 0;
    if (idle && rate === null && stalled >= 3) fail(`the drain is stuck: ${[...tasks.values()].filter((t) => t.status === "queued").length} tasks queued, none running, and three rounds of claims took nothing`);
    if (idle && stalled >= 60) fail(`the drain is stuck: ${stalled} rounds of claims took nothing with nothing running`);
    if (idle) await new Promise((resolve) => setTimeout(resolve, rate === null ? 5 : Math.max(10, rate.perMs / 8)));
  }
  for (const t of tasks.values()) {
    const row = await (stores[0] as TaskStore).get(t.id);
    if (t.status === "succeeded") {
      if (t.completes !== 1) fail(`${t.id} completed ${t.completes} times`);
      if (row?.status !== "succeeded" || row.attempt !== t.claims) fail(`${t.id} reads ${row?.status ?? "missing"} with attempt ${row?.attempt ?? "?"}, after ${t.claims} claims and one complete`);
    } else if (t.status === "failed") {
      if (row?.status !== "failed" || row.attempt !== t.claims || row.attempt !== t.maxAttempts) fail(`${t.id} reads ${row?.status ?? "missing"} with attempt ${row?.attempt ?? "?"}, expected failed at its last attempt ${t.maxAttempts} after ${t.claims} claims`);
    } else {
      fail(`after the drain ${t.id} (group ${t.group}) is ${t.status}`);
    }
  }
  const report: GroupLeaseReport = { seed, groups: groups.length, tasks: tasks.size, claims, unlimitedClaims, rounds: round, limits, recovered, recoveredFailed, lateRefused, retakenInRound, peakRunning };
  if (process.env.CAIRNQ_TEST_GROUP_STRESS_REPORT === "1") console.log(`group lease stress ${JSON.stringify(report)}`);
  return report;
}
