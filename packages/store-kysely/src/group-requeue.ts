/**
 * The group rows of tasks that go back to `queued` after a claim took them
 * (`GROUP_REQUEUE_PATHS` in `@cairnq/protocol` `groups.ts`): marked
 * `requeued`, so the next group claim of the name puts them back in their
 * group's walk and wakes the group (`group-draw.ts`), however long the
 * group's backlog. The group running count needs none of this: it is read
 * from the running task rows.
 *
 * - lease recovery inside a group claim: {@link markRequeued} after it, by
 *   the ids recovery returned with their new status (`FlowControlStep.begin`);
 * - a retryable `fail`, a `retry` (by id, key or batch): {@link markRequeued}
 *   without a transaction, one statement after the settlement or transition committed;
 * - a park (`ctx.sleep`, `ctx.waitFor`, a join): {@link markRequeued} in the
 *   park's own transaction.
 *
 * Each only where this store knows the group tables exist (it created or
 * found them: a group claim, a grouped submit or a group read did; a
 * transaction view also asks the store it belongs to, which reads its
 * catalog once: `StoreExtensions.knows`), so a store that never used groups
 * never touches them. Through a transaction view (`withTransaction`) the
 * mark of a retry or a retryable fail runs on the caller's transaction right
 * after the transition, so it commits (or rolls back) with it: no claim sees
 * the task `queued` without its mark, and no mark without its retry. A requeue this misses
 * (a v1 peer's, a store that never used groups, a crash between a fail and
 * its mark) is put back when its task reaches the head of the plain claim
 * order, as a task a claim without group limits took is.
 */
import { GROUP_TASK_STATES, x } from "@cairnq/protocol/adapter";
import type { CompileEnv, StatementTemplate } from "./compiler.js";
import type { QueryRunner } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, GROUPS_TABLE, TASK_GROUPS_TABLE } from "./extension-tables.js";
import { TASKS_TABLE } from "./statements.js";

const TASK_IDS = x.param("taskIds", "textList");

/**
 * The row states a requeue marks: taken by a group claim (`claimed`; `done`: by an earlier store), or `queued` — a claim
 * without group limits took the task and left its row in the walk, and its group may have gone idle while it ran (no
 * queued task left), so the row alone would not bring it back. Wrapped so no index serves it: the rows are found by key,
 * never by walking the `claimed` rows (every task a group claim ever took).
 */
function taken(env: CompileEnv): string {
  const states = [GROUP_TASK_STATES.queued, GROUP_TASK_STATES.claimed, GROUP_TASK_STATES.done].map((state) => env.syntax.literal(state)).join(", ");
  return `CASE WHEN state IN (${states}) THEN 1 ELSE 0 END = 1`;
}

/** Marks the group rows of `:taskIds` whose task is `queued` now. */
const MARK_REQUEUED: StatementTemplate = {
  params: [TASK_IDS],
  clock: null,
  build: (c, env) =>
    `UPDATE ${TASK_GROUPS_TABLE} SET state = ${env.syntax.literal(GROUP_TASK_STATES.requeued)} WHERE ${env.syntax.inList("task_id", c.slot(TASK_IDS))} ` +
    `AND ${taken(env)} AND (SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = ${TASK_GROUPS_TABLE}.task_id) = ${env.syntax.literal("queued")}`,
};

/**
 * Marks the group rows of `taskIds` (their tasks went back to `queued`), when this store knows the group
 * tables exist: in the open transaction `tx`, or without one in a write of its own (after a transition
 * that committed on its own: a retryable fail, a retry).
 */
export async function markRequeued(ext: StoreExtensions, taskIds: readonly string[], tx: QueryRunner | null = null): Promise<void> {
  if (taskIds.length === 0 || !(await ext.knows(GROUP_TABLES, [TASK_GROUPS_TABLE, GROUPS_TABLE]))) return;
  if (tx === null) await ext.statements.write(MARK_REQUEUED, { taskIds });
  else await ext.exec(tx, MARK_REQUEUED, { taskIds });
}
