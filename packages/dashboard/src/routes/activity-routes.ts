/**
 * `GET /api/activity?range=hour|day&queue=<queue>`: the Activity charts'
 * data (`activity.ts`), cached per range and queue: every open page asks on
 * each tick, and one read serves them all for a while.
 */
import { requestTarget, sendJson } from "../http.js";
import type { Activity } from "../activity.js";
import { activityRange, readActivity } from "../activity.js";
import type { Route, RouteContext } from "../router.js";

/** How long one read serves the charts of a range and queue. */
const ACTIVITY_TTL_MS = 10_000;
/** Cached reads kept at most (range × queue pairs); the oldest goes first. */
const ACTIVITY_CACHE_ENTRIES = 32;

export function activityRoutes(ctx: RouteContext): Route[] {
  const cache = new Map<string, { atMs: number; value: Promise<Activity> }>();
  return [
    {
      method: "GET",
      path: "/api/activity",
      action: "read",
      async handle(req, res) {
        // The router answered only an origin-form target, so this is not null.
        const params = new URLSearchParams(requestTarget(req.url)?.query ?? "");
        const range = activityRange(params.get("range"));
        const queue = params.get("queue") || null;
        const key = `${range}\u0000${queue ?? ""}`;
        const now = Date.now();
        let entry = cache.get(key);
        if (entry === undefined || now - entry.atMs > ACTIVITY_TTL_MS) {
          const fresh = { atMs: now, value: readActivity(ctx.client.store, now, range, queue) };
          fresh.value.catch(() => {
            if (cache.get(key) === fresh) cache.delete(key);
          });
          cache.delete(key);
          cache.set(key, fresh);
          if (cache.size > ACTIVITY_CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
          entry = fresh;
        }
        sendJson(res, 200, await entry.value);
      },
    },
  ];
}
