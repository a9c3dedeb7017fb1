/**
 * `POST /api/groups`: counts by group for one task name, on a SQLite file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { closeDashboards, serveDashboard } from "./support/serve.js";

let dir: string;
let store: SQLiteStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-dashboard-groups-"));
  store = new SQLiteStore(join(dir, "cairnq.db"));
  for (let i = 0; i < 3; i++) await store.submit({ name: "export", group: "acme" });
  await store.submit({ name: "export", group: "globex" });
  await store.claim({ queues: ["default"], workerId: "worker_dash", names: ["export"], limit: 5, flowControl: { export: { groupConcurrency: 1 } } });
});

afterEach(closeDashboards);

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function post(base: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/api/groups`, { method: "POST", headers: { "content-type": "application/json", origin: base } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

it("answers queued and running per group of a name, most queued first", async () => {
  const base = await serveDashboard({ store });
  const reply = await post(base, { name: "export" });
  expect(reply.status).toBe(200);
  expect(JSON.parse(reply.body)).toEqual({
    name: "export",
    groups: [
      { group: "acme", queued: 2, running: 1 },
      { group: "globex", queued: 0, running: 1 },
    ],
  });
  expect(JSON.parse((await post(base, { name: "export", limit: 1 })).body).groups).toHaveLength(1);
  expect((await post(base, { limit: 1 })).status).toBe(400);
  expect((await post(base, { name: "export", limit: 0 })).status).toBe(400);
  // A JSON integer only: Number() used to read these as page sizes.
  for (const limit of ["0x10", true, [3], " 2 ", "1e1"]) {
    const res = await post(base, { name: "export", limit });
    expect(res.status, JSON.stringify(limit)).toBe(400);
    expect(JSON.parse(res.body).error).toMatch(/^limit must be a JSON integer from 1 to \d+, got /);
  }
});

it("answers 501 on a store that does not record groups", async () => {
  const plain = new SQLiteStore(join(dir, "plain.db"));
  Object.defineProperty(plain, "capabilities", { value: { ...plain.capabilities, groups: false } });
  try {
    const base = await serveDashboard({ store: plain });
    const reply = await post(base, { name: "export" });
    expect(reply.status).toBe(501);
    expect(reply.body).toContain("does not record groups");
  } finally {
    await closeDashboards();
    await plain.close();
  }
});
