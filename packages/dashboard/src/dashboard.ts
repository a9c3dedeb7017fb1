/**
 * `createDashboard`: a Node `(req, res)` handler serving the dashboard page,
 * its JSON API and a server-sent event stream, over any `TaskStore`.
 *
 * The handler is a list of route families (`routes/*`) behind one router
 * that makes the host, mount, origin, read-only and `authorize` checks. A new
 * route is a `Route` in a family's list, or a new family file added below.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { CairnQ } from "@cairnq/client";
import type { DashboardOptions } from "./dashboard-options.js";
import { DEFAULT_METRICS_CACHE_MS } from "./prometheus.js";
import { checkDashboardOptions } from "./dashboard-options.js";
import { createErrorReporter } from "./error-report.js";
import { LiveHub } from "./live-hub.js";
import type { RouteContext } from "./router.js";
import { createRouter } from "./router.js";
import { activityRoutes } from "./routes/activity-routes.js";
import { bulkRoutes } from "./routes/bulk-routes.js";
import { liveRoutes } from "./routes/live-routes.js";
import { metricsRoutes } from "./routes/metrics-routes.js";
import { overviewRoutes } from "./routes/overview-routes.js";
import { groupRoutes } from "./routes/group-routes.js";
import { pageRoutes } from "./routes/page-routes.js";
import { taskRoutes } from "./routes/task-routes.js";

/** The handler {@link createDashboard} returns: mount it, and `close()` it on shutdown. */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: unknown): void;
  /** Ends open event streams and the store subscription. The store stays open. */
  close(): Promise<void>;
}

/**
 * A Node `(req, res)` handler for the CairnQ dashboard: queues with live
 * counts, a filterable task list with keyset pagination, each task's detail
 * and `explain`, retry and cancel (single and bulk) unless `readOnly`.
 *
 * Mount it in Express (`app.use("/admin", dashboard)`), a Next.js API route
 * (with `basePath`), or `http.createServer(dashboard)`. The page loads only
 * its own assets (no CDN), renders every database value as text, and sends
 * mutations as same-origin JSON POSTs. Put authentication in front of it, or
 * decide per request in `authorize`.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { CairnQ } from "cairnq";
 * import { createDashboard } from "@cairnq/dashboard";
 *
 * const cairnq = CairnQ.sqlite("./cairnq.db");
 * const app = express();
 * app.use("/admin", createDashboard({ client: cairnq, authorize: (req) => req.headers["x-admin"] === "yes" }));
 * ```
 */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  checkDashboardOptions(options);
  const client = options.client ?? new CairnQ(options.store);
  const readOnly = options.readOnly === true;
  const report = createErrorReporter(options.onError, options.logger);
  const hub = new LiveHub(client, options.pollIntervalMs ?? 2000, report);
  const ctx: RouteContext = { client, readOnly, hub };
  const route = createRouter({
    routes: [...pageRoutes(ctx), ...overviewRoutes(ctx), ...groupRoutes(ctx), ...liveRoutes(ctx), ...taskRoutes(ctx), ...bulkRoutes(ctx), ...activityRoutes(ctx), ...metricsRoutes(ctx, options.metricsCacheMs ?? DEFAULT_METRICS_CACHE_MS)],
    readOnly,
    basePath: options.basePath ?? "",
    allowedHosts: options.allowedHosts,
    authorize: options.authorize,
    report,
  });
  const handler = ((req: IncomingMessage, res: ServerResponse): void => route(req, res)) as DashboardHandler;
  handler.close = () => {
    hub.close();
    return Promise.resolve();
  };
  return handler;
}
