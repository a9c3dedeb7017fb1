/**
 * The prune of idle group rows (`cairnq_ext_groups`; `group-prune.ts` in
 * `@cairnq/store-kysely`, the rule `GROUP_PRUNE_BATCH` in `@cairnq/protocol`)
 * on a real store: a group claim deletes the name's idle rows once the
 * store's clock has moved past the interval, keeps the rows of a group with a
 * running task and of a group with a waiting task, and a task of a pruned
 * group that is retried is claimed again with `groupConcurrency` honoured (the
 * claim's wake recreates the row). Shared by the integration tests of
 * store-sqlite, store-postgres and store-mysql, which read the rows raw.
 */
import type { ClaimInput, Task, TaskStore } from "@cairnq/protocol";
import { GROUP_PRUNE_INTERVAL_MS, newWorkerId } from "@cairnq/protocol/adapter";

/** The task name the scenario uses. */
export const PRUNE_NAME = "pruned";
/** How many groups of one task each the scenario drains (under `GROUP_PRUNE_BATCH`: one prune deletes them all). */
export const IDLE_GROUPS = 200;

/** A row of `cairnq_ext_groups` as the test reads it raw. */
export interface GroupRow {
  readonly group: string;
  readonly active: number;
}

/** What the scenario needs of the store under test beyond its API. */
export interface GroupPruneHooks {
  /** The rows of `cairnq_ext_groups` of `name`, read raw (not through the store). */
  groupRows(name: string): Promise<GroupRow[]>;
  /** Moves the clock the store reads for the prune interval on by `ms` (leases of the scenario's claims outlast it). */
  advance(ms: number): void;
}

/** What the scenario saw. */
export interface GroupPruneReport {
  /** The name's group rows after a group claim inside the interval (nothing pruned yet), by group. */
  readonly before: Readonly<Record<string, number>>;
  /** The name's group rows after the group claim once the clock passed the interval, by group (value: `active`). */
  readonly after: Readonly<Record<string, number>>;
  /** How many tasks of the retried group (`failed`, `groupConcurrency` 2) each claim after the retries took. */
  readonly retried: readonly number[];
  /** The retried group's row after its first claim: recreated, active or not. */
  readonly recreated: boolean;
}

/**
 * What every store's report must read, through {@link prunedSummary}: the name's idle groups and the four held or
 * retried ones before the prune, none of them waiting; after it only the held ones (busy one active); the retried
 * group's tasks taken two, none, then one under `groupConcurrency` 2; and its row recreated.
 */
export const GROUP_PRUNE_EXPECTED = {
  groupsBefore: IDLE_GROUPS + 4,
  waitingBefore: 0,
  after: { busy: 1, running: 0, waiting: 0 },
  retried: [2, 0, 1],
  recreated: true,
} as const;

/** The parts of `report` {@link GROUP_PRUNE_EXPECTED} pins, shaped as it is. */
export function prunedSummary(report: GroupPruneReport): Record<keyof typeof GROUP_PRUNE_EXPECTED, unknown> {
  return { groupsBefore: Object.keys(report.before).length, waitingBefore: report.before.waiting, after: report.after, retried: report.retried, recreated: report.recreated };
}

const LIMITS = { groupConcurrency: 2 };
/** Leases that outlast the clock moves of the scenario (SQLite's leases read the moved clock). */
const LONG_LEASE_MS = 10 * GROUP_PRUNE_INTERVAL_MS;
/**
 * The plain claim's lease: it must outlast the twelve submits and the group claim after it (on a loaded machine
 * those took more than 150 ms, the lease ran out early and that group claim's recovery woke the group) and then run out.
 */
const SHORT_LEASE_MS = 1_500;

const groupOf = (task: Task): string => (task.payload as { group: string }).group;

/**
 * Runs the scenario on `store` (fresh, empty; its clock moved by `hooks.advance`); the caller asserts the report.
 *
 * @example
 * const report = await runGroupPrune(store, { groupRows, advance: (ms) => (offset += ms) });
 * expect(prunedSummary(report)).toEqual(GROUP_PRUNE_EXPECTED);
 */
export async function runGroupPrune(store: TaskStore, hooks: GroupPruneHooks): Promise<GroupPruneReport> {
  const workerId = newWorkerId();
  const claim = (extra: Partial<ClaimInput>): Promise<Task[]> => store.claim({ queues: ["default"], names: [PRUNE_NAME], leaseMs: LONG_LEASE_MS, workerId, ...extra });
  const grouped = (limit: number): Promise<Task[]> => claim({ limit, flowControl: { [PRUNE_NAME]: LIMITS } });
  const submit = (group: string, priority = 0): Promise<Task> => store.submit({ name: PRUNE_NAME, group, priority, payload: { group } });
  const rows = async (): Promise<Record<string, number>> => Object.fromEntries((await hooks.groupRows(PRUNE_NAME)).map((row) => [row.group, Number(row.active)]));

  // Groups of one task each, a group whose three tasks fail for good, and one whose task keeps running; drained by group claims.
  for (let i = 0; i < IDLE_GROUPS; i++) await submit(`idle-${String(i).padStart(3, "0")}`);
  const failed: Task[] = [];
  for (let i = 0; i < 3; i++) failed.push(await submit("failed"));
  await submit("running");
  for (;;) {
    const taken = await grouped(64);
    if (taken.length === 0) break;
    for (const task of taken) {
      if (groupOf(task) === "failed") await store.fail({ taskId: task.id, workerId, error: { code: "final" }, retryable: false });
      else if (groupOf(task) !== "running") await store.complete({ taskId: task.id, workerId, result: null });
    }
  }
  // A task a claim without group limits takes; its group goes idle while it runs (a group claim finds no queued task in it)
  // and it comes back with no mark (its lease runs out and a claim of another name recovers it): a waiting task in an idle group,
  // behind more than the head's rows of the plain order (the busy group's tasks), so no group claim wakes its group.
  const waiting = await submit("waiting");
  const [plain] = await claim({ limit: 1, leaseMs: SHORT_LEASE_MS });
  const claimedAt = Date.now();
  if (plain?.id !== waiting.id) throw new Error(`the claim without group limits took ${plain?.id ?? "nothing"}, not the waiting task`);
  for (let i = 0; i < 12; i++) await submit("busy", 5);
  const first = await grouped(1);
  const early = Date.now() - claimedAt;
  if (early >= SHORT_LEASE_MS) throw new Error(`the scenario needs the plain claim's ${SHORT_LEASE_MS} ms lease to outlast 12 submits and a claim; they took ${early} ms`);
  await new Promise((resolve) => setTimeout(resolve, SHORT_LEASE_MS - early + 200));
  await store.submit({ name: "other" });
  await store.claim({ queues: ["default"], names: ["other"], limit: 1, leaseMs: LONG_LEASE_MS, workerId });

  // Inside the interval since the drain's first claim pruned (nothing then): a group claim deletes nothing.
  await grouped(1);
  const before = await rows();
  // Past it: the next group claim prunes.
  hooks.advance(GROUP_PRUNE_INTERVAL_MS + 1_000);
  await store.complete({ taskId: (first[0] as Task).id, workerId, result: null });
  await grouped(1);
  const after = await rows();

  // The failed tasks of a pruned group come back: claimed again in their group, two at a time.
  for (const task of failed) await store.retry(task.id);
  const retried: number[] = [];
  const countFailed = (taken: readonly Task[]): number => taken.filter((task) => groupOf(task) === "failed").length;
  const again = await grouped(10);
  retried.push(countFailed(again));
  const recreated = "failed" in (await rows());
  retried.push(countFailed(await grouped(10)));
  const done = again.find((task) => groupOf(task) === "failed");
  if (done !== undefined) await store.complete({ taskId: done.id, workerId, result: null });
  retried.push(countFailed(await grouped(10)));
  return { before, after, retried, recreated };
}
