/**
 * Groups past the pages: a seeded walk over one grouped name (in one queue or
 * two) with many more groups than a claim's page holds (40 to 300; `GROUP_PAGE_MIN` is 16), many
 * at their `groupConcurrency`, many spent under a `groupRateLimit` whose
 * window outlasts the walk, some holding only tasks delayed past the walk
 * ("sleepers"), some idle, so a claim pages past them, may reach the scan's
 * page bound, and the served order wraps round. Run only for stores
 * declaring `groups`.
 *
 * What is checked after every claim, from a model the walk keeps of what it
 * did and what the store answered (never from the store's tables):
 * - each row taken was queued and of the name, with attempt + 1; no sleeper's
 *   task; no group over its room under either limit; inside a group the best
 *   tasks (priority, then the oldest) went first;
 * - the rotation over what the pages reached: the rows taken are exactly the
 *   tasks without a group at the head of the plain order, then
 *   round-robin (one task per group per round, least recently served first)
 *   over the first `k` eligible groups in served order, for some `k` — pages
 *   read the active groups in served order, so the eligible groups a claim
 *   reaches are a prefix of them whatever the page bounds;
 * - the bound of the scan (docs/protocol.md, Groups, step 3: pages until the
 *   claim has enough, or 4 pages gave work, or 16 pages were read): that
 *   prefix leaves an eligible group unreached only when the groups before it
 *   can give the whole claim (counting each one's due tasks within its room:
 *   so a claim may take an early group's second task before a later page's
 *   group gets its first), or it holds at least 4 eligible groups (4 pages
 *   gave work), or that group stands behind at least 16 pages of groups
 *   (counting every group ahead of it but those whose rate window is full,
 *   which the read skips, and every sleeper). So a group behind any number
 *   of groups spent under their rate limit is reached (the crowd walks).
 *
 * The served order the model keeps is exact for every group but the
 * sleepers: a claim moves a group to the back only when it serves it, or
 * when it passes it holding queued tasks none of which is due — only the
 * sleepers, which are never eligible (their tasks are due after the walk).
 *
 * The seeds are {@link GROUP_PAGED_SEEDS}; `CAIRNQ_KIT_GROUP_PAGED_SEEDS`
 * picks others (`7,12` or `1-200`), and a failure names its seed.
 */
import type { FlowControl, Task } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { ConformanceFailure } from "../case.js";
import { Rng } from "./group-model.js";
import { seedList } from "./seeds.js";

/**
 * The seeds the kit runs (under 1 s in all on SQLite): 3 (90 groups) pages past full and spent groups; 4, a crowd walk
 * (270 spent groups ahead of the reserve: more than 16 pages for a claim of one), holds the store to reaching the
 * reserve past every spent group (8, 241 spent, held it to the 16th page while spent groups took places in pages); 296 (254 groups) found a group
 * reached on a later page read with too few tasks for its round 1 (`group-rotation-across-pages` pins it).
 */
export const GROUP_PAGED_SEEDS: readonly number[] = [3, 4, 296];
/** A page holds at least this many groups (store-kysely `GROUP_PAGE_MIN`, docs/protocol.md step 3). */
const PAGE_MIN = 16;
/** Pages that gave work, and pages in all, one claim reads at most (docs/protocol.md step 3). */
const PAGES_GAVE = 4;
const PAGES_ALL = 16;
/** The rows at the head of the plain order a group claim takes tasks without a group from. */
const HEAD_ROWS = 8;
const FAR_MS = 3_600_000;
/** The groups of a crowd walk served last, behind every spent group (see {@link crowdWalk}). */
const CROWD_RESERVE = 6;
const LEASE_MS = 120_000;

/** The seeds to run: `CAIRNQ_KIT_GROUP_PAGED_SEEDS` when set, else {@link GROUP_PAGED_SEEDS}. */
export function groupPagedSeeds(spec: string | undefined = process.env.CAIRNQ_KIT_GROUP_PAGED_SEEDS): number[] {
  return seedList(spec, "CAIRNQ_KIT_GROUP_PAGED_SEEDS", GROUP_PAGED_SEEDS);
}

interface PTask {
  readonly id: string;
  readonly label: string;
  readonly group: string | null;
  readonly priority: number;
  readonly sleeper: boolean;
  readonly queue: string;
  runAtMs: number;
  status: "queued" | "running" | "ended";
  attempt: number;
  worker: string;
}

function groupOrder(a: PTask, b: PTask): number {
  return b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function plainOrder(a: PTask, b: PTask): number {
  return b.priority - a.priority || a.runAtMs - b.runAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

class PagedWalk {
  readonly rng: Rng;
  readonly limits: FlowControl;
  readonly keys: string[] = [];
  readonly sleepers = new Set<string>();
  readonly tasks = new Map<string, PTask>();
  /** Groups with a group row (ever submitted to). */
  readonly existing = new Set<string>();
  /** When each group was last served (the walk's claim number); never served: absent. */
  readonly events = new Map<string, number>();
  readonly rateClaims = new Map<string, number>();
  readonly log: string[] = [];
  readonly workers: string[];
  /** The walk's name: one per seed, so the walks of one case share no group rows. */
  readonly name: string;
  /**
   * The walk's queues: `default`, or with `other` too, chosen (and each task's queue and each claim's queues) by a
   * PRNG of their own, so a walk of one queue makes the same choices as before queues were drawn.
   */
  readonly queues: string[];
  readonly queueRng: Rng;
  /** A crowd walk (see {@link crowdWalk}). */
  readonly crowd: boolean;
  claims = 0;
  /** How many claims reached the scan bound, stopped short of an eligible group, or read past one page: the walk's reach, for the log. */
  readonly reach = { pastFirstPage: 0, stoppedShort: 0, stoppedEnough: 0 };
  #labels = 0;

  constructor(
    readonly t: CaseContext,
    readonly seed: number,
  ) {
    const rng = (this.rng = new Rng(seed * 7919 + 13));
    this.workers = [t.w1, t.w2, t.w3];
    this.name = `paged${seed}`;
    this.queueRng = new Rng(seed * 101 + 11);
    this.queues = this.queueRng.chance(0.3) ? ["default", "other"] : ["default"];
    this.crowd = rng.chance(0.25);
    const concurrency = this.crowd ? undefined : rng.chance(0.75) ? rng.int(1, 3) : undefined;
    const rate = this.crowd ? { max: 2, perMs: FAR_MS } : concurrency === undefined || rng.chance(0.5) ? { max: rng.int(1, 4), perMs: FAR_MS } : undefined;
    this.limits = { ...(concurrency === undefined ? {} : { groupConcurrency: concurrency }), ...(rate === undefined ? {} : { groupRateLimit: rate }) };
    const count = this.crowd ? rng.int(240, 280) + CROWD_RESERVE : rng.chance(0.3) ? rng.int(150, 300) : rng.int(40, 90);
    const keys = new Set<string>();
    while (keys.size < count) keys.add(`g${String(rng.int(0, 9999)).padStart(4, "0")}`);
    this.keys = [...keys];
    if (!this.crowd) for (const k of this.keys) if (rng.chance(0.15)) this.sleepers.add(k);
    this.log.push(`paged seed ${seed}${this.crowd ? " (crowd)" : ""}: queues ${this.queues.join(",")}, ${count} groups (${this.sleepers.size} sleepers), limits ${JSON.stringify(this.limits)}`);
  }

  fail(message: string): never {
    const lines: string[] = [];
    for (const g of this.order([...this.existing].filter((k) => !this.sleepers.has(k)))) {
      const queued = [...this.tasks.values()].filter((x) => x.group === g && x.status === "queued").map((x) => `${x.label}(p${x.priority}${x.queue === "default" ? "" : `,${x.queue}`})`);
      lines.push(`  ${g}: served ${this.events.get(g) ?? "never"}, running ${this.running(g)}, rate ${this.rateClaims.get(g) ?? 0}, queued [${queued.join(" ")}]`);
    }
    throw new ConformanceFailure(
      `paged group walk seed ${this.seed} (replay: CAIRNQ_KIT_GROUP_PAGED_SEEDS=${this.seed}): ${message}\n--- model (limits ${JSON.stringify(this.limits)})\n${lines.join("\n")}\n--- log\n${this.log.slice(-(Number(process.env.CAIRNQ_KIT_GROUP_PAGED_LOG ?? 60))).join("\n")}`,
    );
  }

  running(group: string): number {
    let n = 0;
    for (const x of this.tasks.values()) if (x.group === group && x.status === "running") n += 1;
    return n;
  }

  allowance(group: string): number {
    let left = Number.POSITIVE_INFINITY;
    if (this.limits.groupConcurrency !== undefined) left = Math.min(left, this.limits.groupConcurrency - this.running(group));
    if (this.limits.groupRateLimit !== undefined) left = Math.min(left, this.limits.groupRateLimit.max - (this.rateClaims.get(group) ?? 0));
    return Math.max(0, left);
  }

  /** Whether the group's rate window is full: a page read skips it, so it takes no place in the pages. */
  rateSpent(group: string): boolean {
    const rate = this.limits.groupRateLimit;
    return rate !== undefined && (this.rateClaims.get(group) ?? 0) >= rate.max;
  }

  /** Groups in served order: never served first, then least recently served, then by key. */
  order(groups: string[]): string[] {
    return groups.sort((a, b) => (this.events.get(a) ?? -1) - (this.events.get(b) ?? -1) || (a < b ? -1 : a > b ? 1 : 0));
  }

  async submit(group: string | null, priority: number): Promise<PTask> {
    const sleeper = group !== null && this.sleepers.has(group);
    const queue = this.queueRng.pick(this.queues);
    const row = await this.t.submit(this.name, { queue, priority, maxAttempts: 3, ...(group === null ? {} : { group }), ...(sleeper ? { runAtDelayMs: FAR_MS } : {}) });
    const label = `${group ?? "-"}#${++this.#labels}`;
    const task: PTask = { id: row.id, label, group, priority, sleeper, queue, runAtMs: row.run_at_ms, status: "queued", attempt: 0, worker: "" };
    this.tasks.set(task.id, task);
    if (group !== null) this.existing.add(group);
    this.log.push(`submit ${label} p${priority}${queue === "default" ? "" : ` ${queue}`}${sleeper ? " +far" : ""}`);
    return task;
  }

  queued(): PTask[] {
    return [...this.tasks.values()].filter((x) => x.status === "queued");
  }

  running_(): PTask[] {
    return [...this.tasks.values()].filter((x) => x.status === "running");
  }

  /** A checked claim of up to `cap` rows; of every queue of the walk when `all`, else of the queues the queue PRNG picks. */
  async claim(cap: number, all = false): Promise<Task[]> {
    const workerId = this.rng.pick(this.workers);
    const queues = all || this.queues.length === 1 ? this.queues : this.queueRng.pick([["default"], ["other"], this.queues]);
    const rows = await this.t.claim(workerId, { queues, names: [this.name], limit: cap, leaseMs: LEASE_MS, flowControl: { [this.name]: this.limits } });
    this.claims += 1;
    this.log.push(`claim ${this.claims} [${queues.join(",")}] limit ${cap} -> [${rows.map((r) => this.tasks.get(r.id)?.label ?? r.id).join(" ")}]`);
    this.check(cap, queues, rows, workerId);
    return rows;
  }

  /** The checks of the module comment, then the model moves. */
  check(cap: number, queues: readonly string[], rows: readonly Task[], workerId: string): void {
    const due = this.queued().filter((x) => !x.sleeper && queues.includes(x.queue));
    const head = due.sort(plainOrder).slice(0, HEAD_ROWS).filter((x) => x.group === null);
    const byGroup = new Map<string, PTask[]>();
    for (const x of due) if (x.group !== null) byGroup.set(x.group, [...(byGroup.get(x.group) ?? []), x]);
    for (const list of byGroup.values()) list.sort(groupOrder);
    const eligible = this.order([...byGroup.keys()].filter((g) => this.allowance(g) > 0));
    const taken: PTask[] = [];
    const seen = new Set<string>();
    if (rows.length > cap) this.fail(`the claim took ${rows.length} rows, above its limit ${cap}`);
    for (const row of rows) {
      const x = this.tasks.get(row.id);
      if (x === undefined) return this.fail(`the claim took ${row.id}, which the walk never submitted`);
      if (seen.has(x.id)) this.fail(`the claim returned ${x.label} twice`);
      seen.add(x.id);
      if (x.status !== "queued") this.fail(`the claim took ${x.label}, which was ${x.status}`);
      if (!queues.includes(x.queue)) this.fail(`the claim of [${queues.join(",")}] took ${x.label}, of queue ${x.queue}`);
      if (x.sleeper) this.fail(`the claim took ${x.label}, due only after the walk`);
      if (row.status !== "running" || row.attempt !== x.attempt + 1) this.fail(`${x.label} came back ${row.status} attempt ${row.attempt}, expected running ${x.attempt + 1}`);
      taken.push(x);
    }
    const takenOf = new Map<string, PTask[]>();
    for (const x of taken) if (x.group !== null) takenOf.set(x.group, [...(takenOf.get(x.group) ?? []), x]);
    for (const [g, mine] of takenOf) {
      if (mine.length > this.allowance(g)) this.fail(`the claim took ${mine.length} of ${g}, which had room for ${this.allowance(g)} (running ${this.running(g)}, rate ${this.rateClaims.get(g) ?? 0})`);
      const left = (byGroup.get(g) ?? []).filter((x) => !seen.has(x.id));
      for (const l of left) for (const m of mine) if (groupOrder(l, m) < 0) this.fail(`in ${g} the claim took ${m.label} (p${m.priority}) and left ${l.label} (p${l.priority}), which goes first`);
    }
    // The rotation over a prefix of the eligible groups in served order, one the pages may stop at.
    const got = taken.map((x) => x.label).sort().join(" ");
    if ([...takenOf.keys()].some((g) => !eligible.includes(g))) this.fail(`the claim took from ${[...takenOf.keys()].filter((g) => !eligible.includes(g)).join(",")}, not eligible`);
    const pageSize = Math.max(cap, PAGE_MIN);
    const served = this.order([...this.existing].filter((g) => !this.sleepers.has(g)));
    /**
     * Whether the pages may stop before `eligible[k]` (docs/protocol.md step 3): all were read; or enough work was seen
     * (what the first `k` groups can give, the most a store can have counted); or 4 pages gave work (each holds an
     * eligible group); or that group may stand behind 16 pages (every group ahead of it but the rate-spent ones, which
     * the read skips, and every sleeper).
     */
    const mayStopAt = (k: number): boolean => {
      if (k >= eligible.length) return true;
      let available = head.length;
      for (const g of eligible.slice(0, k)) available += Math.min(this.allowance(g), (byGroup.get(g) ?? []).length);
      const ahead = served.slice(0, served.indexOf(eligible[k] as string)).filter((g) => !this.rateSpent(g)).length;
      return available >= cap || k >= PAGES_GAVE || ahead + this.sleepers.size >= PAGES_ALL * pageSize;
    };
    let reached = -1;
    const least = Math.max(0, ...[...takenOf.keys()].map((g) => eligible.indexOf(g) + 1));
    for (let k = least; k <= eligible.length && reached < 0; k++) {
      if (mayStopAt(k) && rotate(head, eligible.slice(0, k), byGroup, (g) => this.allowance(g), cap).map((x) => x.label).sort().join(" ") === got) reached = k;
    }
    if (reached < 0) {
      const all = rotate(head, eligible, byGroup, (g) => this.allowance(g), cap).map((x) => x.label);
      this.fail(
        `the claim took [${got}], which is the rotation over no prefix of the eligible groups [${eligible.join(" ")}] that the pages may stop at ` +
          `(over all of them: [${all.sort().join(" ")}]; first stop allowed after ${eligible.findIndex((_, k) => mayStopAt(k))} groups)`,
      );
    }
    if (reached < eligible.length) {
      if (taken.length < cap) this.reach.stoppedShort += 1;
      else this.reach.stoppedEnough += 1;
    }
    const lastServed = eligible[reached - 1];
    if (lastServed !== undefined && this.order([...this.existing].filter((g) => !this.sleepers.has(g))).indexOf(lastServed) >= PAGE_MIN) this.reach.pastFirstPage += 1;
    // The model moves: taken tasks run; their groups are served (one place for the claim, by key among them).
    for (const x of taken) {
      x.status = "running";
      x.attempt += 1;
      x.worker = workerId;
      if (x.group !== null) {
        this.rateClaims.set(x.group, (this.rateClaims.get(x.group) ?? 0) + 1);
        this.events.set(x.group, this.claims);
      }
    }
  }
}

/** The documented rotation, restated: the head's tasks without a group, then one task per group per round in `groups`' order. */
function rotate(head: readonly PTask[], groups: readonly string[], byGroup: ReadonlyMap<string, PTask[]>, allowance: (g: string) => number, cap: number): PTask[] {
  const out = head.slice(0, cap);
  for (let round = 0; out.length < cap; round++) {
    let picked = false;
    for (const g of groups) {
      if (out.length >= cap) break;
      const list = byGroup.get(g) ?? [];
      if (round >= allowance(g) || round >= list.length) continue;
      out.push(list[round] as PTask);
      picked = true;
    }
    if (!picked) break;
  }
  return out;
}

async function settle(w: PagedWalk, x: PTask, how: "complete" | "fail"): Promise<void> {
  if (how === "complete") {
    await w.t.store.complete({ taskId: x.id, workerId: x.worker, result: null });
    x.status = "ended";
    w.log.push(`complete ${x.label}`);
    return;
  }
  const row = await w.t.store.fail({ taskId: x.id, workerId: x.worker, error: { code: "paged" }, retryable: true, delayMs: 0 });
  const expected = x.attempt < 3 ? "queued" : "failed";
  if (row.status !== expected) w.fail(`fail of ${x.label} (attempt ${x.attempt}) left it ${row.status}, expected ${expected}`);
  x.status = expected === "queued" ? "queued" : "ended";
  x.runAtMs = row.run_at_ms;
  w.log.push(`fail ${x.label} -> ${row.status}`);
}

async function pagedStep(w: PagedWalk): Promise<void> {
  const { rng } = w;
  const roll = rng.next();
  if (roll < 0.25) {
    const group = rng.chance(0.08) ? null : rng.pick(w.keys);
    await w.submit(group, rng.pick([0, 0, 0, 1, 3]));
  } else if (roll < 0.55) {
    await w.claim(rng.pick([1, 1, 1, 2, 3, 5, 8, 20]));
  } else if (roll < 0.8) {
    const running = w.running_();
    if (running.length > 0) await settle(w, rng.pick(running), "complete");
  } else if (roll < 0.92) {
    const running = w.running_();
    if (running.length > 0) await settle(w, rng.pick(running), "fail");
  } else {
    const queued = w.queued();
    if (queued.length === 0) return;
    const x = rng.pick(queued);
    const row = await w.t.store.cancel(x.id);
    if (row?.status !== "canceled") w.fail(`cancel of queued ${x.label} left it ${row?.status ?? "missing"}`);
    x.status = "ended";
    w.log.push(`cancel ${x.label}`);
  }
}

/** Completes what runs, then claims until a claim takes nothing; the claims' sizes from `caps`. */
async function sweep(w: PagedWalk, caps: readonly number[]): Promise<void> {
  for (let round = 0; round < 400; round++) {
    for (const x of w.running_()) await settle(w, x, "complete");
    if ((await w.claim(w.rng.pick(caps), true)).length === 0) break;
  }
  for (const x of w.running_()) await settle(w, x, "complete");
}

/**
 * A crowd walk: 240–280 groups each spend their rate window (`max` 2, a window longer than the walk) and keep a
 * queued task, then a few reserve groups are served once after them (room for one more claim each) and get work
 * again: they stand behind every spent group in served order — more than 16 pages of them (16 groups each for a
 * claim of one) — which the page reads skip, so a claim reaches them.
 */
async function crowdWalk(w: PagedWalk): Promise<void> {
  const { rng } = w;
  const reserve = w.keys.slice(0, CROWD_RESERVE);
  const mass = w.keys.slice(CROWD_RESERVE);
  for (const g of mass) for (let i = 0; i < 3; i++) await w.submit(g, rng.pick([0, 0, 1]));
  await sweep(w, [20, 40, 64]);
  for (const g of reserve) await w.submit(g, 0);
  await sweep(w, [1, 2]);
  for (const g of reserve) await w.submit(g, 0);
  for (let i = 0; i < 6; i++) await w.claim(rng.pick([1, 1, 2, 4]));
}

async function pagedWalk(t: CaseContext, seed: number): Promise<void> {
  const w = new PagedWalk(t, seed);
  const { rng } = w;
  if (w.crowd) {
    await crowdWalk(w);
    return finish(w);
  }
  // Every group gets work (a sleeper only far-delayed work), a few a backlog; then claims fill, spend and empty groups.
  for (const g of w.keys) for (let i = rng.chance(0.2) ? rng.int(2, 4) : 1; i > 0; i--) await w.submit(g, rng.pick([0, 0, 1]));
  for (let i = rng.int(2, 5); i > 0; i--) await w.submit(null, rng.pick([0, 1]));
  const steps = 40 + Math.floor(w.keys.length / 3);
  for (let i = 0; i < steps; i++) await pagedStep(w);
  await finish(w);
}

/** The end: settle what runs and claim until nothing is taken, then every task is where the model has it. */
async function finish(w: PagedWalk): Promise<void> {
  const { t, seed } = w;
  await sweep(w, [1, 4, 16]);
  // What is left waits past the walk (sleepers), for a spent rate window, or (without a group) for the head of the
  // plain order, which older tasks of spent groups may hold: each still queued.
  for (const x of w.queued()) {
    const row = await t.store.cancel(x.id);
    if (row?.status !== "canceled") w.fail(`at the end ${x.label} was ${row?.status ?? "missing"}, the model has it queued`);
    x.status = "ended";
  }
  const rows = new Map((await t.all()).map((row) => [row.id, row]));
  for (const x of w.tasks.values()) {
    const row = rows.get(x.id);
    if (row === undefined || row.completed_at_ms === null) return w.fail(`${x.label} is ${row?.status ?? "lost"} at the end, not terminal`);
    if (row.attempt !== x.attempt) w.fail(`${x.label} ended with attempt ${row.attempt}, but the walk's claims took it ${x.attempt} times`);
  }
  if (process.env.CAIRNQ_KIT_GROUP_PAGED_REACH === "1") {
    console.log(`paged seed ${seed}${w.crowd ? " (crowd)" : ""}: ${w.keys.length} groups, ${w.claims} claims, ${w.reach.pastFirstPage} served past the first page, ${w.reach.stoppedShort} stopped short, ${w.reach.stoppedEnough} stopped with enough`);
  }
}

const needsGroups = (c: { groups?: boolean; flowControl?: boolean }): string | null =>
  c.groups === true && c.flowControl === true ? null : "groups (per-group limits and rotation in claim)";

export const groupPagedCases: readonly ConformanceCase[] = [
  {
    id: "group-paged-walk",
    title: "seeded walks over 40–300 groups of one name (full, rate-spent, sleeping and idle groups ahead of eligible ones) keep the limits, rotate over a prefix of the eligible groups in served order and stop short only at the documented page bounds",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups, docs/protocol.md Groups step 3 (pages)",
    skipUnless: needsGroups,
    async run(t) {
      for (const seed of groupPagedSeeds()) await pagedWalk(t, seed);
    },
  },
];
