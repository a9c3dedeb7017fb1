/**
 * One task at a time: the filtered list, a task's detail with its
 * explanation, parent and children, and retry or cancel of one task.
 */
import { listPage } from "@cairnq/client";
import type { ListInput, Task } from "@cairnq/protocol";
import { isTaskId } from "@cairnq/protocol/adapter";
import { bodyLimit, HttpError, readBody, sendJson } from "../http.js";
import type { Route, RouteContext } from "../router.js";
import { CHILDREN_LIMITS, childrenOf } from "../task-children.js";
import { matchesFilter, parseFilter } from "../task-filter.js";
import { taskSummary } from "../task-summary.js";

const PAGE_LIMIT_DEFAULT = 50;
const PAGE_LIMIT_MAX = 200;

/** The task id in a route's path segment: one that does not decode (`%E0%A4%A`) is not a task id either, a 404 like any other. */
function taskIdParam(raw: string | undefined): string {
  let id: string;
  try {
    id = decodeURIComponent(raw ?? "");
  } catch {
    throw new HttpError(404, "not a task id");
  }
  if (!isTaskId(id)) throw new HttpError(404, "not a task id");
  return id;
}

/**
 * `POST /api/tasks` (the list: a read, but POSTed so that filter values such
 * as keys never appear in URLs), `GET /api/tasks/:id`, and
 * `POST /api/tasks/:id/retry` and `/cancel`.
 */
export function taskRoutes(ctx: RouteContext): Route[] {
  const { client } = ctx;

  const getTask = async (id: string): Promise<Task> => {
    if (!isTaskId(id)) throw new HttpError(404, "not a task id");
    const task = await client.get(id);
    if (task === null) throw new HttpError(404, `no task ${id} (it may have been purged)`);
    return task;
  };

  const list: Route = {
    method: "POST",
    path: "/api/tasks",
    action: "read",
    async handle(req, res) {
      const b = ((await readBody(req)) ?? {}) as Record<string, unknown>;
      const filter = parseFilter(b.filter);
      const limit = bodyLimit(b.limit, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX);
      // Checked before the filter modes split, so a garbage cursor is 400 with a key filter too.
      const beforeId = b.beforeId === undefined || b.beforeId === null ? undefined : b.beforeId;
      if (beforeId !== undefined && (typeof beforeId !== "string" || !isTaskId(beforeId))) throw new HttpError(400, "beforeId must be a task id");
      if (filter.key !== undefined) {
        // A key points at one task (§3.2): show it if it passes the other filters.
        const task = await client.getByKey(filter.key);
        sendJson(res, 200, { tasks: task !== null && matchesFilter(task, filter) && beforeId === undefined ? [taskSummary(task)] : [], nextBeforeId: null });
        return;
      }
      const input: ListInput & { limit: number } = { limit };
      if (filter.status !== undefined) input.status = filter.status;
      if (filter.queue !== undefined) input.queue = filter.queue;
      if (filter.name !== undefined) input.name = filter.name;
      if (filter.correlationId !== undefined) input.correlationId = filter.correlationId;
      if (beforeId !== undefined) input.beforeId = beforeId;
      // One task more than shown: an exactly full last page offers no "load more" to an empty one.
      const { tasks, nextBeforeId } = await listPage(client, input);
      sendJson(res, 200, { tasks: tasks.map(taskSummary), nextBeforeId });
    },
  };

  const detail: Route = {
    method: "GET",
    path: /^\/api\/tasks\/([^/]+)$/,
    action: "read",
    async handle(_req, res, [raw]) {
      const id = taskIdParam(raw);
      const now = Date.now();
      const explained = await client.explain(id, { nowMs: now });
      if (explained === null) throw new HttpError(404, `no task ${id} (it may have been purged)`);
      const { task, activity: _activity, ...explanation } = explained;
      const [{ children, cut }, parent] = await Promise.all([
        childrenOf(client, task),
        task.parent_id === null ? Promise.resolve(null) : client.get(task.parent_id),
      ]);
      sendJson(res, 200, {
        nowMs: now,
        task,
        explanation,
        parent: parent === null ? null : taskSummary(parent),
        children: children.map(taskSummary),
        childrenCut: cut,
        childrenLimits: CHILDREN_LIMITS,
      });
    },
  };

  const mutate = (action: "retry" | "cancel"): Route => ({
    method: "POST",
    path: new RegExp(`^/api/tasks/([^/]+)/${action}$`),
    action,
    async handle(req, res, [raw]) {
      const id = taskIdParam(raw);
      await readBody(req);
      const before = await getTask(id);
      const after = action === "retry" ? await client.retry(id) : await client.cancel(id);
      if (after === null) {
        const verb = action === "retry" ? "retried (only failed or canceled tasks can be)" : "canceled (only queued or running tasks can be)";
        throw new HttpError(409, `task ${id} is ${before.status} and cannot be ${verb}`);
      }
      sendJson(res, 200, { changed: 1, task: taskSummary(after) });
    },
  });

  return [list, detail, mutate("retry"), mutate("cancel")];
}
