/**
 * What the README's Security section and its "on its own" example claim
 * about the same-origin check, `allowedHosts` and `authorize`, checked over
 * HTTP: the origin check does not stop a DNS-rebinding request (its `Host`
 * and `Origin` agree), `allowedHosts` does; the check compares host and port,
 * not the scheme; `authorize` is not asked for the static files.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DashboardAction, DashboardHandler, DashboardSettings } from "@cairnq/dashboard";
import { createDashboard } from "@cairnq/dashboard";
import type { TaskStore } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

let dir: string;
let store: TaskStore;
const served: { server: Server; dashboard: DashboardHandler }[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-dashboard-readme-"));
  store = new SQLiteStore(join(dir, "cairnq.db"));
});

afterEach(async () => {
  for (const { server, dashboard } of served.splice(0)) {
    await dashboard.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Listens first, then builds the dashboard with the port known (as the README's example and `cairnq dashboard` do). */
async function serve(options: (port: number) => DashboardSettings): Promise<number> {
  let dashboard: DashboardHandler | null = null;
  const server = createServer((req, res) => (dashboard === null ? res.writeHead(503).end() : dashboard(req, res)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  dashboard = createDashboard({ store, ...options(port) });
  served.push({ server, dashboard });
  return port;
}

/** A request to 127.0.0.1:`port` with its headers as given (a rebound browser's Host names the attacker's site). */
function call(port: number, method: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.once("error", reject);
    req.end(method === "POST" ? "{}" : undefined);
  });
}

function cancelAs(port: number, host: string, origin: string): Promise<number> {
  return store.submit({ name: "victim", queue: "rebind" }).then((task) =>
    call(port, "POST", `/api/tasks/${task.id}/cancel`, { host, origin, "content-type": "application/json" }),
  );
}

describe("the README's Security claims", () => {
  it("the on-its-own example gives allowedHosts, and the Security section qualifies the origin check", () => {
    const example = README.slice(README.indexOf("Or on its own"), README.indexOf("## Options"));
    expect(example).toContain("allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`]");
    expect(example).toContain("421");
    expect(README).not.toContain("A cross-site form or script cannot retry or cancel anything.");
    expect(README).toMatch(/DNS rebinding: a page whose own name re-resolves/);
    expect(README).toMatch(/compares host and port, not `http` against `https`/);
    expect(README).not.toMatch(/Called for every request with/);
    expect(README).toContain("Called for every request but the page's static files (`GET <mount>/assets/*`");
  });

  it("the origin check passes a DNS-rebinding request; allowedHosts answers it 421", async () => {
    const unguarded = await serve(() => ({}));
    const rebound = `attacker.example:${unguarded}`;
    expect(await cancelAs(unguarded, rebound, `http://${rebound}`)).toBe(200);
    expect(await call(unguarded, "GET", "/api/overview", { host: rebound })).toBe(200);

    const guarded = await serve((port) => ({ allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`] }));
    const attacker = `attacker.example:${guarded}`;
    expect(await cancelAs(guarded, attacker, `http://${attacker}`)).toBe(421);
    expect(await call(guarded, "GET", "/api/overview", { host: attacker })).toBe(421);
    expect(await cancelAs(guarded, `localhost:${guarded}`, `http://localhost:${guarded}`)).toBe(200);
    // Another site in the operator's browser: its Origin names it, the Host names the dashboard.
    expect(await cancelAs(guarded, `127.0.0.1:${guarded}`, "http://attacker.example")).toBe(403);
  });

  it("compares host and port, not the scheme (a TLS-terminating proxy forwards https pages' POSTs over http)", async () => {
    const port = await serve(() => ({}));
    expect(await cancelAs(port, `127.0.0.1:${port}`, `https://127.0.0.1:${port}`)).toBe(200);
    expect(await cancelAs(port, `127.0.0.1:${port}`, `http://127.0.0.1:${port + 1}`)).toBe(403);
  });

  it("authorize is asked for every request but the static files", async () => {
    const asked: [DashboardAction, string][] = [];
    const port = await serve(() => ({
      authorize: (req, action) => {
        asked.push([action, req.url ?? ""]);
        return false;
      },
    }));
    expect(await call(port, "GET", "/assets/dashboard.css", { host: `127.0.0.1:${port}` })).toBe(200);
    expect(await call(port, "GET", "/assets/dashboard.js", { host: `127.0.0.1:${port}` })).toBe(200);
    expect(asked).toEqual([]);
    expect(await call(port, "GET", "/", { host: `127.0.0.1:${port}` })).toBe(403);
    expect(await call(port, "GET", "/metrics", { host: `127.0.0.1:${port}` })).toBe(403);
    expect(asked).toEqual([
      ["read", "/"],
      ["read", "/metrics"],
    ]);
  });
});
