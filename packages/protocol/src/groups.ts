/**
 * Groups — flow control per key, an extension of protocol v1 (a v1 peer
 * sharing the database neither knows nor obeys it).
 *
 * Terminology:
 * - **group**: the submit option `group` (validated like `key`); a task of a
 *   name belongs to at most one group of that name. Tasks without a group
 *   are not rotated and no group limit applies to them.
 * - **grouped name**: a task name a claim carries `groupConcurrency` or
 *   `groupRateLimit` for (`ClaimInput.flowControl`). Only grouped names are
 *   rotated: a claim of a name without group limits draws in plain claim
 *   order (§5.10) whatever groups its tasks have.
 * - **group running**: tasks of the name and group that are `running` with a
 *   lease after the claim's own lease recovery ({@link GROUP_RUNNING}),
 *   whichever claim took them (a group-aware one, one without group limits,
 *   a v1 peer's); a settled task or a recovered lease frees the slot, and so
 *   does, for the claims of the store that issued it, a settlement still in
 *   flight of the attempt that holds the task (its handler ended:
 *   {@link countsAsGroupRunning}).
 * - **group rate window**: claims of the name and group recorded at
 *   `claimed_at_ms > now − perMs` (as the name-wide rate limit, per group).
 * - **served order**: per name, the groups ordered by when a claim last took
 *   a task of theirs (never first, then least recently), or passed them in
 *   a page that gave no work (a group holding only tasks not yet due goes to
 *   the back, so it never fills a claim's pages ahead of groups with due work).
 *
 * The rotation rule ({@link rotateGroups}): a claim of a grouped name that
 * may take `cap` rows first takes due tasks without a group that are at the
 * head of the plain claim order, then visits the groups that have due work
 * and are under both group limits in served order, taking each one's best
 * due task (priority first, then the oldest), round after round (a group's
 * second task only after every other eligible group the claim read got its
 * first), until `cap` rows or no eligible work is left. A claim reads the
 * groups in pages and stops once the groups read can fill it, so a group
 * further along in served order may wait for the next claim, where it leads:
 * it was not served, and the groups served went to the back. A group with a
 * backlog of any size therefore delays another group's next task by at most
 * one rotation. Inside
 * a group, work goes by `priority` (higher first), then by task id (oldest
 * first).
 *
 * Exactness: a store evaluates the group counts inside the claim
 * transaction, after lease recovery, under the per-name flow lock (see
 * `flow-control.ts`), so concurrent claims of the name never exceed the
 * limits together. Every worker claiming a grouped name must declare the
 * same group limits.
 */
import { InvalidArgument } from "./errors.js";
import type { RateLimit } from "./flow-control.js";
import { inRateWindow } from "./flow-control.js";
import { x } from "./expr.js";
import type { Expr } from "./expr.js";
import type { SetTransition } from "./rules.js";
import { CLAIMABLE, DRAW } from "./rules.js";
import { FLOW_NAME } from "./flow-control.js";

/** The parameter naming the task ids a group draw takes. */
export const GROUP_TASK_IDS = x.param("taskIds", "textList");

/**
 * The group draw: T2 (queued → running, the claim draw's own assignments)
 * for the task ids {@link rotateGroups} picked, each still claimable (the
 * draw's guard, checked again by the statement, so a row another claimer
 * took meanwhile is skipped).
 */
export const GROUP_DRAW: SetTransition = {
  op: "groupDraw",
  clock: DRAW.clock,
  selection: { where: x.and(x.inList(x.col("id"), GROUP_TASK_IDS), CLAIMABLE), orderBy: [], limit: null, skipLocked: false },
  branches: DRAW.branches,
};

/**
 * How many rows at the head of the plain claim order (§5.10's draw order) a
 * group draw looks at for tasks without a group, which it takes first (see
 * {@link rotateGroups}): tasks without a group wait for the plain order to
 * reach them, never for the rotation.
 */
export const GROUP_HEAD_ROWS = 8;

/**
 * Where a task's group row stands. Only `queued` rows are in the group's walk (the claim's index of a
 * group's waiting tasks); the group running count is read from the running task rows
 * ({@link GROUP_RUNNING}), never from these states, so a task that ends needs no write here.
 */
export const GROUP_TASK_STATES = Object.freeze({
  /** Waiting to be taken (or taken by a claim that ignores groups: its task row says so). */
  queued: "queued",
  /** Taken by a group-aware claim; stays so after its task ends (nothing reads it again but by its task). */
  claimed: "claimed",
  /**
   * Its task went back to `queued` after a claim took it (a retryable fail, lease recovery, a park, a
   * retry: {@link GROUP_REQUEUE_PATHS}); the next group claim of the name puts it back in its group's
   * walk and wakes the group ({@link wakeGroupTask}).
   */
  requeued: "requeued",
  /** Written by stores before the running count was read from the task rows: read as `claimed`. */
  done: "done",
} as const);

/** One of {@link GROUP_TASK_STATES}. */
export type GroupTaskState = (typeof GROUP_TASK_STATES)[keyof typeof GROUP_TASK_STATES];

/**
 * The running tasks of a grouped name (`:name`) that count against `groupConcurrency` (each joined to
 * its group row by the store): running with a lease, as the name-wide running count
 * (`RUNNING_OF_NAME`), with the name compared inside a `CASE` so that no index on `name` can serve
 * it — the read walks the partial lease index only, bounded by what runs, where Postgres otherwise
 * intersected it with a walk of the name index over every queued task of the name (0.6 ms per claim
 * at 30,000 queued).
 */
export const GROUP_RUNNING: Expr = x.and(
  x.eq(x.col("status"), x.lit("running")),
  x.notNull(x.col("lease_until_ms")),
  x.eq(x.case([{ when: x.eq(x.col("name"), FLOW_NAME), then: x.lit(1) }], x.lit(0)), x.lit(1)),
);

/**
 * Whether a task read as running (by {@link GROUP_RUNNING}) takes a group slot. `settling`: it is running
 * under the very attempt (task, attempt, worker) whose settlement the claiming store has issued and not
 * yet seen answered; its handler has ended, so it takes no slot.
 */
export function countsAsGroupRunning(settling: boolean): boolean {
  return !settling;
}

/**
 * Where a group claim puts a `requeued` row given its task's status now: back in the walk (`queued`)
 * when the task waits again, else `claimed` (it was taken again, or ended, since it was marked).
 */
export function wakeGroupTask(status: string): GroupTaskState {
  return status === "queued" ? GROUP_TASK_STATES.queued : GROUP_TASK_STATES.claimed;
}

/**
 * What a group claim does with a task of its name found among the first {@link GROUP_HEAD_ROWS} rows of the
 * plain claim order that has a group row (`state`), in a group whose `active` flag is `groupActive` (a group
 * without a row — a claim pruned it while it was idle, {@link GROUP_PRUNE_BATCH} — reads as idle: its
 * `active` is SQL NULL, which is not 1):
 * - `requeue`: its row is not in the walk (`claimed` or `requeued`: a claim without group limits, lease
 *   recovery or a v1 peer sent the task back without marking it, or it was marked) — the row goes back
 *   to `queued` and the group wakes;
 * - `wake`: the row is in the walk but its group went idle meanwhile (a task a claim without group
 *   limits took came back with no mark), or has no row — the group wakes (a wake creates a missing row);
 * - `none`: the group's walk already serves it.
 */
export function headGroupRowAction(state: string, groupActive: boolean): "requeue" | "wake" | "none" {
  if (state !== GROUP_TASK_STATES.queued) return "requeue";
  return groupActive ? "none" : "wake";
}

/**
 * How long one store instance waits between two prunes of one name's idle group rows, on the store's clock
 * ({@link groupPruneDue}). A prune is a read and a delete in a group claim's transaction: once a minute it costs
 * the claims of the name nothing measurable, and a table of idle groups shrinks by up to
 * {@link GROUP_PRUNE_BATCH} rows a minute per worker process.
 */
export const GROUP_PRUNE_INTERVAL_MS = 60_000;

/**
 * The most group rows (`cairnq_ext_groups`) of one name one prune deletes: a bound on the work and locks
 * of its read and its delete, taken inside a claim's transaction. The rule a row must meet to go — each
 * condition checked by the prune's read, under the name's flow lock (so no group claim of the name runs
 * beside it), its rows found through indexes:
 * 1. the row is idle: `active = 0`, re-checked on the row as the delete locks it. Every statement that
 *    sets `active = 1` creates the row when it is missing (a grouped submit, a group claim's wake of a
 *    requeued task or of a task at the head of the plain order: {@link headGroupRowAction}), in the same
 *    statement, and a missing row is read as an idle one everywhere, so a delete that races one of them
 *    either misses the row (it is active again) or deletes it before that statement, which then inserts
 *    it afresh as a new group (`served_seq` 0: first in the rotation);
 * 2. no group row of the group is `requeued`, nor `queued` with its task `queued` (work the group's walk
 *    would still serve: its place in the served order is kept);
 * 3. no task of the name and group is running ({@link GROUP_RUNNING}): its row keeps the
 *    `groupConcurrency` last enforced, which `explain` shows.
 *
 * Rows of tasks a group claim took (`claimed`) stay, and do not hold their group: a task among them that
 * comes back (`retry`, a v1 peer's requeue) is marked `requeued` or found at the head of the plain order,
 * and the claim that wakes its group creates the row again.
 */
export const GROUP_PRUNE_BATCH = 1_000;

/**
 * Whether a store instance that last pruned a name's idle group rows at `lastAtMs` (`undefined`: never, since
 * it opened) prunes them again at `nowMs`: on its first group claim of the name, then once
 * {@link GROUP_PRUNE_INTERVAL_MS} has passed — or the clock went back by as much, which starts the wait again.
 */
export function groupPruneDue(lastAtMs: number | undefined, nowMs: number): boolean {
  return lastAtMs === undefined || Math.abs(nowMs - lastAtMs) >= GROUP_PRUNE_INTERVAL_MS;
}

/**
 * The operations that move a task back to `queued` after a claim took it: a store with groups marks
 * the task's group row `requeued` with each — lease recovery inside a group claim by the rows it
 * returns with their new status — so the next group claim of the name finds it by its state and wakes
 * its group. A row left `queued` is marked too: a claim without group limits took its task, and its
 * group may have gone idle meanwhile (no queued task left). A v1 peer marks nothing, nor does lease
 * recovery in a claim without group limits: such a task is put back, and its group woken, when it
 * reaches the head of the plain claim order ({@link GROUP_HEAD_ROWS}).
 */
export const GROUP_REQUEUE_PATHS = Object.freeze(["fail", "recover", "park", "retry", "retryBatch"] as const);

/** The group limits of one name, validated (`null` = that limit is not set). */
export interface GroupLimits {
  readonly groupConcurrency: number | null;
  readonly groupRateLimit: RateLimit | null;
}

/**
 * How many more tasks of one group a claim may take: the smaller of
 * `groupConcurrency − running` and `groupRateLimit.max − claims in the
 * window` (each only when set), never below 0.
 */
export function groupAllowance(limits: GroupLimits, running: number, claimsInWindow: number): number {
  let allowance = Number.POSITIVE_INFINITY;
  if (limits.groupConcurrency !== null) allowance = Math.min(allowance, limits.groupConcurrency - running);
  if (limits.groupRateLimit !== null) allowance = Math.min(allowance, limits.groupRateLimit.max - claimsInWindow);
  return Math.max(0, allowance);
}

/** Group claims recorded at these instants that are in the rate window ending at `nowMs`. */
export function groupClaimsInWindow(claimedAtMs: readonly number[], nowMs: number, perMs: number): number {
  let n = 0;
  for (const at of claimedAtMs) if (inRateWindow(at, nowMs, perMs)) n += 1;
  return n;
}

/** A group's due task as the group's order ranks it ({@link compareGroupWalk}). */
export interface GroupWalkTask {
  readonly priority: number;
  readonly taskId: string;
}

/**
 * The order inside a group (see the module comment): higher `priority` first, then the older task
 * (the lower id). For a store that reads a group's best due tasks in no promised order.
 */
export function compareGroupWalk(a: GroupWalkTask, b: GroupWalkTask): number {
  return b.priority - a.priority || (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0);
}

/** One eligible group's due tasks, best first, as a claim sees them. */
export interface GroupCandidates {
  readonly group: string;
  /** Task ids of the group's due tasks, in the group's order (priority, then oldest). */
  readonly taskIds: readonly string[];
  /** {@link groupAllowance} of the group. */
  readonly allowance: number;
}

/** What {@link rotateGroups} picked. */
export interface GroupRotation {
  /** The task ids to claim, in the order they were picked. */
  readonly taskIds: readonly string[];
  /** The group of each picked id (absent for tasks without a group). */
  readonly groupOf: ReadonlyMap<string, string>;
  /** The groups served, least recently served first: a store bumps their served order in this order. */
  readonly served: readonly string[];
}

/**
 * The rotation rule (see the module comment) as a pure function.
 *
 * @param ungrouped - Due tasks without a group at the head of the plain claim order; taken first.
 * @param groups - Eligible groups in served order (least recently served first), each with its due tasks.
 * @param cap - The most rows the claim may take (the draw's limit and the name-wide allowance).
 */
export function rotateGroups(ungrouped: readonly string[], groups: readonly GroupCandidates[], cap: number): GroupRotation {
  if (!Number.isInteger(cap) || cap < 0) throw new InvalidArgument("cap", `rotateGroups needs an integer cap ≥ 0, got ${String(cap)}`);
  const taskIds: string[] = ungrouped.slice(0, cap);
  const groupOf = new Map<string, string>();
  const lastPick = new Map<string, number>();
  for (let round = 0; taskIds.length < cap; round++) {
    let picked = false;
    for (const g of groups) {
      if (taskIds.length >= cap) break;
      if (round >= g.allowance || round >= g.taskIds.length) continue;
      const id = g.taskIds[round] as string;
      taskIds.push(id);
      groupOf.set(id, g.group);
      lastPick.set(g.group, taskIds.length);
      picked = true;
    }
    if (!picked) break;
  }
  const served = [...lastPick.entries()].sort((a, b) => a[1] - b[1]).map(([group]) => group);
  return { taskIds, groupOf, served };
}

/**
 * How many of one group's best due tasks a claim must read for {@link rotateGroups} to pick from that group as if it
 * had read them all: at least 1, at most `mostPerGroup` (the smaller of the group limits), and at most
 * `cap − ungrouped − groupsBefore`. The group's `c`-th task is picked in round `c − 1`, after the `ungrouped` tasks
 * without a group and round 0 of every eligible group — the `groupsBefore` read ahead of it and itself — and its own
 * `c − 1` earlier tasks, so `ungrouped + groupsBefore + c ≤ cap`. Counting the tasks of the groups ahead instead
 * (what they could give) read too few of a group reached late: it then lacked its second task in round 1, and an
 * earlier group's third went first (`group-rotation-across-pages`).
 *
 * @param cap - The most rows the claim may take (as for {@link rotateGroups}).
 * @param ungrouped - Tasks without a group the claim takes first.
 * @param groupsBefore - Eligible groups (due work and room) read ahead of this one, in served order.
 * @param mostPerGroup - The smaller of `groupConcurrency` and `groupRateLimit.max` (either may be unset: `Infinity`).
 */
export function groupReadDepth(cap: number, ungrouped: number, groupsBefore: number, mostPerGroup: number): number {
  return Math.max(1, Math.min(mostPerGroup, cap - ungrouped - groupsBefore));
}

/** What a store can tell about a task's group (`GroupReadStore.taskGroup`). */
export interface TaskGroupInfo {
  /** The task's group. */
  readonly group: string;
  /** Tasks of the name and group running now (with a lease), whichever claim took them. */
  readonly running: number;
  /** Tasks of the name and group queued now. */
  readonly queued: number;
  /** The `groupConcurrency` the last group-aware claim of the group enforced, or `null` when none did. */
  readonly groupConcurrency: number | null;
}

/** Queued and running tasks of one group of a name (`GroupReadStore.groupStats`). */
export interface GroupCounts {
  readonly group: string;
  readonly queued: number;
  readonly running: number;
}

/**
 * The reads a store with `capabilities.groups` offers to show groups:
 * `explain` ("group acme: 2 of 2 running"), `cairnq stats --by-group` and
 * the dashboard.
 */
export interface GroupReadStore {
  /** The group of task `taskId` and its counts, or `null` when the task has no group (or does not exist). */
  taskGroup(taskId: string): Promise<TaskGroupInfo | null>;
  /** Queued and running tasks of `name` per group, the groups with most queued first, at most `limit` groups. @default limit 100 */
  groupStats(name: string, options?: { readonly limit?: number }): Promise<GroupCounts[]>;
}

/** Whether `store` offers the group reads (declares `capabilities.groups` and has both methods). */
export function hasGroupReads(store: { readonly capabilities: { readonly groups?: boolean } }): store is typeof store & GroupReadStore {
  const s = store as Partial<GroupReadStore> & { readonly capabilities: { readonly groups?: boolean } };
  return s.capabilities.groups === true && typeof s.taskGroup === "function" && typeof s.groupStats === "function";
}

/** Orders group counts as `groupStats` returns them: most queued first, then most running, then by group. */
export function sortGroupCounts(counts: readonly GroupCounts[], limit: number): GroupCounts[] {
  return [...counts].sort((a, b) => b.queued - a.queued || b.running - a.running || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0)).slice(0, limit);
}
