/**
 * The router on its own, with routes made up for the test (as the next
 * release's `/metrics` will be added): a route only declares its method,
 * path and action, and gets the host, read-only, same-origin and authorize
 * checks, its path parameters, and its errors as JSON answers.
 */
import type { Server } from "node:http";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { InvalidArgument } from "@cairnq/protocol";
import { afterEach, describe, expect, it } from "vitest";
import type { DashboardAction } from "../src/dashboard-options.js";
import { HttpError, sendJson } from "../src/http.js";
import type { ErrorReporter } from "../src/error-report.js";
import type { Route, RouterOptions } from "../src/router.js";
import { createRouter } from "../src/router.js";
import { callRaw } from "./support/serve.js";

const servers: Server[] = [];
/** What the routers' reporters got, cleared after each test. */
const reported: { error: unknown; method: string; path: string }[] = [];

/** A reporter recording into `into`, answering ids "e1", "e2", … */
function reportTo(into: typeof reported): ErrorReporter {
  return (error, info) => `e${into.push({ error, ...info })}`;
}

afterEach(async () => {
  reported.length = 0;
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function serve(routes: Route[], options: Partial<Omit<RouterOptions, "routes">> = {}): Promise<string> {
  const route = createRouter({ routes, readOnly: false, basePath: "", allowedHosts: undefined, authorize: undefined, report: reportTo(reported), ...options });
  const server = createServer(route);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function call(url: string, method = "GET", headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once("error", reject);
    req.end(method === "POST" ? "{}" : undefined);
  });
}


const metrics: Route = {
  method: "GET",
  path: "/metrics",
  action: "read",
  handle(_req, res) {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end("cairnq_tasks 0\n");
  },
};

const echo: Route = {
  method: "GET",
  path: /^\/api\/echo\/([^/]+)$/,
  action: "read",
  handle(_req, res, [word]) {
    if (word === "teapot") throw new HttpError(418, "short and stout");
    sendJson(res, 200, { word });
  },
};

const touch: Route = {
  method: "POST",
  path: "/api/touch",
  action: "retry",
  handle(_req, res) {
    sendJson(res, 200, { touched: true });
  },
};

describe("createRouter", () => {
  it("answers a new route with its path parameters, and a thrown HttpError as JSON with its status", async () => {
    const base = await serve([metrics, echo]);
    expect(await call(`${base}/metrics`)).toEqual({ status: 200, body: "cairnq_tasks 0\n" });
    expect(await call(`${base}/api/echo/hello`)).toEqual({ status: 200, body: '{"word":"hello"}' });
    expect(await call(`${base}/api/echo/teapot`)).toEqual({ status: 418, body: '{"error":"short and stout"}' });
  });

  it("asks authorize for each route's action; a route with no action is served without asking", async () => {
    const asked: DashboardAction[] = [];
    const open: Route = { ...metrics, path: "/open", action: null };
    const base = await serve([metrics, open, touch], {
      authorize: (_req, action) => {
        asked.push(action);
        return action !== "read";
      },
    });
    expect((await call(`${base}/metrics`)).status).toBe(403);
    expect((await call(`${base}/open`)).status).toBe(200);
    expect((await call(`${base}/api/touch`, "POST", { origin: base, "content-type": "application/json" })).status).toBe(200);
    expect(asked).toEqual(["read", "retry"]);
  });

  it("refuses a POST from another origin, and a mutation on a read-only dashboard before anything else", async () => {
    const base = await serve([touch]);
    expect((await call(`${base}/api/touch`, "POST", { origin: "https://evil.example", "content-type": "application/json" })).status).toBe(403);
    const readOnly = await serve([touch], { readOnly: true, authorize: () => Promise.reject(new Error("authorize must not be asked")) });
    expect(await call(`${readOnly}/api/touch`, "POST", { origin: "https://evil.example" })).toEqual({ status: 403, body: '{"error":"this dashboard is read-only"}' });
  });

  it("answers 405 for a known path with another method (HEAD counts as GET), 404 for an unknown page or API endpoint, 421 for another host", async () => {
    const base = await serve([metrics, touch]);
    expect((await call(`${base}/metrics`, "POST", { origin: base, "content-type": "application/json" })).status).toBe(405);
    expect((await call(`${base}/api/touch`)).status).toBe(405);
    expect((await call(`${base}/metrics`, "HEAD")).status).toBe(200);
    expect(await call(`${base}/api/nothing-here`)).toEqual({ status: 404, body: '{"error":"no such dashboard API endpoint"}' });
    expect(await call(`${base}/api/tasks/%2e%2e`)).toEqual({ status: 404, body: '{"error":"no such dashboard API endpoint"}' });
    expect((await call(`${base}/nothing-here`)).status).toBe(404);
    const guarded = await serve([metrics], { allowedHosts: ["dashboard.test"] });
    expect((await call(`${guarded}/metrics`)).status).toBe(421);
    expect((await call(`${guarded}/metrics`, "GET", { host: "dashboard.test" })).status).toBe(200);
  });

  it("serves under basePath and nothing outside it", async () => {
    const base = await serve([metrics], { basePath: "/admin" });
    expect((await call(`${base}/admin/metrics`)).status).toBe(200);
    expect((await call(`${base}/metrics`)).status).toBe(404);
  });

  it("routes on the request target as sent: '//host/…', '/\\host/…' and dot segments are not read as another path", async () => {
    const mounted = await serve([metrics], { basePath: "/admin" });
    const root = await serve([metrics]);
    // A proxy guarding the prefix /admin (or /metrics) lets these through; they must not reach /metrics.
    for (const target of ["//anything/admin/metrics", "/\\anything/admin/metrics", "//admin/metrics"]) {
      expect(await callRaw(mounted, target), target).toEqual({ status: 400, body: '{"error":"the request target must be a path starting with a single \\"/\\""}' });
    }
    expect((await callRaw(root, "//anything/metrics")).status).toBe(400);
    expect((await callRaw(root, "//")).status).toBe(400);
    expect((await callRaw(mounted, "//")).status).toBe(400);
    expect((await callRaw(mounted, "/public/../admin/metrics")).status).toBe(404);
    expect((await callRaw(root, "/x/../metrics")).status).toBe(404);
    expect((await callRaw(root, "*")).status).toBe(400);
    expect((await callRaw(mounted, "/admin/metrics?x=//evil/y")).status).toBe(200);
    expect((await callRaw(root, "/metrics?")).status).toBe(200);
  });

  it("answers an internal error as 500 'internal error' with an id, and gives the error itself to the reporter", async () => {
    const broken: Route = {
      ...metrics,
      path: "/broken",
      handle() {
        throw new Error("connect ECONNREFUSED postgres://app:hunter2@db/app");
      },
    };
    const base = await serve([metrics, broken, echo]);
    const reply = await call(`${base}/broken?q=1`);
    expect(reply).toEqual({ status: 500, body: '{"error":"internal error","errorId":"e1"}' });
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ method: "GET", path: "/broken" });
    expect((reported[0]?.error as Error).message).toContain("hunter2");
    // Deliberate errors keep their status and message, and are not reported.
    expect(await call(`${base}/api/echo/teapot`)).toEqual({ status: 418, body: '{"error":"short and stout"}' });
    expect((await call(`${base}/nothing-here`)).status).toBe(404);
    expect(reported).toHaveLength(1);
  });

  it("answers a throw from authorize as an internal error, whatever it threw, before anyone is known", async () => {
    const secret = new Error("db password=hunter2 leaked");
    const base = await serve([metrics], {
      authorize: (req) => {
        if (req.headers["x-kind"] === "invalid") throw new InvalidArgument("session", "session row 42 of user alice@example.com is corrupt");
        throw secret;
      },
    });
    const reply = await call(`${base}/metrics`);
    expect(reply.status).toBe(500);
    expect(reply.body).not.toContain("hunter2");
    expect(JSON.parse(reply.body)).toEqual({ error: "internal error", errorId: "e1" });
    expect(reported[0]?.error).toBe(secret);
    const invalid = await call(`${base}/metrics`, "GET", { "x-kind": "invalid" });
    expect(invalid.status).toBe(500);
    expect(invalid.body).not.toContain("alice");
    expect(reported[1]?.error).toBeInstanceOf(InvalidArgument);
  });
});
