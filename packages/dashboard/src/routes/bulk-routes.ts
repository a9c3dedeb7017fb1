/**
 * Retry or cancel every task matching a filter, in batches through the
 * client. The filter must name a status the action applies to, so a bulk
 * action never sweeps more than the page's button said.
 */
import type { TaskStatus } from "@cairnq/protocol";
import { CANCELABLE_STATUSES, RETRYABLE_STATUSES } from "@cairnq/protocol";
import { HttpError, readBody, sendJson } from "../http.js";
import type { Route, RouteContext } from "../router.js";
import { parseFilter } from "../task-filter.js";

type BulkFilter = { status?: TaskStatus; queue?: string; name?: string; correlationId?: string };

function bulkFilter(body: unknown, action: "retry" | "cancel"): BulkFilter {
  const filter = parseFilter((body as { filter?: unknown } | null)?.filter);
  if (filter.key !== undefined) throw new HttpError(400, "bulk actions do not take a key filter: open the task and act on it");
  const allowed: readonly TaskStatus[] = action === "retry" ? RETRYABLE_STATUSES : CANCELABLE_STATUSES;
  if (filter.status === undefined || !allowed.includes(filter.status)) {
    throw new HttpError(400, `bulk ${action} needs filter.status ${allowed.join(" or ")}`);
  }
  const { key: _key, ...rest } = filter;
  return rest;
}

/** `POST /api/bulk/retry` and `POST /api/bulk/cancel`, answering `{ changed }`. */
export function bulkRoutes(ctx: RouteContext): Route[] {
  const { client } = ctx;
  return [
    {
      method: "POST",
      path: "/api/bulk/retry",
      action: "retry-many",
      async handle(req, res) {
        sendJson(res, 200, { changed: await client.retryMany(bulkFilter(await readBody(req), "retry")) });
      },
    },
    {
      method: "POST",
      path: "/api/bulk/cancel",
      action: "cancel-many",
      async handle(req, res) {
        sendJson(res, 200, { changed: await client.cancelMany(bulkFilter(await readBody(req), "cancel")) });
      },
    },
  ];
}
