/**
 * Groups, randomized: a seeded walk of submits, group claims, claims without
 * group limits, settlements, cancels, retries, delayed tasks and lease expiry
 * over one or two grouped names, each claim
 * checked against a model of what is queued and running per group
 * (`group-model.ts`) by the rules of `@cairnq/protocol` `groups.ts`. Run only
 * for stores declaring `groups`.
 *
 * The seeds are {@link GROUP_WALK_SEEDS}; `CAIRNQ_KIT_GROUP_SEEDS` picks
 * others for local exploration (`7,12,40` or a range `1-500`). A failure
 * names its seed and prints the walk's operation log and the model's state,
 * so setting the variable to that seed replays it (the walk's choices depend
 * only on the seed and on what the store answers).
 */
import type { FlowControl, Task } from "@cairnq/protocol";
import type { CaseContext, ConformanceCase } from "../case.js";
import { ConformanceFailure, EXPIRY_WAIT_MS, SHORT_LEASE_MS } from "../case.js";
import type { ClaimView, ModelTask } from "./group-model.js";
import { DUE_SLACK_MS, GroupModel, MODEL_MAX_GROUPS, Rng } from "./group-model.js";
import { seedList } from "./seeds.js";

/**
 * The seeds the kit runs (about 1.5 s in all on SQLite): each walk found a bug before it was fixed — a group served
 * after one that went idle took its place in the served order (41; also 63 and 86), a task a claim without group
 * limits took came back into an idle group that nothing woke (18 and 115; also 48). Three, not all six, so the kit stays
 * within the fast tier's minute on every store it runs on; the hand-written cases `group-served-order-after-idle`,
 * `group-plain-fail-back-in-group` and `group-plain-recovered-back-in-group` pin both bugs, and
 * `CAIRNQ_KIT_GROUP_SEEDS=1-500` searches wider.
 */
export const GROUP_WALK_SEEDS: readonly number[] = [18, 41, 115];
/** Operations per walk, before the final drain. */
const WALK_STEPS = 90;
/** The lease of the walk's ordinary claims: longer than any walk, so only the walk's own expiry lets one run out. */
const WALK_LEASE_MS = 120_000;
/** A delay no walk outlives. */
const FAR_MS = 3_600_000;
/** A claim whose clock reading would fall this close to a task's due time waits until the task is surely due. */
const DUE_MARGIN_MS = 40;

const needsGroups = (c: { groups?: boolean; flowControl?: boolean }): string | null =>
  c.groups === true && c.flowControl === true ? null : "groups (per-group limits and rotation in claim)";

/** The seeds to run: `CAIRNQ_KIT_GROUP_SEEDS` (`1,2,3` or `1-200`) when set, else {@link GROUP_WALK_SEEDS}. */
export function groupWalkSeeds(spec: string | undefined = process.env.CAIRNQ_KIT_GROUP_SEEDS): number[] {
  return seedList(spec, "CAIRNQ_KIT_GROUP_SEEDS", GROUP_WALK_SEEDS);
}

/** One walk: its seed, store, model, workers and log. */
class Walk {
  readonly rng: Rng;
  readonly model: GroupModel;
  readonly log: string[] = [];
  readonly limits: Record<string, FlowControl> = {};
  readonly groups: Record<string, string[]> = {};
  readonly names: string[];
  readonly queues: string[];
  readonly workers: string[];
  /** Tasks the walk failed or canceled: a retry (T14) may queue them again. */
  readonly retryable = new Set<ModelTask>();
  /** Lease expiries the walk may still spend (each costs EXPIRY_WAIT_MS). */
  expiries: number;
  #labels = 0;

  constructor(
    readonly t: CaseContext,
    readonly seed: number,
  ) {
    this.rng = new Rng(seed);
    const rng = this.rng;
    this.names = rng.chance(0.4) ? [`r${seed}g`, `r${seed}h`] : [`r${seed}g`];
    this.queues = rng.chance(0.4) ? ["default", "other"] : ["default"];
    this.workers = [t.w1, t.w2, t.w3];
    this.expiries = rng.chance(0.3) ? 1 : 0;
    for (const name of this.names) {
      const concurrency = rng.chance(0.65) ? rng.int(1, 6) : undefined;
      const rate = concurrency === undefined || rng.chance(0.3) ? { max: rng.int(2, 8), perMs: FAR_MS } : undefined;
      this.limits[name] = { ...(concurrency === undefined ? {} : { groupConcurrency: concurrency }), ...(rate === undefined ? {} : { groupRateLimit: rate }) };
      const keys = new Set<string>();
      const count = rng.chance(0.6) ? rng.int(2, 4) : rng.int(1, MODEL_MAX_GROUPS);
      while (keys.size < count) keys.add(`k${String(rng.int(0, 99)).padStart(2, "0")}`);
      this.groups[name] = [...keys];
    }
    this.model = new GroupModel(this.limits);
    this.log.push(`seed ${seed}: names ${this.names.join(",")}, queues ${this.queues.join(",")}, limits ${JSON.stringify(this.limits)}`);
  }

  fail(message: string, name: string | null = null): never {
    const state = (name === null ? this.names : [name]).map((n) => `${n}:\n${this.model.describe(n)}`).join("\n");
    throw new ConformanceFailure(
      `group walk seed ${this.seed} (replay: CAIRNQ_KIT_GROUP_SEEDS=${this.seed}): ${message}\n--- model\n${state}\n--- log\n${this.log.join("\n")}`,
    );
  }

  labels(tasks: readonly ModelTask[]): string {
    return `[${tasks.map((task) => task.label).join(" ")}]`;
  }

  tasksOf(status: ModelTask["status"]): ModelTask[] {
    return [...this.model.tasks.values()].filter((task) => task.status === status);
  }

  async submit(name: string, group: string | null, priority: number, delayMs: number, queue: string): Promise<ModelTask> {
    const row = await this.t.submit(name, {
      queue,
      priority,
      maxAttempts: 3,
      payload: { group: group ?? "-" },
      ...(group === null ? {} : { group }),
      ...(delayMs > 0 ? { runAtDelayMs: delayMs } : {}),
    });
    const label = `${name}/${group ?? "-"}#${++this.#labels}`;
    const task: ModelTask = { id: row.id, label, name, group, queue, priority, runAtMs: row.run_at_ms, status: "queued", attempt: 0, maxAttempts: 3 };
    this.model.add(task);
    this.log.push(`submit ${label} p${priority} ${queue}${delayMs > 0 ? ` +${delayMs}ms` : ""}`);
    return task;
  }

  /** Waits until no queued task of `name` is due within the margin of now, so the claim sees each surely due or surely not. */
  async settleClock(name: string): Promise<void> {
    for (;;) {
      const now = Date.now();
      let until = 0;
      for (const task of this.model.tasks.values()) {
        if (task.name !== name || task.status !== "queued") continue;
        if (task.runAtMs > now - 2 * DUE_SLACK_MS && task.runAtMs <= now + DUE_MARGIN_MS) until = Math.max(until, task.runAtMs + 2 * DUE_SLACK_MS + 1);
      }
      if (until === 0) return;
      await this.t.sleep(until - now);
    }
  }

  /** A claim of `name`, checked against the model (see {@link checkClaim}); the rows it took. */
  async claim(name: string, queues: readonly string[], cap: number, workerId: string, leaseMs = WALK_LEASE_MS): Promise<Task[]> {
    await this.settleClock(name);
    const beforeMs = Date.now();
    const rows = await this.t.claim(workerId, { names: [name], queues, limit: cap, leaseMs, flowControl: { [name]: this.limits[name] as FlowControl } });
    const afterMs = Date.now();
    const view: ClaimView = { name, queues, cap, beforeMs, afterMs };
    const recovered = this.model.recover(beforeMs);
    const taken = rows.map((row) => this.model.tasks.get(row.id));
    this.log.push(
      `claim ${name} [${queues.join(",")}] limit ${cap} by w${this.workers.indexOf(workerId) + 1}${leaseMs === WALK_LEASE_MS ? "" : ` lease ${leaseMs}ms`}` +
        `${recovered.length > 0 ? ` (recovers ${this.labels(recovered)})` : ""} -> ${this.labels(taken.filter((task) => task !== undefined))}`,
    );
    checkClaim(this, view, rows);
    // Recovered tasks not taken again: their due time (the recovery's clock) and status as the store has them.
    for (const task of recovered) {
      if (task.status !== "queued") continue;
      const row = await this.t.get(task.id);
      task.runAtMs = row.run_at_ms;
      if (row.status !== "queued") this.fail(`lease recovery left ${task.label} ${row.status}, expected queued (attempt ${task.attempt} of ${task.maxAttempts})`);
    }
    return rows;
  }
}

/**
 * A claim of the name without group limits (as a worker that does not declare them makes): it takes in plain claim
 * order, and what it takes counts against its group while it runs. Only while no lease has run out: its lease recovery
 * would leave recovered tasks out of their groups' walk until they reach the head of the plain order, which the model
 * does not follow.
 */
async function plainClaim(w: Walk, name: string, queues: readonly string[], cap: number, workerId: string): Promise<void> {
  await w.settleClock(name);
  const beforeMs = Date.now();
  const rows = await w.t.claim(workerId, { names: [name], queues, limit: cap, leaseMs: WALK_LEASE_MS });
  const view: ClaimView = { name, queues, cap, beforeMs, afterMs: Date.now() };
  w.model.recover(beforeMs);
  const taken = rows.map((row) => w.model.tasks.get(row.id));
  w.log.push(`plain claim ${name} [${queues.join(",")}] limit ${cap} -> ${w.labels(taken.filter((task) => task !== undefined))}`);
  const got: ModelTask[] = [];
  for (const [i, task] of taken.entries()) {
    if (task?.status !== "queued" || task.name !== name || !queues.includes(task.queue)) return w.fail(`the plain claim took ${rows[i]?.id ?? "?"}, not a queued task of ${name} in its queues`, name);
    if (task.runAtMs > view.afterMs + DUE_SLACK_MS) w.fail(`the plain claim took ${task.label}, not due`, name);
    got.push(task);
  }
  if (w.model.uncertain(view).length === 0) {
    const want = w.model.predictPlain(view);
    if (w.labels([...want].sort(byLabel)) !== w.labels([...got].sort(byLabel))) w.fail(`the plain claim took ${w.labels(got)}, the plain order gives ${w.labels(want)}`, name);
  }
  w.model.tookPlain(got);
}

function byLabel(a: ModelTask, b: ModelTask): number {
  return a.label < b.label ? -1 : a.label > b.label ? 1 : 0;
}

/** The groups the claim may take from: certainly due work in its queues and room under both limits, with how much each can give. */
function eligibleGroups(w: Walk, view: ClaimView): Map<string, { tasks: ModelTask[]; capacity: number }> {
  const out = new Map<string, { tasks: ModelTask[]; capacity: number }>();
  for (const [group, tasks] of w.model.dueByGroup(view)) {
    const allowance = w.model.allowance(view.name, group);
    if (allowance > 0) out.set(group, { tasks, capacity: Math.min(allowance, tasks.length) });
  }
  return out;
}

/**
 * The invariants of one claim, over the model before it (recovery applied), then the model updated:
 * 1. each row was queued, of the name, in the claim's queues, due, taken with attempt + 1; no group gets more than
 *    its room under `groupConcurrency` and `groupRateLimit`;
 * 2. liveness: a claim that took fewer rows than its limit left no eligible group with due work it had room for,
 *    nor a task without a group at the head of the plain order;
 * 3. inside a group, the claim took the group's best due tasks (priority, then the oldest);
 * 4. one task per group per round: no group's k-th before every eligible group's (k−1)-th; and, where the model
 *    knows the served order, exactly the tasks the rule picks (least recently served first);
 * then the taken tasks run, and the served order moves.
 */
function checkClaim(w: Walk, view: ClaimView, rows: readonly Task[]): void {
  const { model } = w;
  const name = view.name;
  const uncertain = model.uncertain(view);
  const certain = uncertain.length === 0;
  const eligible = eligibleGroups(w, view);
  const taken: ModelTask[] = [];
  const seen = new Set<string>();
  if (rows.length > view.cap) w.fail(`the claim took ${rows.length} rows, above its limit ${view.cap}`, name);
  for (const row of rows) {
    const task = model.tasks.get(row.id);
    if (task === undefined) return w.fail(`the claim took ${row.id}, which the walk never submitted`, name);
    if (seen.has(row.id)) w.fail(`the claim returned ${task.label} twice`, name);
    seen.add(row.id);
    if (task.status !== "queued") w.fail(`the claim took ${task.label}, which was ${task.status}, not queued`, name);
    if (task.name !== name || !view.queues.includes(task.queue)) w.fail(`the claim took ${task.label} of another name or queue`, name);
    if (task.runAtMs > view.afterMs + DUE_SLACK_MS) w.fail(`the claim took ${task.label}, due at ${task.runAtMs}, after the claim ended (${view.afterMs})`, name);
    if (row.status !== "running" || row.attempt !== task.attempt + 1) w.fail(`${task.label} came back ${row.status} with attempt ${row.attempt}, expected running with ${task.attempt + 1}`, name);
    taken.push(task);
  }
  const takenOf = new Map<string, ModelTask[]>();
  for (const task of taken) if (task.group !== null) takenOf.set(task.group, [...(takenOf.get(task.group) ?? []), task]);
  // 1. The limits.
  for (const [group, mine] of takenOf) {
    const room = model.allowance(name, group);
    if (mine.length > room) {
      w.fail(`the claim took ${mine.length} of group ${group} (${w.labels(mine)}), which had room for ${room} (running ${model.running(name, group)}, rate ${model.rateClaims(name, group)})`, name);
    }
  }
  // 3. Inside a group, the best due tasks first: every certainly due task left behind ranks after every one taken.
  for (const [group, mine] of takenOf) {
    const left = (eligible.get(group)?.tasks ?? []).filter((task) => !seen.has(task.id));
    for (const l of left) {
      for (const m of mine) {
        if (l.priority > m.priority || (l.priority === m.priority && l.id < m.id)) w.fail(`in group ${group} the claim took ${m.label} (p${m.priority}) and left ${l.label} (p${l.priority}), which goes first`, name);
      }
    }
  }
  // 4. Round by round: a group's k-th task only once every eligible group with room for k−1 got k−1.
  for (const [group, mine] of takenOf) {
    for (const [other, { capacity }] of eligible) {
      const got = takenOf.get(other)?.length ?? 0;
      if (got < Math.min(mine.length - 1, capacity)) w.fail(`the claim took ${mine.length} of group ${group} but ${got} of group ${other}, which had ${capacity} due with room`, name);
    }
  }
  // 2. Liveness: short of the limit, nothing takeable is left.
  if (rows.length < view.cap) {
    for (const [group, { capacity, tasks }] of eligible) {
      const got = takenOf.get(group)?.length ?? 0;
      if (got < capacity) w.fail(`the claim took ${rows.length} of ${view.cap} but left group ${group} with due work ${w.labels(tasks.filter((t) => !seen.has(t.id)))} and room for ${capacity - got}`, name);
    }
    if (certain) {
      const left = model.head(view).filter((task) => !seen.has(task.id));
      if (left.length > 0) w.fail(`the claim took ${rows.length} of ${view.cap} but left ${w.labels(left)}, without a group, at the head of the plain order`, name);
    }
  }
  // 4. Exactly what the rule picks, where the model knows the served order.
  let passed: string[] = [];
  if (certain && model.synced(name)) {
    const predicted = model.predict(view);
    const want = predicted.taken.map((task) => task.label).sort();
    const got = taken.map((task) => task.label).sort();
    if (want.join(" ") !== got.join(" ")) w.fail(`the claim took [${got.join(" ")}], the rule picks [${want.join(" ")}]`, name);
    passed = predicted.passed;
  }
  // A claim that served a group read a page that gave work: it passed no group, so the served order stays known.
  model.took(view, taken, [...takenOf.keys()], passed, certain || takenOf.size > 0);
}

/** One step of the walk, chosen by the seed. */
async function step(w: Walk): Promise<void> {
  const { rng, t } = w;
  const name = rng.pick(w.names);
  const groups = w.groups[name] as string[];
  const running = w.tasksOf("running");
  const roll = rng.next();
  if (roll < 0.26) {
    // One task: mostly grouped, due now; some never due during the walk, some due in a moment.
    const group = rng.chance(0.15) ? null : rng.pick(groups);
    const delay = rng.chance(0.8) ? 0 : rng.chance(0.5) ? FAR_MS : rng.int(50, 200);
    await w.submit(name, group, rng.pick([0, 0, 0, 1, 3]), delay, rng.pick(w.queues));
  } else if (roll < 0.31) {
    // A backlog for one group.
    const group = rng.pick(groups);
    const queue = rng.pick(w.queues);
    for (let i = rng.int(3, 8); i > 0; i--) await w.submit(name, group, rng.pick([0, 0, 1]), 0, queue);
  } else if (roll < 0.62) {
    const queues = w.queues.length === 1 ? w.queues : rng.pick([["default"], ["other"], w.queues]);
    const cap = rng.pick([1, 1, 2, 3, 5, 8, 16]);
    const workerId = rng.pick(w.workers);
    if (rng.chance(0.06) && w.model.expired().length === 0) await plainClaim(w, name, queues, Math.min(cap, 3), workerId);
    else await w.claim(name, queues, cap, workerId);
  } else if (roll < 0.78) {
    if (running.length === 0) return;
    const task = rng.pick(running);
    await t.store.complete({ taskId: task.id, workerId: await ownerOf(w, task), result: null });
    task.status = "ended";
    w.log.push(`complete ${task.label}`);
  } else if (roll < 0.87) {
    if (running.length === 0) return;
    const task = rng.pick(running);
    const retryable = rng.chance(0.8);
    const delayMs = rng.chance(0.8) ? 0 : FAR_MS;
    const row = await t.store.fail({ taskId: task.id, workerId: await ownerOf(w, task), error: { code: "walk" }, retryable, delayMs });
    const expected = retryable && task.attempt < task.maxAttempts ? "queued" : "failed";
    if (row.status !== expected) w.fail(`fail of ${task.label} (attempt ${task.attempt}, retryable ${retryable}) left it ${row.status}, expected ${expected}`);
    task.status = expected === "queued" ? "queued" : "ended";
    if (task.status === "ended") w.retryable.add(task);
    task.runAtMs = row.run_at_ms;
    w.log.push(`fail ${task.label} ${retryable ? `retryable +${delayMs}ms` : "final"} -> ${row.status}`);
  } else if (roll < 0.92) {
    const queued = w.tasksOf("queued");
    if (queued.length === 0) return;
    const task = rng.pick(queued);
    const row = await t.store.cancel(task.id);
    if (row?.status !== "canceled") w.fail(`cancel of queued ${task.label} left it ${row?.status ?? "missing"}`);
    task.status = "ended";
    w.retryable.add(task);
    w.log.push(`cancel ${task.label}`);
  } else if (roll < 0.935) {
    // A retry (T14) of a failed or canceled task: queued again, due now.
    if (w.retryable.size === 0) return;
    const task = rng.pick([...w.retryable]);
    const resetAttempt = rng.chance(0.5);
    const row = await t.store.retry(task.id, { resetAttempt });
    if (row?.status !== "queued") w.fail(`retry of ${task.label} left it ${row?.status ?? "missing"}`);
    w.retryable.delete(task);
    task.status = "queued";
    task.runAtMs = row.run_at_ms;
    task.attempt = row.attempt;
    w.log.push(`retry ${task.label}${resetAttempt ? " (attempt reset)" : ""}`);
  } else if (roll < 0.95) {
    const ms = rng.int(20, 80);
    await t.sleep(ms);
    w.log.push(`sleep ${ms}ms`);
  } else if (w.expiries > 0) {
    // A claim whose leases run out: the next claim's lease recovery queues its tasks again (or fails them).
    w.expiries -= 1;
    const rows = await w.claim(name, w.queues, rng.pick([1, 2, 3]), rng.pick(w.workers), SHORT_LEASE_MS);
    if (rows.length === 0) return;
    await t.sleep(EXPIRY_WAIT_MS);
    for (const row of rows) (w.model.tasks.get(row.id) as ModelTask).status = "expired";
    w.log.push(`sleep ${EXPIRY_WAIT_MS}ms: leases of ${rows.length} run out`);
  }
}

/** The worker the store says holds `task` (the walk's claims spread tasks over three). */
async function ownerOf(w: Walk, task: ModelTask): Promise<string> {
  const row = await w.t.get(task.id);
  if (row.status !== "running" || row.worker_id === null) return w.fail(`${task.label} is ${row.status}, the model has it running`);
  return row.worker_id;
}

/** The end of a walk: everything due drained, the rest canceled, and every task where the model has it. */
async function drain(w: Walk): Promise<void> {
  const { t } = w;
  const latest = Math.max(0, ...w.tasksOf("queued").filter((task) => task.runAtMs < Date.now() + FAR_MS / 2).map((task) => task.runAtMs));
  if (latest > Date.now()) await t.sleep(latest - Date.now() + 2 * DUE_SLACK_MS);
  for (const name of w.names) {
    for (let round = 0; round < 200; round++) {
      for (const task of w.tasksOf("running")) {
        await t.store.complete({ taskId: task.id, workerId: await ownerOf(w, task), result: null });
        task.status = "ended";
      }
      const rows = await w.claim(name, w.queues, 16, w.t.w1);
      if (rows.length === 0) break;
    }
  }
  for (const task of w.tasksOf("running")) {
    await t.store.complete({ taskId: task.id, workerId: await ownerOf(w, task), result: null });
    task.status = "ended";
  }
  // What is left waits for a delay or a group's rate window: canceled, each still queued.
  for (const task of w.tasksOf("queued")) {
    const row = await t.store.cancel(task.id);
    if (row?.status !== "canceled") w.fail(`at the end, ${task.label} was ${row?.status ?? "missing"}, the model has it queued`);
    task.status = "ended";
  }
  const rows = new Map((await t.all()).map((row) => [row.id, row]));
  for (const task of w.model.tasks.values()) {
    const row = rows.get(task.id);
    if (row === undefined) w.fail(`${task.label} is lost: the store no longer has it`);
    if (row.completed_at_ms === null) w.fail(`${task.label} is ${row.status} at the end, not terminal`);
    if (row.attempt !== task.attempt) w.fail(`${task.label} ended with attempt ${row.attempt}, but the walk's claims took it ${task.attempt} times`);
  }
}

export const groupRandomCases: readonly ConformanceCase[] = [
  {
    id: "group-random-walk",
    title: "seeded random walks over grouped names (submits, claims, settlements, cancels, retries, delays, lease expiry) keep the group limits, the rotation and liveness after every claim",
    spec: "store.ts ClaimInput.flowControl, groups.ts rotateGroups, docs/protocol.md Groups",
    skipUnless: needsGroups,
    async run(t) {
      for (const seed of groupWalkSeeds()) {
        const w = new Walk(t, seed);
        for (let i = 0; i < WALK_STEPS; i++) await step(w);
        await drain(w);
      }
    },
  },
];
