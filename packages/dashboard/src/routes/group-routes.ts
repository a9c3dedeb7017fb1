/**
 * Counts by group for one task name (the submit option `group`): what a store
 * with `capabilities.groups` tells through its group reads.
 */
import { hasGroupReads } from "@cairnq/protocol";
import { bodyLimit, HttpError, readBody, sendJson } from "../http.js";
import type { Route, RouteContext } from "../router.js";

const GROUPS_LIMIT_DEFAULT = 50;
const GROUPS_LIMIT_MAX = 1000;

/** `POST /api/groups` with `{ name, limit? }`: `{ name, groups: [{ group, queued, running }] }`, most queued first. */
export function groupRoutes(ctx: RouteContext): Route[] {
  const { client } = ctx;
  return [
    {
      method: "POST",
      path: "/api/groups",
      action: "read",
      async handle(req, res) {
        const b = ((await readBody(req)) ?? {}) as Record<string, unknown>;
        if (typeof b.name !== "string" || b.name === "") throw new HttpError(400, "name must be the task name whose groups to count");
        const limit = bodyLimit(b.limit, GROUPS_LIMIT_DEFAULT, GROUPS_LIMIT_MAX);
        const store = client.store;
        if (!hasGroupReads(store)) throw new HttpError(501, "this store does not record groups (capabilities.groups is not true)");
        sendJson(res, 200, { name: b.name, groups: await store.groupStats(b.name, { limit }) });
      },
    },
  ];
}
