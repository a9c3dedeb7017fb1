/**
 * The group rows of tasks that go back to `queued` after a claim took them
 * (`GROUP_REQUEUE_PATHS` in `@cairnq/protocol` `groups.ts`): marked
 * `requeued`, so the next group claim of the name puts them back in their
 * group's walk and wakes the group (`group-draw.ts`), however long the
 * group's backlog. The group running count needs none of this: it is read
 * from the running task rows.
 *
 * - lease recovery inside a group claim: {@link recoverRequeuesQuery}, the
 *   statement right before the claim's recovery, over the lease index;
 * - a retryable `fail`, a `retry` (by id, key or batch): {@link GroupRequeue.after},
 *   one statement after the settlement or transition committed;
 * - a park (`ctx.sleep`, `ctx.waitFor`, a join): {@link markRequeued} in the
 *   park's own transaction.
 *
 * Each only where this store knows the group tables exist (it created or
 * found them: a group claim, a grouped submit or a group read did), so a
 * store that never used groups never touches them. A requeue this misses
 * (a v1 peer's, a store that never used groups, a crash between a fail and
 * its mark) is put back when its task reaches the head of the plain claim
 * order, as a task a claim without group limits took is.
 */
import type { CompiledQuery } from "kysely";
import { GROUP_TASK_STATES, RECOVER_REQUEUES, x } from "@cairnq/protocol/adapter";
import type { CompileEnv, StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { QueryRunner, Row } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, TASK_GROUPS_TABLE } from "./extension-tables.js";
import { TASKS_TABLE } from "./statements.js";

const TASK_IDS = x.param("taskIds", "textList");
const GROUP_NAMES = x.param("groupNames", "textList");

/**
 * The row states a requeue marks: taken by a group claim (`done`: by an earlier store). `queued` rows are in the walk
 * already. Wrapped so no index serves it: the rows are found by key, never by walking the `claimed` rows (every task
 * a group claim ever took).
 */
function taken(env: CompileEnv): string {
  return `CASE WHEN state IN (${env.syntax.literal(GROUP_TASK_STATES.claimed)}, ${env.syntax.literal(GROUP_TASK_STATES.done)}) THEN 1 ELSE 0 END = 1`;
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
 * Marks the group rows of `:groupNames` whose tasks lease recovery is about to requeue
 * (`RECOVER_REQUEUES`): the expired leases, read over the partial lease index, each row by its key.
 * Rows already `requeued` are left alone: a claim holding the flow lock may be writing them. The
 * name, like the state, is compared inside a `CASE`: an index on it would walk every row of the name.
 */
const MARK_RECOVER_REQUEUES: StatementTemplate = {
  params: paramsOfAll([RECOVER_REQUEUES], [GROUP_NAMES]),
  clock: "statement",
  build: (c, env) =>
    `UPDATE ${TASK_GROUPS_TABLE} SET state = ${env.syntax.literal(GROUP_TASK_STATES.requeued)} WHERE ${taken(env)} ` +
    `AND CASE WHEN ${env.syntax.inList("name", c.slot(GROUP_NAMES))} THEN 1 ELSE 0 END = 1 ` +
    `AND task_id IN (SELECT id FROM ${TASKS_TABLE} WHERE ${c.condition(RECOVER_REQUEUES) ?? "TRUE"})`,
};

/** The statement a group claim of `groupNames` runs right before its lease recovery (see the module comment). */
export function recoverRequeuesQuery(ext: StoreExtensions, groupNames: readonly string[]): CompiledQuery<Row> {
  const params = { groupNames };
  return ext.statements.compiler.statement(MARK_RECOVER_REQUEUES, params).query(params);
}

/** Marks the group rows of `taskIds` (their tasks went back to `queued`) in the open transaction `tx`, when this store knows the group tables exist. */
export async function markRequeued(ext: StoreExtensions, tx: QueryRunner, taskIds: readonly string[]): Promise<void> {
  if (taskIds.length === 0 || !ext.isReady(GROUP_TABLES)) return;
  await ext.exec(tx, MARK_REQUEUED, { taskIds });
}

/** The marks after the transitions that commit on their own (a retryable fail, a retry). */
export class GroupRequeue {
  readonly #ext: StoreExtensions;

  constructor(ext: StoreExtensions) {
    this.#ext = ext;
  }

  /** Marks the group rows of `taskIds`, whose tasks went back to `queued`, in one write of its own; nothing when this store never saw the group tables. */
  async after(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0 || !this.#ext.isReady(GROUP_TABLES)) return;
    await this.#ext.statements.write(MARK_REQUEUED, { taskIds });
  }
}
