/**
 * Internal errors — a store or driver error, a throw from `authorize` — reach
 * `onError`, `logger.error` or stderr with an id, and the client gets only
 * that id: never the error's message.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DashboardErrorInfo, DashboardSettings } from "@cairnq/dashboard";
import type { TaskStore } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createErrorReporter } from "../src/error-report.js";
import { callRaw, closeDashboards, serveDashboard } from "./support/serve.js";

let dir: string;
let store: TaskStore;
let failing: TaskStore;
const dbError = new Error("password authentication failed for postgres://app:hunter2@db/app");

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-dashboard-errors-"));
  store = new SQLiteStore(join(dir, "cairnq.db"));
  // The same store, but its counts cannot be read: what a database outage looks like to the dashboard.
  failing = new Proxy(store, {
    get(target, key) {
      if (key === "stats") return () => Promise.reject(dbError);
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
});

afterEach(async () => {
  await closeDashboards();
  vi.restoreAllMocks();
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});


function serve(options: DashboardSettings): Promise<string> {
  return serveDashboard({ store: failing, ...options });
}

describe("internal errors", () => {
  it("answers a store error as 500 'internal error' with an id, and gives onError the error, id, method and path", async () => {
    const seen: [unknown, DashboardErrorInfo][] = [];
    const base = await serve({ onError: (error, info) => void seen.push([error, info]) });
    const reply = await callRaw(base, "/api/overview");
    expect(reply.status).toBe(500);
    expect(reply.body).not.toContain("hunter2");
    const body = JSON.parse(reply.body) as { error: string; errorId: string };
    expect(body.error).toBe("internal error");
    expect(body.errorId).toMatch(/^[0-9a-f]{12}$/);
    expect(seen).toEqual([[dbError, { errorId: body.errorId, method: "GET", path: "/api/overview" }]]);
  });

  it("answers a throw from authorize without its message, to a client nobody has signed in", async () => {
    const seen: unknown[] = [];
    const base = await serveDashboard({
      store,
      authorize: () => {
        throw new Error("db password=hunter2 leaked");
      },
      onError: (error) => void seen.push(error),
    });
    const reply = await callRaw(base, "/api/overview");
    expect(reply.status).toBe(500);
    expect(reply.body).not.toContain("hunter2");
    expect((seen[0] as Error).message).toBe("db password=hunter2 leaked");
  });

  it("logs to logger.error without onError, to stderr without either, and nowhere with logger: null", async () => {
    const logged: [string, Record<string, unknown> | undefined][] = [];
    const withLogger = await serve({ logger: { error: (message, fields) => void logged.push([message, fields]) } });
    const { errorId } = JSON.parse((await callRaw(withLogger, "/api/overview")).body) as { errorId: string };
    expect(logged).toEqual([["dashboard request failed", { error: dbError, errorId, method: "GET", path: "/api/overview" }]]);

    const writes: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => writes.push(String(chunk)) > 0);
    const plain = await serve({});
    const second = JSON.parse((await callRaw(plain, "/api/overview")).body) as { errorId: string };
    const silent = await serve({ logger: null });
    expect((await callRaw(silent, "/api/overview")).status).toBe(500);
    vi.restoreAllMocks();
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(/^cairnq error: dashboard request failed \{.*"password authentication failed/);
    expect(writes[0]).toContain(`"errorId":"${second.errorId}"`);
  });

  it("tells open pages a failing read's id, not its message, and reports it once per outage", async () => {
    const seen: DashboardErrorInfo[] = [];
    const base = await serve({ pollIntervalMs: 100, onError: (_error, info) => void seen.push(info) });
    const frames = await new Promise<string>((resolve, reject) => {
      const req = request(`${base}/api/events`, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
          if (text.split("event: problem").length > 3) {
            req.destroy();
            resolve(text);
          }
        });
      });
      req.once("error", reject);
      req.end();
    });
    expect(frames).not.toContain("hunter2");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe("POLL");
    expect(frames).toContain(`"message":"cannot read the database (error ${seen[0]?.errorId}; see the server's log)"`);
  });

  it("sends a throw or rejection from onError to the logger, and never throws itself", async () => {
    const logged: string[] = [];
    const logger = { error: (message: string) => void logged.push(message) };
    const throwing = createErrorReporter(() => {
      throw new Error("hook broke");
    }, logger);
    expect(throwing(dbError, { method: "GET", path: "/" })).toMatch(/^[0-9a-f]{12}$/);
    const rejecting = createErrorReporter(() => Promise.reject(new Error("hook broke later")), logger);
    rejecting(dbError, { method: "GET", path: "/" });
    await new Promise((resolve) => setImmediate(resolve));
    expect(logged).toEqual(["dashboard onError threw", "dashboard onError threw"]);
    const brokenLogger = createErrorReporter(undefined, {
      error: () => {
        throw new Error("logger broke");
      },
    });
    expect(() => brokenLogger(dbError, { method: "GET", path: "/" })).not.toThrow();
  });
});
