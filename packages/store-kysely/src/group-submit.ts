/**
 * The submit side of groups (`SubmitInput.group`, rules in `@cairnq/protocol`
 * `groups.ts`): in the submit's own write transaction, after the task row,
 * the task's group row (`queued`) and its group's row, created on the first
 * submit to the group (first in the served order) or marked active, its
 * `touched` bumped so a claim that found the group empty meanwhile does not
 * deactivate it (see `group-draw.ts`).
 */
import type { Task } from "@cairnq/protocol";
import { GROUP_TASK_STATES, x } from "@cairnq/protocol/adapter";
import type { StatementTemplate } from "./compiler.js";
import type { QueryRunner } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUPS_TABLE, TASK_GROUPS_TABLE } from "./extension-tables.js";

const TASK_ID = x.param("taskId", "text");
const NAME = x.param("name", "text");
const GROUP = x.param("group", "text");
const PRIORITY = x.param("priority", "int");

const INSERT_TASK_GROUP: StatementTemplate = {
  params: [TASK_ID, NAME, GROUP, PRIORITY],
  clock: null,
  build: (c, env) =>
    `INSERT INTO ${TASK_GROUPS_TABLE} (task_id, name, group_key, priority, state) VALUES (${c.slot(TASK_ID)}, ${c.slot(NAME)}, ${c.slot(GROUP)}, ${c.slot(PRIORITY)}, ${env.syntax.literal(GROUP_TASK_STATES.queued)})`,
};

/**
 * How every statement that sets a group active ends: the row, inserted as a new group when missing, else woken with
 * `touched` bumped in the same statement — the fence a prune of idle rows relies on (`group-prune.ts`).
 */
export const ACTIVATE_ON_CONFLICT = `ON CONFLICT (name, group_key) DO UPDATE SET active = 1, touched = ${GROUPS_TABLE}.touched + 1`;

const TOUCH_GROUP: StatementTemplate = {
  params: [NAME, GROUP],
  clock: null,
  build: (c) =>
    `INSERT INTO ${GROUPS_TABLE} (name, group_key, served_seq, active, touched) VALUES (${c.slot(NAME)}, ${c.slot(GROUP)}, 0, 1, 0) ${ACTIVATE_ON_CONFLICT}`,
};

/**
 * Records `task`'s `group` inside the open transaction `tx` that inserted the task — a submit's, or a spawn's
 * (`steps-journal.ts`) — (the group tables must exist: `ensure(GROUP_TABLES)` first).
 */
export async function recordTaskGroup(ext: StoreExtensions, tx: QueryRunner, task: Pick<Task, "id" | "name" | "priority">, group: string): Promise<void> {
  await ext.exec(tx, INSERT_TASK_GROUP, { taskId: task.id, name: task.name, group, priority: task.priority });
  await ext.exec(tx, TOUCH_GROUP, { name: task.name, group });
}
