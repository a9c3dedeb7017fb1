/**
 * The dashboard's router: finds the route for a request's method and path
 * under the mount, makes the checks its kind of route needs, and turns what
 * a route throws into a JSON answer with a status code. A route only says
 * what it is (method, path, action) and what it does; the checks are here,
 * once, so a new route cannot forget one.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { CairnQ } from "@cairnq/client";
import { InvalidArgument } from "@cairnq/protocol";
import type { DashboardAction, DashboardOptions } from "./dashboard-options.js";
import type { ErrorReporter } from "./error-report.js";
import { checkSameOrigin, header, HttpError, requestTarget, sendJson } from "./http.js";
import type { LiveHub } from "./live-hub.js";

/**
 * One thing the dashboard answers. Before `handle` runs, the router checks,
 * in this order: a mutation (a `POST` whose action is not `"read"`) is
 * refused on a read-only dashboard; every `POST` passes the same-origin
 * check; `authorize` is asked for the action unless it is `null`.
 */
export interface Route {
  /** `GET` routes answer `HEAD` too. */
  readonly method: "GET" | "POST";
  /** The path under the mount: exact, or a pattern whose capture groups become `params` (still URL-encoded). */
  readonly path: string | RegExp;
  /** What the request asks, for `authorize`; `null` answers without asking (the page's static files). */
  readonly action: DashboardAction | null;
  /** Answers the request. Throw an `HttpError` (or `InvalidArgument`, a 400) to answer an error. */
  handle(req: IncomingMessage, res: ServerResponse, params: readonly string[]): Promise<void> | void;
}

/** What every route family is built from: one per dashboard. */
export interface RouteContext {
  /** The client the routes read and change tasks through. */
  readonly client: CairnQ;
  /** Whether mutations are refused (the page hides their buttons). */
  readonly readOnly: boolean;
  /** The live-update hub the event stream joins. */
  readonly hub: LiveHub;
}

/** Settings of {@link createRouter}, taken from the dashboard's options. */
export interface RouterOptions {
  readonly routes: readonly Route[];
  readonly readOnly: boolean;
  readonly basePath: string;
  readonly allowedHosts: readonly string[] | undefined;
  readonly authorize: DashboardOptions["authorize"];
  /** Where internal errors go (the client sees only their id). */
  readonly report: ErrorReporter;
}

/** A throw from the `authorize` hook: always internal, whatever it threw (an `InvalidArgument` from the hook is no 400 of ours). */
class AuthorizeFailed extends Error {
  constructor(readonly error: unknown) {
    super("authorize threw");
  }
}

function matchPath(route: Route, path: string): readonly string[] | null {
  if (typeof route.path === "string") return route.path === path ? [] : null;
  const match = route.path.exec(path);
  return match === null ? null : match.slice(1).map((group) => group ?? "");
}

/** A Node `(req, res)` handler that routes every request to one of `options.routes`, or answers 404, 405 or 421. */
export function createRouter(options: RouterOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { routes, readOnly, basePath } = options;
  const allowedHosts = options.allowedHosts === undefined ? null : new Set(options.allowedHosts.map((h) => h.toLowerCase()));

  const authorize = async (req: IncomingMessage, action: DashboardAction): Promise<void> => {
    if (options.authorize === undefined) return;
    let allowed: unknown;
    try {
      allowed = await options.authorize(req, action);
    } catch (err) {
      throw new AuthorizeFailed(err);
    }
    if (allowed !== true) {
      throw new HttpError(403, `not authorized to ${action === "read" ? "view the dashboard" : action.replace("-many", " in bulk")}`);
    }
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (allowedHosts !== null && !allowedHosts.has((header(req, "host") ?? "").toLowerCase())) {
      throw new HttpError(421, "this dashboard does not answer for that host name");
    }
    const target = requestTarget(req.url);
    if (target === null) throw new HttpError(400, 'the request target must be a path starting with a single "/"');
    let path = target.path;
    if (basePath !== "") {
      if (path !== basePath && !path.startsWith(`${basePath}/`)) throw new HttpError(404, "not a dashboard path");
      path = path.slice(basePath.length) || "/";
    }
    const method = req.method ?? "GET";
    const asked = method === "HEAD" ? "GET" : method;
    let known = false;
    for (const candidate of routes) {
      const params = matchPath(candidate, path);
      if (params === null) continue;
      known = true;
      if (candidate.method !== asked) continue;
      if (candidate.method === "POST") {
        if (readOnly && candidate.action !== null && candidate.action !== "read") throw new HttpError(403, "this dashboard is read-only");
        checkSameOrigin(req);
      }
      if (candidate.action !== null) await authorize(req, candidate.action);
      await candidate.handle(req, res, params);
      return;
    }
    if (known) throw new HttpError(405, `${method} is not allowed here`);
    throw new HttpError(404, path.startsWith("/api/") ? "no such dashboard API endpoint" : "no such dashboard page");
  };

  return (req, res) => {
    route(req, res).catch((err: unknown) => {
      if (err instanceof HttpError || err instanceof InvalidArgument) {
        // Deliberate: the message was written for the client.
        if (res.headersSent) return void res.end();
        return sendJson(res, err instanceof HttpError ? err.status : 400, { error: err.message });
      }
      const errorId = options.report(err instanceof AuthorizeFailed ? err.error : err, { method: req.method ?? "GET", path: requestTarget(req.url)?.path ?? "" });
      // A stream that broke mid-answer can only be ended; the error went to the report all the same.
      if (res.headersSent) return void res.end();
      sendJson(res, 500, { error: "internal error", errorId });
    });
  };
}
