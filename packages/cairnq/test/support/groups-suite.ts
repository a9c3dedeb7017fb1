/**
 * Groups with real worker processes, written once for every backend
 * (`groups-sqlite.test.ts`, `groups-postgres.test.ts`, `groups-mysql.test.ts`). Fixture:
 * fixtures/groups-worker.mjs.
 *
 * Every assertion is on outcomes (overlap per group, claims per window on the
 * store's claim times, start order, payloads run); deadlines only stop a hung
 * test (each test's timeout is such a bound: generous, since MariaDB takes its
 * time with 5,000 submits on a loaded machine). The figures are printed for the
 * release notes. Sizes can be raised with CAIRNQ_GROUPS_BACKLOG (the fairness
 * backlog, default 5000).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CairnQ, Task } from "cairnq";
import { Children } from "./processes.ts";
import type { Child, FixtureMessage } from "./processes.ts";
import type { ProcessBackend, ProcessDatabase } from "./process-suite.ts";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const BACKLOG = Number(process.env.CAIRNQ_GROUPS_BACKLOG ?? 5000);

/** Largest number of [start, end] intervals open at one instant (an end before a start at the same ms). */
function maxOverlap(intervals: readonly { start: number; end: number }[]): number {
  const edges = intervals.flatMap((i) => [
    { at: i.start, d: 1 },
    { at: i.end, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let max = 0;
  for (const e of edges) {
    open += e.d;
    max = Math.max(max, open);
  }
  return max;
}

/** Largest number of instants in any half-open window (t − perMs, t]. */
function maxPerWindow(times: readonly number[], perMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[lo] as number) <= (sorted[hi] as number) - perMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function tasksOf(client: CairnQ, name: string): Promise<Task[]> {
  return client.list({ name, limit: 100_000 });
}

/** Submits `count` tasks of `name` in `group`, 50 at a time; their ids in submit order. */
async function submitMany(client: CairnQ, name: string, group: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) => client.submit(name, { group, n: i + j }, { group }));
    for (const task of await Promise.all(batch)) ids.push(task.id);
  }
  return ids;
}

export function describeGroupsSuite(backend: ProcessBackend): void {
  describe(`groups across real worker processes (${backend.label})`, () => {
    let db: ProcessDatabase;
    let children: Children;

    beforeEach(async () => {
      db = await backend.fresh();
      children = new Children();
    });

    afterEach(async () => {
      try {
        await children.reap();
        await db.client.close();
      } finally {
        await db.dispose();
      }
    });

    function spawn(label: string, config: Record<string, unknown>): Child {
      return children.spawn(label, "groups-worker.mjs", [db.fixtureArg, JSON.stringify({ pollIntervalMs: 20, ...config })]);
    }

    it("groupConcurrency 2 over 20 groups holds across 3 worker processes, one SIGKILLed and restarted, while groups run in parallel", async () => {
      const limit = 2;
      const config = { task: "export", concurrency: 4, leaseMs: 600, holdMs: 40, limits: { groupConcurrency: limit } };
      const groups = Array.from({ length: 20 }, (_, i) => `tenant-${String(i).padStart(2, "0")}`);
      const groupOf = new Map<string, string>();
      for (const group of groups) for (const id of await submitMany(db.client, "export", group, 4)) groupOf.set(id, group);
      const killed = spawn("groups-killed", { ...config, hold: "forever" });
      await killed.next("ready");
      // The others start once the doomed worker holds its 4 tasks: started together on a loaded machine, they
      // could drain all 80 before its first claim (seen on MariaDB at load average 38).
      await killed.waitUntil("the doomed worker to hold 4 tasks", (m) => (m.filter((x) => x.type === "start").length >= 4 ? true : undefined));
      const workers = [spawn("groups-a", config), spawn("groups-b", config)];
      for (const w of workers) await w.next("ready");
      await sleep(150);
      const killedAt = Date.now();
      killed.proc.kill("SIGKILL");
      await killed.exited;
      const restarted = spawn("groups-restarted", config);
      await restarted.next("ready");
      await waitFor("every export task to succeed", async () => (await tasksOf(db.client, "export")).every((t) => t.status === "succeeded"));
      const live = [...workers, restarted];
      for (const w of live) await children.stop(w);
      for (const w of live) expect(w.of("on-error")).toEqual([]);

      const ends = new Map(live.flatMap((w) => w.of("end")).map((m: FixtureMessage) => [`${String(m.taskId)}#${String(m.attempt)}`, Number(m.at)]));
      const intervals = [
        ...live.flatMap((w) => w.of("start")).map((s) => ({ taskId: String(s.taskId), start: Number(s.at), end: ends.get(`${String(s.taskId)}#${String(s.attempt)}`) ?? Number.NaN })),
        // The killed worker's tasks ran until the kill (the store counted them longer: until their leases were recovered).
        ...killed.of("start").map((s) => ({ taskId: String(s.taskId), start: Number(s.at), end: killedAt })),
      ];
      expect(intervals.every((i) => Number.isFinite(i.end))).toBe(true);
      const perGroup = new Map<string, { start: number; end: number }[]>();
      for (const i of intervals) {
        const group = groupOf.get(i.taskId) as string;
        let list = perGroup.get(group);
        if (list === undefined) perGroup.set(group, (list = []));
        list.push(i);
      }
      const worstGroup = Math.max(...[...perGroup.values()].map(maxOverlap));
      const overall = maxOverlap(intervals);
      expect(worstGroup).toBeLessThanOrEqual(limit);
      expect(overall).toBeGreaterThan(limit);
      // Every task of the killed worker ran again elsewhere once its lease was recovered.
      const rerun = new Set(live.flatMap((w) => w.of("start")).filter((s) => Number(s.attempt) === 2).map((s) => String(s.taskId)));
      for (const s of killed.of("start")) expect(rerun.has(String(s.taskId))).toBe(true);
      expect(await tasksOf(db.client, "export")).toHaveLength(80);
      console.log(
        `[groups ${backend.label}] groupConcurrency ${limit}, 20 groups × 4 tasks, 3 worker processes (concurrency 4 each, one SIGKILLed holding ${killed.of("start").length} tasks, then restarted): ` +
          `max overlap per group ${worstGroup}, overall max overlap ${overall}, 80/80 succeeded, killed tasks re-run as attempt 2`,
      );
    }, 60_000);

    it("groupRateLimit 3 per 500 ms over 5 groups holds across 2 worker processes, judged on the store's claim times", async () => {
      const rate = { max: 3, perMs: 500 };
      const config = { task: "call", concurrency: 6, holdMs: 5, limits: { groupRateLimit: rate } };
      const groupOf = new Map<string, string>();
      for (let g = 0; g < 5; g++) for (const id of await submitMany(db.client, "call", `key-${g}`, 6)) groupOf.set(id, `key-${g}`);
      const workers = [spawn("rate-a", config), spawn("rate-b", config)];
      for (const w of workers) await w.next("ready");
      await waitFor("every call task to succeed", async () => (await tasksOf(db.client, "call")).every((t) => t.status === "succeeded"));
      for (const w of workers) await children.stop(w);
      const starts = workers.flatMap((w) => w.of("start"));
      expect(starts).toHaveLength(30);
      const byGroup = new Map<string, number[]>();
      for (const s of starts) {
        const group = groupOf.get(String(s.taskId)) as string;
        let list = byGroup.get(group);
        if (list === undefined) byGroup.set(group, (list = []));
        list.push(Number(s.claimedAt));
      }
      const worst = Math.max(...[...byGroup.values()].map((times) => maxPerWindow(times, rate.perMs)));
      expect(worst).toBeLessThanOrEqual(rate.max);
      // The groups share no window: the name as a whole went faster than one group's limit.
      const overall = maxPerWindow(starts.map((s) => Number(s.claimedAt)), rate.perMs);
      expect(overall).toBeGreaterThan(rate.max);
      console.log(
        `[groups ${backend.label}] groupRateLimit ${rate.max}/${rate.perMs} ms, 5 groups × 6 tasks, 2 worker processes: ` +
          `max claims of one group in any ${rate.perMs} ms window ${worst} (all groups together ${overall}), 30/30 succeeded`,
      );
    }, 60_000);

    it(`fairness: ${BACKLOG} tasks of group A submitted first, then 10 of group B; B does not wait for A's backlog`, async () => {
      const a = await submitMany(db.client, "fair", "A", BACKLOG);
      const b = new Set(await submitMany(db.client, "fair", "B", 10));
      // No cap that would hold A back by itself: only the rotation lets B in.
      const config = { task: "fair", concurrency: 8, holdMs: 2, limits: { groupConcurrency: 1000 } };
      const workers = [spawn("fair-a", config), spawn("fair-b", config)];
      for (const w of workers) await w.next("ready");
      await waitFor("every B task to start", () => Promise.resolve(workers.flatMap((w) => w.of("start")).filter((s) => b.has(String(s.taskId))).length >= 10));
      for (const w of workers) await children.stop(w);
      const starts = workers.flatMap((w) => w.of("start")).sort((x, y) => Number(x.claimedAt) - Number(y.claimedAt) || Number(x.at) - Number(y.at));
      const lastB = Math.max(...starts.filter((s) => b.has(String(s.taskId))).map((s) => Number(s.claimedAt)));
      const aBefore = starts.filter((s) => !b.has(String(s.taskId)) && Number(s.claimedAt) < lastB).length;
      // Plain claim order would start all of A first; the rotation alternates A and B per claim.
      expect(aBefore).toBeLessThan(100);
      expect(a).toHaveLength(BACKLOG);
      console.log(`[groups ${backend.label}] fairness: ${BACKLOG} A then 10 B, 2 worker processes (concurrency 8 each): ${aBefore} A tasks started before the last B task started`);
    }, 120_000);

    it("debounce: 20 submits under one key 50 ms apart with delayMs 200, maxDelayMs 600 run the handler once per task, each with the last payload submitted to it", async () => {
      const worker = spawn("debounce", { task: "reindex", concurrency: 2, holdMs: 5 });
      await worker.next("ready");
      const debounce = { delayMs: 200, maxDelayMs: 600 };
      const submits: { n: number; at: number; taskId: string; created: boolean }[] = [];
      for (let n = 1; n <= 20; n++) {
        const at = Date.now();
        const { task, created } = await db.client.submitOutcome("reindex", { n }, { key: "reindex:user-1", debounce });
        submits.push({ n, at, taskId: task.id, created });
        await sleep(Math.max(0, at + 50 - Date.now()));
      }
      const taskIds = [...new Set(submits.map((s) => s.taskId))];
      await waitFor("every debounced task to succeed", async () => {
        const rows = await Promise.all(taskIds.map((id) => db.client.get(id)));
        return rows.every((row) => row?.status === "succeeded");
      });
      await children.stop(worker);
      const runs = worker.of("start");
      // One handler call per task, with the payload of the last submit that returned that task.
      expect(runs.map((r) => String(r.taskId)).sort()).toEqual([...taskIds].sort());
      for (const id of taskIds) {
        const last = submits.filter((s) => s.taskId === id).at(-1);
        expect(runs.find((r) => r.taskId === id)?.payload).toEqual({ n: last?.n });
      }
      expect(runs.at(-1)?.payload).toEqual({ n: 20 });
      // Each task ran no earlier than delayMs after its last submit or maxDelayMs after its first, whichever came first.
      for (const id of taskIds) {
        const row = (await db.client.get(id)) as Task;
        const mine = submits.filter((s) => s.taskId === id);
        const first = row.created_at_ms;
        expect(row.run_at_ms).toBeLessThanOrEqual(first + debounce.maxDelayMs);
        expect(Number(runs.find((r) => r.taskId === id)?.claimedAt)).toBeGreaterThanOrEqual(row.run_at_ms);
        expect(mine[0]?.created).toBe(true);
      }
      // What the rule gives with an idle worker that takes a task the moment it is due: a task runs at
      // min(last submit + 200, first + 600); a submit after that starts a new task. The burst spans
      // 950 ms, past one cap, so at least two runs.
      let expected = 0;
      let open: { first: number; runAt: number } | null = null;
      for (const s of submits) {
        if (open !== null && s.at < open.runAt) open.runAt = Math.min(s.at + debounce.delayMs, open.first + debounce.maxDelayMs);
        else {
          expected += 1;
          open = { first: s.at, runAt: s.at + debounce.delayMs };
        }
      }
      expect(runs.length).toBeGreaterThanOrEqual(2);
      console.log(
        `[groups ${backend.label}] debounce: 20 submits 50 ms apart (delayMs 200, maxDelayMs 600): ${runs.length} handler runs ` +
          `(the rule with an instant pickup gives ${expected}), payloads run ${runs.map((r) => (r.payload as { n: number }).n).join(", ")} — each the last submitted to its task`,
      );
    }, 60_000);
  });
}
