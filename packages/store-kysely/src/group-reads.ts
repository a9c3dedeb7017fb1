/**
 * The group reads (`GroupReadStore` in `@cairnq/protocol` `groups.ts`): a
 * task's group with its counts, and counts per group of a name — what
 * `explain`, `cairnq stats --by-group` and the dashboard show. Queued counts
 * read the group rows that may hold a queued task and each task by primary
 * key; running counts read the name's running tasks (over the partial lease
 * index) and each one's group row by key, as the group claim does. Reads create nothing: on a
 * database without the group tables (no grouped submit or grouped claim yet, which are what create
 * them) they answer as for empty tables, after a catalog read that stops once it has found them.
 */
import type { GroupCounts, TaskGroupInfo } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { GROUP_RUNNING, GROUP_TASK_STATES, requireLimitedText, requireName, sortGroupCounts, x } from "@cairnq/protocol/adapter";
import type { CompileEnv, ExprCompiler, StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, GROUPS_TABLE, TASK_GROUPS_TABLE } from "./extension-tables.js";
import { TASKS_TABLE } from "./statements.js";
import type { StoreLifecycle } from "./store-lifecycle.js";

const TASK_ID = x.param("taskId", "text");
const NAME = x.param("name", "text");
const GROUP = x.param("group", "text");

/**
 * The group rows of `:name` (or of `sameGroupAs`'s name and group) that may hold a queued task — in the
 * walk, or marked requeued and not yet put back — whose task is queued: one select of `columns` per
 * state, so each reads the partial index of its state (a condition on both states would read neither).
 */
function waitingSelects(c: ExprCompiler, env: CompileEnv, alias: string, columns: string, sameGroupAs: string | null): string[] {
  const { queued, requeued } = GROUP_TASK_STATES;
  const owner = sameGroupAs === null ? c.slot(NAME) : `${sameGroupAs}.name AND ${alias}.group_key = ${sameGroupAs}.group_key`;
  return [queued, requeued].map(
    (state) =>
      `SELECT ${columns} FROM ${TASK_GROUPS_TABLE} ${alias} WHERE ${alias}.name = ${owner} AND ${alias}.state = ${env.syntax.literal(state)} ` +
      `AND (SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = ${alias}.task_id) = ${env.syntax.literal("queued")}`,
  );
}

/**
 * A scalar probe of one state's partial index: 1 when group `groupKey` of the name at `nameSlot` has a group row in
 * `state` (with `taskQueued`, one whose task is `queued`), else NULL. What the draw's idle check and the prune's read
 * (`group-prune.ts`) ask of a group, as a probe rather than `NOT EXISTS` (a planner without statistics on a fresh group
 * table ran that as an anti-join over every queued row of the name).
 */
export function groupRowIn(env: CompileEnv, nameSlot: string, groupKey: string, state: string, taskQueued: boolean): string {
  const queued = taskQueued ? ` AND (SELECT t.status FROM ${TASKS_TABLE} t WHERE t.id = tg.task_id) = ${env.syntax.literal("queued")}` : "";
  return `(SELECT 1 FROM ${TASK_GROUPS_TABLE} tg WHERE tg.name = ${nameSlot} AND tg.state = ${env.syntax.literal(state)} AND tg.group_key = ${groupKey}${queued} LIMIT 1)`;
}

/** The running tasks of `:name` (`GROUP_RUNNING`, over the partial lease index) with their group, or a null group (also read by the prune, `group-prune.ts`). */
export function runningWithGroup(c: ExprCompiler): string {
  return `SELECT (SELECT tg.group_key FROM ${TASK_GROUPS_TABLE} tg WHERE tg.task_id = r.id) AS group_key FROM ${TASKS_TABLE} r WHERE ${c.condition(GROUP_RUNNING) ?? "TRUE"}`;
}

/** Per group of `:name`: its queued tasks (from the group rows that may hold one) and its running ones (from the running task rows). */
const COUNTS: StatementTemplate = {
  params: paramsOfAll([GROUP_RUNNING], [NAME]),
  clock: "statement",
  build: (c, env) =>
    `SELECT q.group_key AS group_key, q.status AS status, count(*) AS n FROM (${waitingSelects(c, env, "tg", `tg.group_key AS group_key, ${env.syntax.literal("queued")} AS status`, null).join(" UNION ALL ")} ` +
    `UNION ALL SELECT w.group_key AS group_key, ${env.syntax.literal("running")} AS status FROM (${runningWithGroup(c)}) w) q ` +
    `WHERE q.group_key IS NOT NULL GROUP BY q.group_key, q.status`,
};

/** The group of `:taskId`, its name, the queued tasks of its name in that group, and the limit last enforced. */
const TASK_GROUP: StatementTemplate = {
  params: [TASK_ID],
  clock: null,
  build: (c, env) =>
    `SELECT tg.name AS name, tg.group_key AS group_key, g.concurrency_limit AS concurrency_limit, ` +
    `${waitingSelects(c, env, "o", "count(*)", "tg")
      .map((select) => `(${select})`)
      .join(" + ")} AS queued ` +
    `FROM ${TASK_GROUPS_TABLE} tg LEFT JOIN ${GROUPS_TABLE} g ON g.name = tg.name AND g.group_key = tg.group_key WHERE tg.task_id = ${c.slot(TASK_ID)}`,
};

/** The running tasks of `:name` in `:group`. */
const RUNNING_IN_GROUP: StatementTemplate = {
  params: paramsOfAll([GROUP_RUNNING], [NAME, GROUP]),
  clock: "statement",
  build: (c) => `SELECT count(*) AS n FROM (${runningWithGroup(c)}) w WHERE w.group_key = ${c.slot(GROUP)}`,
};

/** The group reads of one store. */
export class GroupReads {
  readonly #ext: StoreExtensions;
  readonly #lifecycle: StoreLifecycle;

  constructor(ext: StoreExtensions, lifecycle: StoreLifecycle) {
    this.#ext = ext;
    this.#lifecycle = lifecycle;
  }

  /** `read()` when the group tables exist, else `empty` (`StoreExtensions.whenTables`). */
  #whenTables<T>(empty: T, read: () => Promise<T>): Promise<T> {
    return this.#ext.whenTables(GROUP_TABLES, [TASK_GROUPS_TABLE, GROUPS_TABLE], empty, read);
  }

  /** See `GroupReadStore.taskGroup`. */
  async taskGroup(taskId: string): Promise<TaskGroupInfo | null> {
    const id = requireName(taskId, "taskId");
    return this.#lifecycle.run(() => this.#whenTables(null, () => this.#taskGroup(id)));
  }

  async #taskGroup(id: string): Promise<TaskGroupInfo | null> {
    const row = (await this.#ext.statements.read(TASK_GROUP, { taskId: id })).rows[0];
    if (row === undefined) return null;
    const limit = row.concurrency_limit;
    const group = String(row.group_key);
    const running = (await this.#ext.statements.read(RUNNING_IN_GROUP, { name: String(row.name), group })).rows[0]?.n;
    return {
      group,
      running: Number(running ?? 0),
      queued: Number(row.queued),
      groupConcurrency: limit === null || limit === undefined ? null : Number(limit),
    };
  }

  /** See `GroupReadStore.groupStats`. */
  async groupStats(name: string, options: { readonly limit?: number } = {}): Promise<GroupCounts[]> {
    const checked = requireLimitedText(name, "name");
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidArgument("limit", `groupStats limit must be an integer ≥ 1, got ${String(limit)}`);
    return this.#lifecycle.run(() => this.#whenTables([], () => this.#groupStats(checked, limit)));
  }

  async #groupStats(checked: string, limit: number): Promise<GroupCounts[]> {
    const byGroup = new Map<string, { group: string; queued: number; running: number }>();
    for (const row of (await this.#ext.statements.read(COUNTS, { name: checked })).rows) {
      const group = String(row.group_key);
      const entry = byGroup.get(group) ?? { group, queued: 0, running: 0 };
      if (row.status === "queued") entry.queued += Number(row.n);
      else entry.running += Number(row.n);
      byGroup.set(group, entry);
    }
    return sortGroupCounts([...byGroup.values()], limit);
  }
}
