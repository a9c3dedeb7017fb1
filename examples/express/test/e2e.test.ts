/**
 * End to end: the API (src/server.ts) and the worker (src/worker.ts) as two
 * real processes, driven over HTTP as a client would — once on a temporary
 * SQLite file, once on Postgres (`CAIRNQ_TEST_PG_DSN` as `DATABASE_URL`, a
 * fresh schema as `CAIRNQ_PG_SCHEMA`, dropped afterwards). The source images
 * come from a small HTTP server in this test.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ThumbnailResult } from "../src/tasks.js";
import { THUMBNAILS_QUEUE } from "../src/tasks.js";
import type { Started } from "@cairnq/test-support";
import { PgAdmin, pgDsn, randomSchemaName, startNode } from "@cairnq/test-support";

const exampleDir = fileURLToPath(new URL("..", import.meta.url));

/** A 640×480 "PNG": the signature and IHDR the worker reads, then filler bytes. */
function fakePng(width: number, height: number, totalBytes: number): Buffer {
  const data = Buffer.alloc(totalBytes, 7);
  Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").copy(data, 0);
  data.writeUInt32BE(width, 16);
  data.writeUInt32BE(height, 20);
  return data;
}
const catPng = fakePng(640, 480, 20_000);

/** The source-image server: /cat.png, /slow.png (never finishes), /late.png (404 until "uploaded"). */
let lateUploaded = false;
const images: Server = createServer((req, res) => {
  if (req.url === "/cat.png" || (req.url === "/late.png" && lateUploaded)) {
    res.writeHead(200, { "content-type": "image/png", "content-length": catPng.length });
    return void res.end(catPng);
  }
  if (req.url === "/slow.png") {
    // 1 MB at 2 KB per 50 ms: about 25 s, far longer than the test waits.
    res.writeHead(200, { "content-type": "image/png", "content-length": 1_000_000 });
    res.write(catPng.subarray(0, 24));
    const drip = setInterval(() => res.write(Buffer.alloc(2_000)), 50);
    return void res.on("close", () => clearInterval(drip));
  }
  res.writeHead(404).end();
});
let imagesUrl: string;

beforeAll(async () => {
  images.listen(0, "127.0.0.1");
  await new Promise((resolve) => images.once("listening", resolve));
  imagesUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});

afterAll(async () => {
  images.closeAllConnections();
  await new Promise((resolve) => images.close(resolve));
});

/** What GET /tasks/:id answers (the fields these tests read). */
interface TaskView {
  id: string;
  status: string;
  progress: number | null;
  message: string | null;
  attempt: number;
  cancelRequested: boolean;
  result: ThumbnailResult | null;
  error: unknown;
}

/** Where one run's two processes meet: the environment both get, and how to clean up after them. */
interface Database {
  env: NodeJS.ProcessEnv;
  dispose(): Promise<void>;
}

/** A temporary SQLite file. */
async function sqliteDatabase(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), "cairnq-example-express-"));
  const env: NodeJS.ProcessEnv = { ...process.env, CAIRNQ_SQLITE_PATH: join(dir, "cairnq.db") };
  delete env.DATABASE_URL; // the SQLite run, whatever the shell has
  delete env.CAIRNQ_PG_SCHEMA;
  return { env, dispose: async () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A fresh schema on the test database (`CAIRNQ_TEST_PG_DSN`, which the root
 * `pnpm test` provides). The processes create it on first connect; it is
 * dropped afterwards. Never skipped: without a reachable database this fails.
 */
async function postgresDatabase(): Promise<Database> {
  const dsn = pgDsn();
  const admin = new PgAdmin();
  await admin.client(); // fails here, saying why, when the database does not answer
  const schema = randomSchemaName("cq_express");
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: dsn, CAIRNQ_PG_SCHEMA: schema };
  delete env.CAIRNQ_SQLITE_PATH;
  return {
    env,
    async dispose() {
      try {
        await admin.dropSchema(schema);
      } finally {
        await admin.close();
      }
    },
  };
}

describe.each([
  { label: "SQLite", open: sqliteDatabase },
  { label: "Postgres", open: postgresDatabase },
])("examples/express: API + worker processes on $label", ({ open }) => {
  let database: Database | undefined;
  let api: Started;
  let worker: Started;
  let apiUrl: string;

  beforeAll(async () => {
    lateUploaded = false;
    database = await open();
    const env: NodeJS.ProcessEnv = { ...database.env, PORT: "0" };
    worker = startNode("worker", ["--import", "tsx", "src/worker.ts"], { cwd: exampleDir, env });
    api = startNode("api", ["--import", "tsx", "src/server.ts"], { cwd: exampleDir, env });
    const [, port] = await api.waitFor(/API listening on http:\/\/localhost:(\d+)/);
    apiUrl = `http://127.0.0.1:${port}`;
    await worker.waitFor(/worker \S+ running/);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    await database?.dispose();
  });

  /** One API call; `T` is the JSON body's shape (a task, or `{ error }` on a 4xx). */
  async function request<T = TaskView>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  /** Polls GET /tasks/:id until `done(view)`, as a client would; fails with both processes' output. */
  async function pollTask(id: string, done: (task: TaskView) => boolean, timeoutMs = 15_000): Promise<TaskView> {
    const deadline = Date.now() + timeoutMs;
    let last: TaskView | undefined;
    while (Date.now() < deadline) {
      const { status, body } = await request("GET", `/tasks/${id}`);
      expect(status).toBe(200);
      last = body;
      if (done(last)) return last;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`task ${id} did not get there within ${timeoutMs}ms; last seen ${JSON.stringify(last)}\n${api.output()}\n${worker.output()}`);
  }

  it("submits idempotently and returns the result the worker produced", async () => {
    const first = await request("POST", "/thumbnails", { url: `${imagesUrl}/cat.png`, width: 320 }, { "Idempotency-Key": "cat-320" });
    expect(first.status).toBe(202);
    expect(first.body.status).toBe("queued");
    const again = await request("POST", "/thumbnails", { url: `${imagesUrl}/cat.png`, width: 320 }, { "Idempotency-Key": "cat-320" });
    expect(again.body.id).toBe(first.body.id);

    const done = await pollTask(first.body.id, (t) => t.status === "succeeded");
    expect(done.progress).toBe(1);
    expect(done.result).toEqual({
      source: {
        url: `${imagesUrl}/cat.png`,
        bytes: catPng.length,
        contentType: "image/png",
        sha256: createHash("sha256").update(catPng).digest("hex"),
        width: 640,
        height: 480,
      },
      thumbnail: { key: expect.stringMatching(/^thumbnails\/[0-9a-f]{16}-320w$/), width: 320, height: 240 },
    });

    // Once it succeeded, the same key still answers with the same task and its result.
    const later = await request("POST", "/thumbnails", { url: `${imagesUrl}/cat.png`, width: 320, idempotencyKey: "cat-320" });
    expect(later.body).toMatchObject({ id: first.body.id, status: "succeeded" });
    // Another key is another task.
    const other = await request("POST", "/thumbnails", { url: `${imagesUrl}/cat.png`, width: 320 }, { "Idempotency-Key": "cat-320-b" });
    expect(other.body.id).not.toBe(first.body.id);
  });

  it("cancels a slow task while the worker runs it", async () => {
    const { body: submitted } = await request("POST", "/thumbnails", { url: `${imagesUrl}/slow.png` });
    const running = await pollTask(submitted.id, (t) => t.status === "running" && /^downloaded/.test(t.message ?? ""));
    expect(running.progress).toBeGreaterThan(0);

    const cancel = await request("POST", `/tasks/${submitted.id}/cancel`);
    expect(cancel.status).toBe(202);
    expect(cancel.body).toMatchObject({ status: "running", cancelRequested: true });
    const canceled = await pollTask(submitted.id, (t) => t.status === "canceled", 5_000);
    expect(canceled.result).toBeNull();

    const again = await request("POST", `/tasks/${submitted.id}/cancel`);
    expect(again.status).toBe(409);
  });

  it("retries a failed task, which then succeeds", async () => {
    const { body: submitted } = await request("POST", "/thumbnails", { url: `${imagesUrl}/late.png`, width: 64 });
    const failed = await pollTask(submitted.id, (t) => t.status === "failed");
    expect(failed.error).toMatchObject({ code: "source_unavailable", retryable: false, details: { status: 404 } });
    expect(failed.attempt).toBe(1);

    lateUploaded = true;
    const retry = await request("POST", `/tasks/${submitted.id}/retry`);
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ id: submitted.id, status: "queued", error: null });
    const done = await pollTask(submitted.id, (t) => t.status === "succeeded");
    expect(done.attempt).toBe(2);
    expect(done.result?.thumbnail).toMatchObject({ width: 64, height: 48 });

    expect((await request("POST", `/tasks/${submitted.id}/retry`)).status).toBe(409);
  });

  it("answers 400 for a bad request and 404 for an unknown task", async () => {
    const bad = await request<{ error: string }>("POST", "/thumbnails", { url: "not a url" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/body\.url/);
    expect((await request("GET", "/tasks/task_01NOPE")).status).toBe(404);
  });

  it("serves the dashboard under /admin: the page, the counts, the task list, and only same-origin POSTs", async () => {
    const bare = await fetch(`${apiUrl}/admin`, { redirect: "manual" });
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("/admin/");
    const page = await fetch(`${apiUrl}/admin/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>CairnQ dashboard</title>");
    expect((await fetch(`${apiUrl}/admin/assets/dashboard.js`)).headers.get("content-type")).toBe("text/javascript; charset=utf-8");

    const overview = (await (await fetch(`${apiUrl}/admin/api/overview`)).json()) as { queues: Record<string, Record<string, number>> };
    const counts = overview.queues[THUMBNAILS_QUEUE];
    expect(counts?.succeeded).toBeGreaterThanOrEqual(1);
    expect(counts?.canceled).toBeGreaterThanOrEqual(1);

    const list = await fetch(`${apiUrl}/admin/api/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: apiUrl },
      body: JSON.stringify({ filter: { status: "canceled" } }),
    });
    expect(list.status).toBe(200);
    const { tasks } = (await list.json()) as { tasks: { id: string; status: string }[] };
    expect(tasks.length).toBeGreaterThanOrEqual(1);
    expect(tasks.every((t) => t.status === "canceled")).toBe(true);

    // A cross-site page cannot make the dashboard retry anything.
    const forged = await fetch(`${apiUrl}/admin/api/tasks/${tasks[0]?.id}/retry`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "https://evil.example" },
      body: "{}",
    });
    expect(forged.status).toBe(403);
    // From the dashboard's own page the same POST reaches the handler, which refuses only what the task's status rules out.
    const succeeded = (await (
      await fetch(`${apiUrl}/admin/api/tasks`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: apiUrl },
        body: JSON.stringify({ filter: { status: "succeeded" }, limit: 1 }),
      })
    ).json()) as { tasks: { id: string }[] };
    const own = await fetch(`${apiUrl}/admin/api/tasks/${succeeded.tasks[0]?.id}/retry`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: apiUrl },
      body: "{}",
    });
    expect(own.status).toBe(409);
    expect(((await own.json()) as { error: string }).error).toContain("is succeeded and cannot be retried");
    const detail = (await (await fetch(`${apiUrl}/admin/api/tasks/${tasks[0]?.id}`)).json()) as { task: { status: string }; explanation: { state: string } };
    expect(detail.task.status).toBe("canceled");
    expect(detail.explanation.state).toBe("canceled");
  });

  it("stops both processes on SIGTERM", async () => {
    const [apiExit, workerExit] = await Promise.all([api.stop(), worker.stop()]);
    expect(apiExit, api.output()).toEqual({ code: 0, signal: null });
    expect(workerExit, worker.output()).toEqual({ code: 0, signal: null });
    expect(api.output()).toMatch(/API stopped/);
    expect(worker.output()).toMatch(/worker stopped/);
  });
});
