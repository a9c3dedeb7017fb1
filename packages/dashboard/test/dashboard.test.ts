/**
 * The handler over HTTP, on a real SQLite file: routes, the same-origin
 * check on POSTs, `authorize`, read-only mode, the security headers, the
 * keyset-paged list, and that the page loads nothing from another origin.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DashboardAction, DashboardSettings } from "@cairnq/dashboard";
import { createDashboard } from "@cairnq/dashboard";
import type { TaskStepStore, TaskStore } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { InvalidArgument } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { failTask, runTask } from "./support/seed.js";
import { closeDashboards, serveDashboard } from "./support/serve.js";

let dir: string;
let store: TaskStore;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-dashboard-http-"));
  store = new SQLiteStore(join(dir, "cairnq.db"));
});

afterEach(closeDashboards);

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function serve(options: DashboardSettings = {}): Promise<string> {
  return serveDashboard({ store, ...options });
}

interface Reply {
  status: number;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A raw request (fetch would not let a test set Origin or Host freely). */
function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? "GET", headers: init.headers ?? {} }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.once("error", reject);
    req.end(init.body === undefined ? undefined : JSON.stringify(init.body));
  });
}

function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return call(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", origin: base, ...headers }, body });
}

describe("createDashboard over HTTP", () => {
  it("serves the page with a strict CSP and only its own assets", async () => {
    const base = await serve();
    const page = await call(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    const refs = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.sort()).toEqual(["./", "assets/dashboard.css", "assets/dashboard.js", "assets/favicon.svg", "assets/favicon.svg"]);
    const scripts = ["/assets/dashboard.js", "/assets/charts.js", "/assets/dom.js"];
    for (const path of [...scripts, "/assets/dashboard.css", "/assets/favicon.svg"]) {
      const asset = await call(`${base}${path}`);
      expect(asset.status, path).toBe(200);
      // No fetch, import or url() to another origin (the SVG namespace is an identifier, not a request).
      expect(asset.body.replaceAll("http://www.w3.org/2000/svg", ""), path).not.toMatch(/https?:\/\/|url\(\s*["']?\/\//);
    }
    for (const path of scripts) {
      const body = (await call(`${base}${path}`)).body;
      expect(body, path).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
      // Every module a script imports is one the handler serves, by a relative path (so it resolves under any mount).
      for (const [, specifier = ""] of body.matchAll(/^import [^"]+ from "([^"]+)";$/gm)) {
        expect(specifier, path).toMatch(/^\.\/[a-z-]+\.js$/);
        expect(scripts, `${path} imports ${specifier}`).toContain(`/assets/${specifier.slice(2)}`);
      }
    }
    expect((await call(`${base}/assets/dashboard.js`)).body).toContain('from "./charts.js"');
  });

  it("redirects a mount path without its trailing slash, so relative URLs resolve under it", async () => {
    const base = await serve({ basePath: "/admin" });
    const reply = await call(`${base}/admin`);
    expect(reply.status).toBe(308);
    expect(reply.headers.location).toBe("/admin/");
    expect((await call(`${base}/admin?view=1`)).headers.location).toBe("/admin/?view=1");
    expect((await call(`${base}/admin/`)).status).toBe(200);
    expect((await call(`${base}/elsewhere/`)).status).toBe(404);
    expect((await call(`${base}/admin/api/overview`)).status).toBe(200);
  });

  it("answers counts, a keyset-paged list filtered by body (not URL), and a task with its explanation", async () => {
    const base = await serve();
    const failed = await failTask(store, "charge", "paging", { type: "TaskError", code: "declined", message: "no", retryable: false, details: {} });
    const keyed = await store.submit({ name: "keyed", queue: "paging", key: "customer-42@example.com", correlationId: "order-7" });
    for (let i = 0; i < 4; i++) await store.submit({ name: "bulk", queue: "paging", payload: { i } });

    const overview = JSON.parse((await call(`${base}/api/overview`)).body);
    expect(overview.queues.paging).toEqual({ queued: 5, running: 0, succeeded: 0, failed: 1, canceled: 0 });

    const seen: string[] = [];
    let beforeId: string | null = null;
    do {
      const page = JSON.parse((await post(base, "/api/tasks", { filter: { queue: "paging" }, limit: 4, ...(beforeId ? { beforeId } : {}) })).body);
      seen.push(...page.tasks.map((t: { id: string }) => t.id));
      expect(page.tasks.every((t: Record<string, unknown>) => !("payload" in t))).toBe(true);
      beforeId = page.nextBeforeId;
    } while (beforeId !== null);
    expect(seen).toHaveLength(6);
    expect(seen).toEqual([...seen].sort().reverse());
    // Six tasks in pages of three: the second page is exactly full and the last, so it offers no next page.
    const first = JSON.parse((await post(base, "/api/tasks", { filter: { queue: "paging" }, limit: 3 })).body);
    const last = JSON.parse((await post(base, "/api/tasks", { filter: { queue: "paging" }, limit: 3, beforeId: first.nextBeforeId })).body);
    expect([first.tasks.length, first.nextBeforeId === null, last.tasks.length, last.nextBeforeId]).toEqual([3, false, 3, null]);

    const byKey = JSON.parse((await post(base, "/api/tasks", { filter: { key: "customer-42@example.com" } })).body);
    expect(byKey.tasks.map((t: { id: string }) => t.id)).toEqual([keyed.id]);
    const byCorrelation = JSON.parse((await post(base, "/api/tasks", { filter: { correlationId: "order-7", status: "queued" } })).body);
    expect(byCorrelation.tasks.map((t: { id: string }) => t.id)).toEqual([keyed.id]);
    expect((await post(base, "/api/tasks", { filter: { status: "done" } })).status).toBe(400);
    expect((await post(base, "/api/tasks", { filter: { payload: "x" } })).status).toBe(400);
    // limit is a JSON integer in range, never coerced; a garbage cursor is 400 in every filter mode.
    for (const limit of ["0x10", true, [3], " 2 ", "1e1", "4", 2.5, 0, 201, null]) {
      const res = await post(base, "/api/tasks", { filter: { queue: "paging" }, limit });
      expect(res.status, JSON.stringify(limit)).toBe(400);
      expect(JSON.parse(res.body).error).toMatch(/^limit must be a JSON integer from 1 to 200, got /);
    }
    for (const filter of [{ key: "customer-42@example.com" }, { queue: "paging" }, {}]) {
      const res = await post(base, "/api/tasks", { filter, beforeId: "garbage" });
      expect(res.status, JSON.stringify(filter)).toBe(400);
      expect(JSON.parse(res.body).error).toBe("beforeId must be a task id");
    }

    const detail = JSON.parse((await call(`${base}/api/tasks/${failed.id}`)).body);
    expect(detail.task.error.code).toBe("declined");
    expect(detail.explanation).toMatchObject({ taskId: failed.id, state: "failed" });
    expect((await call(`${base}/api/tasks/task_nope`)).status).toBe(404);
  });

  it("shows a task's children however many newer tasks its tree holds, and says when the list is cut", async () => {
    const base = await serve();
    const root = await store.submit({ name: "tree.root", queue: "tree" });
    const child = await store.submit({ name: "tree.child", queue: "tree", parentId: root.id, rootId: root.id });
    const own: string[] = [];
    for (let i = 0; i < 3; i++) own.push((await store.submit({ name: "tree.grandchild", queue: "tree", parentId: child.id, rootId: root.id })).id);
    for (let i = 0; i < 250; i++) await store.submit({ name: "tree.sibling", queue: "tree", parentId: root.id, rootId: root.id });
    const detailOf = async (id: string) =>
      JSON.parse((await call(`${base}/api/tasks/${id}`)).body) as { children: { id: string }[]; childrenCut: string | null; childrenLimits: { children: number; treeRows: number } };

    const ofChild = await detailOf(child.id);
    expect(ofChild.children.map((c) => c.id).sort()).toEqual([...own].sort());
    expect(ofChild.childrenCut).toBeNull();
    const ofRoot = await detailOf(root.id);
    expect(ofRoot.children).toHaveLength(200);
    expect(ofRoot.childrenCut).toBe("children");
    // The bounds the page's note names come from the server, not from the page's own copy of them.
    expect(ofRoot.childrenLimits).toEqual({ children: 200, treeRows: 5000 });
    const leaf = await detailOf(own[0] ?? "");
    expect(leaf).toMatchObject({ children: [], childrenCut: null });
  });

  it("shows a task's durable-steps journal, and what a parked task waits for, in its detail", async () => {
    const base = await serve();
    const steps = store as TaskStepStore;
    const task = await store.submit({ name: "order.fulfil", queue: "journal" });
    const workerId = newWorkerId();
    const [claimed] = await store.claim({ queues: ["journal"], workerId, leaseMs: 30_000 });
    const owned = { taskId: task.id, workerId, attempt: claimed?.attempt ?? 1 };
    await steps.recordStep({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: { chargeId: "ch_1" } });
    await steps.parkStep({ ...owned, name: "approval", kind: "wait", seq: 2, message: "approval", delayMs: 3_600_000 });
    const detail = JSON.parse((await call(`${base}/api/tasks/${task.id}`)).body);
    expect(detail.explanation.state).toBe("parked");
    expect(detail.explanation.summary).toContain("waiting for a message 'approval'");
    expect(detail.explanation.steps.map((s: { name: string; kind: string; status: string }) => `${s.name} ${s.kind} ${s.status}`)).toEqual(["charge step done", "approval wait waiting"]);
  });

  it("refuses cross-origin and non-JSON POSTs, and GETs to mutations", async () => {
    const base = await serve();
    const task = await failTask(store, "charge", "origin", { type: "TaskError", code: "x", message: "x", retryable: false, details: {} });
    const path = `/api/tasks/${task.id}/retry`;
    expect((await post(base, path, {}, { origin: "https://evil.example" })).status).toBe(403);
    expect((await call(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: {} })).status).toBe(403);
    expect((await post(base, path, {}, { "content-type": "text/plain" })).status).toBe(415);
    expect((await call(`${base}${path}`)).status).toBe(405);
    expect((await store.get(task.id))?.status).toBe("failed");
    // Same origin via Sec-Fetch-Site (no Origin header) works.
    const ok = await call(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", "sec-fetch-site": "same-origin" }, body: {} });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ changed: 1, task: { id: task.id, status: "queued" } });
    const again = await post(base, path, {});
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body).error).toContain("only failed or canceled tasks can be");
  });

  it("answers 404 for a task id with a malformed percent-escape, as for any other bad id", async () => {
    const base = await serve();
    const notAnId = { status: 404, body: '{"error":"not a task id"}' };
    expect(await call(`${base}/api/tasks/%E0%A4%A`).then(({ status, body }) => ({ status, body }))).toEqual(notAnId);
    expect(await post(base, "/api/tasks/%E0%A4%A/retry", {}).then(({ status, body }) => ({ status, body }))).toEqual(notAnId);
    expect((await post(base, "/api/tasks/%/cancel", {})).status).toBe(404);
  });

  it("cancels a running task (the flag) and a queued one", async () => {
    const base = await serve();
    const running = await runTask(store, "long", "cancel");
    const queued = await store.submit({ name: "later", queue: "cancel" });
    const flagged = JSON.parse((await post(base, `/api/tasks/${running.id}/cancel`, {})).body);
    expect(flagged.task).toMatchObject({ status: "running", cancel_requested: true });
    const canceled = JSON.parse((await post(base, `/api/tasks/${queued.id}/cancel`, {})).body);
    expect(canceled.task.status).toBe("canceled");
  });

  it("read-only mode refuses every mutation and says so on the page", async () => {
    const base = await serve({ readOnly: true });
    const task = await failTask(store, "charge", "ro", { type: "TaskError", code: "x", message: "x", retryable: false, details: {} });
    const reply = await post(base, `/api/tasks/${task.id}/retry`, {});
    expect(reply.status).toBe(403);
    expect(JSON.parse(reply.body).error).toBe("this dashboard is read-only");
    expect((await post(base, "/api/bulk/retry", { filter: { status: "failed" } })).status).toBe(403);
    expect((await store.get(task.id))?.status).toBe("failed");
    expect((await call(`${base}/`)).body).toContain('data-read-only="true"');
    expect(JSON.parse((await call(`${base}/api/overview`)).body).readOnly).toBe(true);
  });

  it("asks authorize for every request, with the action", async () => {
    const asked: DashboardAction[] = [];
    const base = await serve({
      authorize: (req, action) => {
        asked.push(action);
        return req.headers["x-admin"] === "yes" && action !== "cancel";
      },
    });
    const task = await failTask(store, "charge", "auth", { type: "TaskError", code: "x", message: "x", retryable: false, details: {} });
    expect((await call(`${base}/api/overview`)).status).toBe(403);
    expect((await call(`${base}/`, { headers: { "x-admin": "yes" } })).status).toBe(200);
    expect((await post(base, `/api/tasks/${task.id}/cancel`, {}, { "x-admin": "yes" })).status).toBe(403);
    expect((await post(base, `/api/tasks/${task.id}/retry`, {}, { "x-admin": "yes" })).status).toBe(200);
    expect(asked).toEqual(["read", "read", "cancel", "retry"]);
  });

  it("answers only the allowed Host names when given", async () => {
    const base = await serve({ allowedHosts: ["dashboard.test"] });
    expect((await call(`${base}/api/overview`)).status).toBe(421);
    expect((await call(`${base}/api/overview`, { headers: { host: "dashboard.test" } })).status).toBe(200);
  });

  it("streams server-sent events: hello, then ticks", async () => {
    const base = await serve({ pollIntervalMs: 100 });
    const frames = await new Promise<string>((resolve, reject) => {
      const req = request(`${base}/api/events`, (res) => {
        expect(res.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
          if (text.includes("event: tick")) {
            req.destroy();
            resolve(text);
          }
        });
      });
      req.once("error", reject);
      req.end();
    });
    expect(frames).toMatch(/^retry: 3000\nevent: hello\ndata: \{"pushWakeups":false\}\n\n/);
    expect(frames).toContain('event: tick\ndata: {"changed":true,"reason":"poll"}');
  });

  it("rejects unknown options and a missing store with InvalidArgument", () => {
    expect(() => createDashboard({ store, readonly: true } as never)).toThrow(InvalidArgument);
    expect(() => createDashboard({ store, readonly: true } as never)).toThrow(/valid options are store, client, readOnly/);
    expect(() => createDashboard({} as never)).toThrow(/exactly one of store or client/);
    expect(() => createDashboard({ store, pollIntervalMs: 5 })).toThrow(/pollIntervalMs/);
    expect(() => createDashboard({ store, basePath: "admin/" })).toThrow(/basePath/);
  });
});
