/**
 * What the page's left column shows about the whole database: the counts per
 * queue and status, and the last hour's completions per minute.
 */
import { sendJson } from "../http.js";
import type { Route, RouteContext } from "../router.js";
import type { Throughput } from "../throughput.js";
import { readThroughput } from "../throughput.js";

/** Every open page asks for the chart on each tick; one read serves them all for this long. */
const THROUGHPUT_TTL_MS = 10_000;

/** `GET /api/overview` (counts per queue and status) and `GET /api/throughput` (the last hour's chart). */
export function overviewRoutes(ctx: RouteContext): Route[] {
  const { client } = ctx;
  let throughputCache: { atMs: number; value: Promise<Throughput> } | null = null;
  return [
    {
      method: "GET",
      path: "/api/overview",
      action: "read",
      async handle(_req, res) {
        const stats = await client.stats();
        sendJson(res, 200, { nowMs: Date.now(), readOnly: ctx.readOnly, pushWakeups: client.store.capabilities.pushWakeups, queues: stats });
      },
    },
    {
      method: "GET",
      path: "/api/throughput",
      action: "read",
      async handle(_req, res) {
        const now = Date.now();
        if (throughputCache === null || now - throughputCache.atMs > THROUGHPUT_TTL_MS) {
          throughputCache = { atMs: now, value: readThroughput(client.store, now) };
          throughputCache.value.catch(() => (throughputCache = null));
        }
        sendJson(res, 200, await throughputCache.value);
      },
    },
  ];
}
