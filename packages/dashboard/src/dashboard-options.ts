/**
 * The options of `createDashboard` and their checks: unknown keys and values
 * that cannot work are refused when the dashboard is built, not at its first
 * request.
 */
import type { IncomingMessage } from "node:http";
import type { CairnQ } from "@cairnq/client";
import type { Logger, TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { describe } from "@cairnq/protocol/adapter";
import { requireHook } from "@cairnq/runtime";
import type { DashboardErrorInfo } from "./error-report.js";

/** What a request asks to do, as passed to {@link DashboardSettings.authorize}. */
export type DashboardAction = "read" | "retry" | "cancel" | "retry-many" | "cancel-many";

/**
 * Options of `createDashboard`: exactly one of `store` or `client` (what to
 * show; neither or both does not compile, and throws `InvalidArgument` from
 * JS), plus the settings of {@link DashboardSettings}.
 *
 * @example
 * ```ts
 * createDashboard({ store: new SQLiteStore("./cairnq.db"), readOnly: true });
 * createDashboard({ client: cairnq, basePath: "/api/admin" });
 * ```
 */
export type DashboardOptions = DashboardSettings &
  (
    | {
        /** The store to show. Give this or `client`. */
        store: TaskStore;
        /** Give `store` or `client`, not both. */
        client?: undefined;
      }
    | {
        /** A client whose store to show (its `close()` stays yours). Give this or `store`. */
        client: CairnQ;
        /** Give `store` or `client`, not both. */
        store?: undefined;
      }
  );

/** The options of `createDashboard` besides what it shows (`store` or `client`): all optional. */
export interface DashboardSettings {
  /** No retry or cancel: the buttons are hidden and every mutation is refused with 403. Must be a boolean. @default false */
  readOnly?: boolean;
  /**
   * Decides each request: return `false` (or a promise of it) to answer 403.
   * Called with the Node request (read your session cookie or header there)
   * and what it asks. Mutations also pass the same-origin check first. Not
   * called for the page's static files (`GET <mount>/assets/*`: its script,
   * styles and icon, the same in every install, holding no data).
   * @default every request is allowed
   */
  authorize?: (req: IncomingMessage, action: DashboardAction) => boolean | Promise<boolean>;
  /**
   * The path prefix in `req.url` in front of the dashboard's own paths, when
   * the framework does not strip it (a Next.js API route at `/api/admin`
   * passes `basePath: "/api/admin"`). Express's `app.use("/admin", …)` strips
   * its mount path itself: leave this unset there. Segments of letters,
   * digits and `-._~` only, so it matches `req.url` as sent (no spaces or
   * percent-escapes, no query, no trailing `/`).
   * @default ""
   */
  basePath?: string;
  /**
   * `Host` header values to answer (e.g. `["127.0.0.1:4000", "localhost:4000"]`);
   * anything else gets 421. Guards a dashboard against DNS rebinding, which
   * the same-origin check does not catch (a rebound page's `Host` and `Origin`
   * agree): set it unless something in front checks the host name.
   * `cairnq dashboard` sets it for loopback hosts.
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
  /**
   * Called with every error the dashboard did not mean — a store or driver
   * error, a throw from `authorize`, a bug — and its `errorId`, method and
   * path. The client is answered only `500 { error: "internal error", errorId }`,
   * never the error's message (it may hold a password or a row, and the
   * requester may not be signed in yet). A throw or rejection from `onError`
   * goes to `logger.error` (stderr without a logger).
   * @default the error goes to `logger.error`, or to stderr without a logger
   */
  onError?: (error: unknown, info: DashboardErrorInfo) => unknown;
  /**
   * Structural logger (`console`, pino, …): internal errors go to its `error`
   * when there is no `onError`. `null` silences the stderr default.
   * @default stderr lines (`cairnq error: …`) when `onError` is not given either
   */
  logger?: Logger | null;
}

const OPTION_KEYS = ["store", "client", "readOnly", "authorize", "basePath", "allowedHosts", "pollIntervalMs", "metricsCacheMs", "onError", "logger"] as const;

/**
 * A mount path: segments of RFC 3986 unreserved characters only, so the
 * string given is exactly what arrives in `req.url` (a space would arrive as
 * `%20` and nothing would match), with no query, fragment, empty, `.` or
 * `..` segment, and no trailing slash (the dashboard's own paths add it).
 */
const BASE_PATH = /^(?:\/[A-Za-z0-9\-._~]+)+$/;


/** Throws `InvalidArgument` naming the first option that is unknown or cannot work. */
export function checkDashboardOptions(options: DashboardOptions): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidArgument("options", `createDashboard needs an options object: createDashboard({ store }), got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!(OPTION_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgument(key, `unknown dashboard option ${JSON.stringify(key)}; valid options are ${OPTION_KEYS.join(", ")}`);
    }
  }
  // Read through `unknown`: options often come from env vars or JSON, where the types above do not hold.
  const o = options as unknown as Record<string, unknown>;
  if ((o.store === undefined) === (o.client === undefined)) {
    throw new InvalidArgument("store", "createDashboard needs exactly one of store or client: createDashboard({ store }) or createDashboard({ client })");
  }
  if (o.store !== undefined && (typeof o.store !== "object" || o.store === null || typeof (o.store as { capabilities?: unknown }).capabilities !== "object")) {
    throw new InvalidArgument("store", `store must be a TaskStore (an object with capabilities, such as new SQLiteStore(path)), got ${describe(o.store)}`);
  }
  if (o.client !== undefined && (typeof o.client !== "object" || o.client === null || typeof (o.client as { store?: unknown }).store !== "object")) {
    throw new InvalidArgument("client", `client must be a CairnQ client (CairnQ.sqlite(path), CairnQ.postgres(url), …), got ${describe(o.client)}`);
  }
  if (o.readOnly !== undefined && typeof o.readOnly !== "boolean") {
    // A string "true" from an env var must not leave the dashboard writable.
    throw new InvalidArgument("readOnly", `readOnly must be true or false, got ${describe(o.readOnly)}; convert an environment variable first (readOnly: process.env.X === "true")`);
  }
  if (o.pollIntervalMs !== undefined && (!Number.isInteger(o.pollIntervalMs) || (o.pollIntervalMs as number) < 100 || (o.pollIntervalMs as number) > 600_000)) {
    throw new InvalidArgument("pollIntervalMs", `pollIntervalMs must be an integer from 100 to 600000 (ms), got ${describe(o.pollIntervalMs)}`);
  }
  if (o.metricsCacheMs !== undefined && (!Number.isInteger(o.metricsCacheMs) || (o.metricsCacheMs as number) < 0 || (o.metricsCacheMs as number) > 600_000)) {
    throw new InvalidArgument("metricsCacheMs", `metricsCacheMs must be an integer from 0 to 600000 (ms), got ${describe(o.metricsCacheMs)}`);
  }
  if (o.basePath !== undefined && (typeof o.basePath !== "string" || (o.basePath !== "" && (!BASE_PATH.test(o.basePath) || /\/\.{1,2}(?:\/|$)/.test(o.basePath))))) {
    throw new InvalidArgument(
      "basePath",
      `basePath must be "" or a path such as "/api/admin": starting with "/", not ending with one, of letters, digits and - . _ ~ only (no spaces, query, fragment, percent-escapes, empty, "." or ".." segments), got ${describe(o.basePath)}`,
    );
  }
  if (o.allowedHosts !== undefined) {
    const hosts = o.allowedHosts;
    if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === "string" && h !== "")) {
      const got = Array.isArray(hosts) ? (hosts.length === 0 ? "an empty array" : `[${hosts.map(describe).join(", ")}]`) : describe(hosts);
      throw new InvalidArgument("allowedHosts", `allowedHosts must be a non-empty array of Host header values such as ["127.0.0.1:4000", "localhost:4000"] (or unset, to answer any host), got ${got}`);
    }
  }
  requireHook(o.onError, "onError", "(error, info) => void");
  if (o.logger !== undefined && o.logger !== null && typeof o.logger !== "object") {
    throw new InvalidArgument("logger", `logger must be an object with an error(message, fields) method, such as console, or null, got ${describe(o.logger)}`);
  }
  requireHook(o.authorize, "authorize", "(req, action) => boolean | Promise<boolean>");
}
