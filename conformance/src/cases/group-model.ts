/**
 * A model of the groups extension's documented claim rule (`@cairnq/protocol`
 * `groups.ts`, docs/protocol.md "Groups"), kept by the randomized group case
 * (`groups-random.ts`) from what it did and what the store answered — never
 * from the store's tables — and checked after every claim.
 *
 * Terminology:
 * - **certainly due**: a queued task whose `run_at_ms` is at least
 *   {@link DUE_SLACK_MS} before the local clock read just before the claim
 *   (the store's clock is the same host's, §2.1); **certainly not due**: after
 *   the local clock read just after it, by as much. A task in between is
 *   *uncertain*: the claim may or may not have seen it due.
 * - **synced**: the model knows each group's place in the served order. A
 *   claim that leaves it unsure (an uncertain task of the name) unsyncs the
 *   name for the rest of the walk: later claims are then checked by the
 *   order-free invariants only.
 * - **event**: when a group was last served (`2c` for the walk's claim `c`)
 *   or passed without due work in a claim that gave no work (`2c + 1`: after
 *   the served ones). The served order is by event (never served or passed
 *   first), then by group key: one claim gives every group it serves the same
 *   place, as docs/protocol.md says.
 *
 * The walk keeps at most {@link MODEL_MAX_GROUPS} groups per name, so every
 * claim reads all of them in its first page (`GROUP_PAGE_MIN` is 16): the
 * page bounds of the draw never stop one of these claims short.
 */
import type { FlowControl } from "@cairnq/protocol";

/** The most groups per name the walk uses: fewer than a claim's smallest page of groups. */
export const MODEL_MAX_GROUPS = 12;
/** How many rows at the head of the plain claim order a group claim takes tasks without a group from (docs/protocol.md, step 2). */
export const MODEL_HEAD_ROWS = 8;
/** Clock difference allowed between the store's clock and this process's (same host; a little over `CLOCK_SLACK_MS`). */
export const DUE_SLACK_MS = 10;

/** A small seeded PRNG (mulberry32): the walk's every choice, so a seed replays it. */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(values: readonly T[]): T {
    return values[Math.floor(this.next() * values.length)] as T;
  }
}

/** Where the model has a task. `expired`: running with a lease the walk let run out; the next claim recovers it. */
export type ModelStatus = "queued" | "running" | "expired" | "ended";

export interface ModelTask {
  readonly id: string;
  /** `name/group#n`, for the operation log. */
  readonly label: string;
  readonly name: string;
  readonly group: string | null;
  readonly queue: string;
  readonly priority: number;
  runAtMs: number;
  status: ModelStatus;
  attempt: number;
  readonly maxAttempts: number;
}

/** What the model says of one claim, and what it checks of the store's answer. */
export interface ClaimView {
  readonly name: string;
  readonly queues: readonly string[];
  readonly cap: number;
  /** Local clock just before and just after the claim. */
  readonly beforeMs: number;
  readonly afterMs: number;
}

interface NameState {
  readonly limits: FlowControl;
  readonly events: Map<string, number>;
  readonly rateClaims: Map<string, number>;
  synced: boolean;
}

/** Higher priority first, then the older task (lower id): the order inside a group. */
function groupOrder(a: ModelTask, b: ModelTask): number {
  return b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The plain claim order (§5.10): priority, then due time, then id. */
function plainOrder(a: ModelTask, b: ModelTask): number {
  return b.priority - a.priority || a.runAtMs - b.runAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The model of one walk: its tasks, and per name the served order and the rate claims. */
export class GroupModel {
  readonly tasks = new Map<string, ModelTask>();
  readonly #names = new Map<string, NameState>();
  /** Tasks the current claim's lease recovery queued again: certainly due, after every other due task. */
  readonly #recovered = new Set<string>();
  /** Whether the current claim found a lease run out (any name): its probe then opens the claim transaction whatever is due. */
  #foundExpired = false;
  #claims = 0;

  constructor(limits: Readonly<Record<string, FlowControl>>) {
    for (const [name, l] of Object.entries(limits)) this.#names.set(name, { limits: l, events: new Map(), rateClaims: new Map(), synced: true });
  }

  #state(name: string): NameState {
    const state = this.#names.get(name);
    if (state === undefined) throw new Error(`no limits for ${name}`);
    return state;
  }

  add(task: ModelTask): void {
    this.tasks.set(task.id, task);
  }

  /** Whether the walk knows `name`'s served order (see the module comment). */
  synced(name: string): boolean {
    return this.#state(name).synced;
  }

  /** Tasks running with a lease (not let run out) of the name and group: the group running count. */
  running(name: string, group: string): number {
    let n = 0;
    for (const t of this.tasks.values()) if (t.name === name && t.group === group && t.status === "running") n += 1;
    return n;
  }

  rateClaims(name: string, group: string): number {
    return this.#state(name).rateClaims.get(group) ?? 0;
  }

  /** How many more tasks of the group a claim may take (`groupAllowance`'s rule, restated). */
  allowance(name: string, group: string): number {
    const { limits } = this.#state(name);
    let left = Number.POSITIVE_INFINITY;
    if (limits.groupConcurrency !== undefined) left = Math.min(left, limits.groupConcurrency - this.running(name, group));
    if (limits.groupRateLimit !== undefined) left = Math.min(left, limits.groupRateLimit.max - this.rateClaims(name, group));
    return Math.max(0, left);
  }

  /** The groups of `name` in served order (by event, never first, then by key). */
  servedOrder(name: string, groups: Iterable<string>): string[] {
    const { events } = this.#state(name);
    return [...groups].sort((a, b) => (events.get(a) ?? -1) - (events.get(b) ?? -1) || (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Queued tasks (of the name) whose due time the claim may or may not have seen as due. */
  uncertain(view: ClaimView): ModelTask[] {
    return [...this.tasks.values()].filter(
      (t) => t.name === view.name && t.status === "queued" && !this.#certainlyDue(t, view) && t.runAtMs <= view.afterMs + DUE_SLACK_MS,
    );
  }

  /** Tasks let run out: every claim's lease recovery (over the whole table) takes them back. */
  expired(): ModelTask[] {
    return [...this.tasks.values()].filter((t) => t.status === "expired");
  }

  /**
   * The claim's lease recovery, in the model: expired tasks with attempts left are queued again, due at
   * the claim's clock (after every task certainly due before it), the others end.
   */
  recover(beforeMs: number): ModelTask[] {
    this.#recovered.clear();
    const recovered = this.expired();
    this.#foundExpired = recovered.length > 0;
    for (const t of recovered) {
      if (t.attempt < t.maxAttempts) {
        t.status = "queued";
        t.runAtMs = beforeMs;
        this.#recovered.add(t.id);
      } else t.status = "ended";
    }
    return recovered;
  }

  #certainlyDue(t: ModelTask, view: ClaimView): boolean {
    return t.runAtMs <= view.beforeMs - DUE_SLACK_MS || this.#recovered.has(t.id);
  }

  /** Certainly due, queued tasks of the claim's name in its queues (recovered ones included). */
  due(view: ClaimView): ModelTask[] {
    return [...this.tasks.values()].filter((t) => t.name === view.name && t.status === "queued" && view.queues.includes(t.queue) && this.#certainlyDue(t, view));
  }

  /** Whether a group of the name holds a certainly due task in any queue. */
  #dueAnywhere(view: ClaimView, group: string): boolean {
    for (const t of this.tasks.values()) if (t.name === view.name && t.group === group && t.status === "queued" && this.#certainlyDue(t, view)) return true;
    return false;
  }

  /** The groups of the name holding any queued task. */
  #withQueued(name: string): Set<string> {
    const out = new Set<string>();
    for (const t of this.tasks.values()) if (t.name === name && t.group !== null && t.status === "queued") out.add(t.group);
    return out;
  }

  /**
   * The tasks without a group at the head of the plain claim order (the first {@link MODEL_HEAD_ROWS} certainly due
   * rows of the name in the claim's queues), in that order: a group claim takes them first.
   */
  head(view: ClaimView): ModelTask[] {
    return this.due(view).sort(plainOrder).slice(0, MODEL_HEAD_ROWS).filter((t) => t.group === null);
  }

  /** Each group's certainly due tasks in the claim's queues, best first. */
  dueByGroup(view: ClaimView): Map<string, ModelTask[]> {
    const byGroup = new Map<string, ModelTask[]>();
    for (const t of this.due(view)) {
      if (t.group === null) continue;
      const list = byGroup.get(t.group) ?? [];
      list.push(t);
      byGroup.set(t.group, list);
    }
    for (const list of byGroup.values()) list.sort(groupOrder);
    return byGroup;
  }

  /**
   * What a claim takes by the documented rule, when no task is uncertain and the name is synced: the head's tasks
   * without a group, then one task per eligible group per round, least recently served first, up to the cap.
   * Also the groups it serves and the groups it passes in a page that gave no work.
   */
  predict(view: ClaimView): { taken: ModelTask[]; served: string[]; passed: string[] } {
    const ungrouped = this.head(view);
    const taken = ungrouped.slice(0, view.cap);
    const byGroup = this.dueByGroup(view);
    const eligible = this.servedOrder(view.name, [...byGroup.keys()].filter((g) => this.allowance(view.name, g) > 0));
    const served: string[] = [];
    for (let round = 0; taken.length < view.cap; round++) {
      let picked = false;
      for (const g of eligible) {
        if (taken.length >= view.cap) break;
        const list = byGroup.get(g) as ModelTask[];
        if (round >= this.allowance(view.name, g) || round >= list.length) continue;
        taken.push(list[round] as ModelTask);
        if (round === 0) served.push(g);
        picked = true;
      }
      if (!picked) break;
    }
    // The claim draws when its probe finds a due task of the name in its queues or a lease run out (§5.10); then a page is
    // read unless the head's tasks without a group fill the claim, and it gives no work when no group is eligible. Then the
    // groups it passed that hold queued tasks, none due in any queue, go to the back (with room: full ones are skipped).
    const passed: string[] = [];
    const draws = this.due(view).length > 0 || this.#foundExpired;
    if (draws && ungrouped.length < view.cap && eligible.length === 0) {
      for (const g of this.#withQueued(view.name)) if (this.allowance(view.name, g) > 0 && !this.#dueAnywhere(view, g)) passed.push(g);
    }
    return { taken, served, passed };
  }

  /** Records a claim's takes: running, attempt + 1, one rate claim each; and, when synced, the served order's events. */
  took(view: ClaimView, taken: readonly ModelTask[], served: readonly string[], passed: readonly string[], keepSynced: boolean): void {
    const state = this.#state(view.name);
    const c = ++this.#claims;
    for (const t of taken) {
      t.status = "running";
      t.attempt += 1;
      if (t.group !== null) state.rateClaims.set(t.group, (state.rateClaims.get(t.group) ?? 0) + 1);
    }
    if (!keepSynced) state.synced = false;
    if (!state.synced) return;
    for (const g of served) state.events.set(g, 2 * c);
    for (const g of passed) state.events.set(g, 2 * c + 1);
  }

  /**
   * What a claim of the name without group limits takes (no task uncertain, no lease run out): the first `cap` due
   * tasks in the plain claim order, groups or not (§5.10).
   */
  predictPlain(view: ClaimView): ModelTask[] {
    return this.due(view).sort(plainOrder).slice(0, view.cap);
  }

  /** Records the takes of a claim without group limits: they run (and count against their group) but are no group claim. */
  tookPlain(taken: readonly ModelTask[]): void {
    for (const t of taken) {
      t.status = "running";
      t.attempt += 1;
    }
  }

  /** Why the model's state of `name` is as it is, for a failure message. */
  describe(name: string): string {
    const state = this.#state(name);
    const groups = new Set<string>();
    for (const t of this.tasks.values()) if (t.name === name && t.group !== null) groups.add(t.group);
    const lines = [`limits ${JSON.stringify(state.limits)}; served order ${state.synced ? "known" : "unknown"}`];
    for (const g of this.servedOrder(name, groups)) {
      const mine = [...this.tasks.values()].filter((t) => t.name === name && t.group === g);
      const queued = mine.filter((t) => t.status === "queued").map((t) => `${t.label}(p${t.priority},${t.queue},at ${t.runAtMs})`);
      lines.push(
        `  ${g}: event ${state.events.get(g) ?? "never"}, running ${this.running(name, g)}, rate ${this.rateClaims(name, g)}, queued [${queued.join(" ")}]`,
      );
    }
    const free = [...this.tasks.values()].filter((t) => t.name === name && t.group === null && t.status === "queued");
    lines.push(`  (no group): queued [${free.map((t) => `${t.label}(p${t.priority},${t.queue},at ${t.runAtMs})`).join(" ")}]`);
    return lines.join("\n");
  }
}
