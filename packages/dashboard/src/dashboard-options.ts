/**
 * The options of `createDashboard` and their checks: unknown keys and values
 * that cannot work are refused when the dashboard is built, not at its first
 * request.
 */
import type { IncomingMessage } from "node:http";
import type { CairnQ } from "@cairnq/client";
import type { TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";

/** What a request asks to do, as passed to {@link DashboardOptions.authorize}. */
export type DashboardAction = "read" | "retry" | "cancel" | "retry-many" | "cancel-many";

/** Options of `createDashboard`: give `store` or `client`. */
export interface DashboardOptions {
  /** The store to show. Give this or `client`. */
  store?: TaskStore;
  /** A client whose store to show (its `close()` stays yours). Give this or `store`. */
  client?: CairnQ;
  /** No retry or cancel: the buttons are hidden and every mutation is refused with 403. @default false */
  readOnly?: boolean;
  /**
   * Decides each request: return `false` (or a promise of it) to answer 403.
   * Called with the Node request (read your session cookie or header there)
   * and what it asks. Mutations also pass the same-origin check first.
   * @default every request is allowed
   */
  authorize?: (req: IncomingMessage, action: DashboardAction) => boolean | Promise<boolean>;
  /**
   * The path prefix in `req.url` in front of the dashboard's own paths, when
   * the framework does not strip it (a Next.js API route at `/api/admin`
   * passes `basePath: "/api/admin"`). Express's `app.use("/admin", …)` strips
   * its mount path itself: leave this unset there.
   * @default ""
   */
  basePath?: string;
  /**
   * `Host` header values to answer (e.g. `["127.0.0.1:4000", "localhost:4000"]`);
   * anything else gets 421. Guards a dashboard on a loopback address against
   * DNS rebinding. `cairnq dashboard` sets it for loopback hosts.
   * @default any host
   */
  allowedHosts?: readonly string[];
  /** How often live views re-read the counts (and push-less stores are polled). @default 2000 */
  pollIntervalMs?: number;
  /**
   * How long one read of the queues serves `GET <mount>/metrics` (the
   * Prometheus text): every scrape within it gets the same numbers, and the
   * aggregate statement runs at most once per period. Integer ms, 0 to 600000.
   * @default 5000
   */
  metricsCacheMs?: number;
}

const OPTION_KEYS = ["store", "client", "readOnly", "authorize", "basePath", "allowedHosts", "pollIntervalMs", "metricsCacheMs"] as const;

/** Throws `InvalidArgument` naming the first option that is unknown or cannot work. */
export function checkDashboardOptions(options: DashboardOptions): void {
  if (typeof options !== "object" || options === null) throw new InvalidArgument("options", "createDashboard needs an options object: createDashboard({ store })");
  for (const key of Object.keys(options)) {
    if (!(OPTION_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgument(key, `unknown dashboard option ${JSON.stringify(key)}; valid options are ${OPTION_KEYS.join(", ")}`);
    }
  }
  if ((options.store === undefined) === (options.client === undefined)) {
    throw new InvalidArgument("store", "createDashboard needs exactly one of store or client: createDashboard({ store }) or createDashboard({ client })");
  }
  if (options.pollIntervalMs !== undefined && (!Number.isInteger(options.pollIntervalMs) || options.pollIntervalMs < 100 || options.pollIntervalMs > 600_000)) {
    throw new InvalidArgument("pollIntervalMs", `pollIntervalMs must be an integer from 100 to 600000 (ms), got ${String(options.pollIntervalMs)}`);
  }
  if (options.metricsCacheMs !== undefined && (!Number.isInteger(options.metricsCacheMs) || options.metricsCacheMs < 0 || options.metricsCacheMs > 600_000)) {
    throw new InvalidArgument("metricsCacheMs", `metricsCacheMs must be an integer from 0 to 600000 (ms), got ${String(options.metricsCacheMs)}`);
  }
  if (options.basePath !== undefined && (typeof options.basePath !== "string" || (options.basePath !== "" && !/^\/.*[^/]$/.test(options.basePath)))) {
    throw new InvalidArgument("basePath", `basePath must start with "/" and not end with one, e.g. "/api/admin", got ${JSON.stringify(options.basePath)}`);
  }
  if (options.authorize !== undefined && typeof options.authorize !== "function") {
    throw new InvalidArgument("authorize", "authorize must be a function (req, action) => boolean | Promise<boolean>");
  }
}
