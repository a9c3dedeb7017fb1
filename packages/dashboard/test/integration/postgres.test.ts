/**
 * The handler over HTTP on a real Postgres schema: live updates pushed by
 * LISTEN/NOTIFY (not only polled), bulk cancel and retry, and the query
 * plans of the task list's pages on a large table (keyset over indexes,
 * never a sequential scan), read with auto_explain from the very
 * statements the dashboard runs.
 */
import type { IncomingMessage } from "node:http";
import { request } from "node:http";
import { PostgresStore } from "@cairnq/store-postgres";
import { PgAdmin, randomSchemaName } from "@cairnq/test-support";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { pgDsn, runTask } from "../support/seed.js";
import { closeDashboards, serveDashboard } from "../support/serve.js";

const admin = new PgAdmin();
const schemas: string[] = [];
const stores: PostgresStore[] = [];
const pools: pg.Pool[] = [];

/** A store in a fresh schema; `pool(schema)` gives it a pool of the test's own (the schema then exists first). */
async function freshStore(options: { pool?: (schema: string) => pg.Pool } = {}): Promise<PostgresStore> {
  const schema = randomSchemaName("cairnq_dash_pg");
  schemas.push(schema);
  if (options.pool !== undefined) await admin.q(`CREATE SCHEMA "${schema}"`);
  const store = new PostgresStore(options.pool?.(schema) ?? pgDsn(), { schema });
  stores.push(store);
  await store.connect();
  return store;
}

function serve(store: PostgresStore, pollIntervalMs = 2000): Promise<string> {
  return serveDashboard({ store, pollIntervalMs });
}

function post(base: string, path: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", origin: base } }, (res: IncomingMessage) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

/** Opens the event stream and resolves each time a frame matching `until` has arrived. */
function openEvents(base: string): { next: (until: RegExp) => Promise<string>; close: () => void } {
  let text = "";
  const waiters: { until: RegExp; resolve: (frame: string) => void }[] = [];
  const check = (): void => {
    for (const w of [...waiters]) {
      const m = w.until.exec(text);
      if (m === null) continue;
      text = text.slice(m.index + m[0].length);
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m[0]);
    }
  };
  const req = request(`${base}/api/events`, (res) => {
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      text += chunk;
      check();
    });
  });
  req.on("error", () => {});
  req.end();
  return {
    next: (until) =>
      new Promise((resolve) => {
        waiters.push({ until, resolve });
        check();
      }),
    close: () => req.destroy(),
  };
}

afterEach(closeDashboards);

afterAll(async () => {
  for (const store of stores) await store.close();
  for (const pool of pools) await pool.end();
  for (const schema of schemas) await admin.dropSchema(schema);
  await admin.close();
});

describe("dashboard on Postgres", () => {
  it("pushes live updates from LISTEN/NOTIFY: a submit and a finish reach the event stream with polling off", async () => {
    const store = await freshStore();
    // A poll every 10 minutes: any tick within the test came through LISTEN. (NOTIFY channels are shared by
    // every schema of the database, so another test's signal may arrive first; either proves the push path.)
    const base = await serve(store, 600_000);
    const events = openEvents(base);
    const pushedTick = /event: tick\ndata: \{"changed":true,"reason":"(queued|done)"\}\n\n/;
    try {
      expect(await events.next(/event: hello\ndata: (.*)\n\n/)).toContain('{"pushWakeups":true}');
      // The store's LISTEN connection may still be starting: keep submitting until a push arrives.
      const pushed = events.next(pushedTick);
      let arrived = false;
      void pushed.then(() => (arrived = true));
      for (let i = 0; i < 100 && !arrived; i++) {
        await store.submit({ name: "email", queue: "push" });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await pushed;
      // Listening for sure now: a finish is pushed too.
      const running = await runTask(store, "long", "push-done");
      const finished = events.next(pushedTick);
      await store.complete({ taskId: running.id, workerId: running.worker_id ?? "", result: 1 });
      await finished;
    } finally {
      events.close();
    }
  });

  it("cancels in bulk (queued ones end canceled, running ones are flagged) and retries in bulk, by filter, saying how many", async () => {
    const store = await freshStore();
    const base = await serve(store);
    const queued = await Promise.all([1, 2, 3].map((i) => store.submit({ name: "digest", queue: "bulk", payload: { i } })));
    const elsewhere = await store.submit({ name: "digest", queue: "other" });
    const running = await runTask(store, "long", "bulk");

    const noStatus = await post(base, "/api/bulk/cancel", { filter: { queue: "bulk" } });
    expect(noStatus.status).toBe(400);
    expect(JSON.parse(noStatus.body).error).toBe("bulk cancel needs filter.status queued or running");

    expect(JSON.parse((await post(base, "/api/bulk/cancel", { filter: { status: "queued", queue: "bulk" } })).body)).toEqual({ changed: 3 });
    for (const t of queued) expect((await store.get(t.id))?.status).toBe("canceled");
    expect((await store.get(elsewhere.id))?.status).toBe("queued");
    expect(JSON.parse((await post(base, "/api/bulk/cancel", { filter: { status: "running", queue: "bulk" } })).body)).toEqual({ changed: 1 });
    expect(await store.get(running.id)).toMatchObject({ status: "running", cancel_requested_at_ms: expect.any(Number) });

    expect(JSON.parse((await post(base, "/api/bulk/retry", { filter: { status: "canceled", queue: "bulk", name: "digest" } })).body)).toEqual({ changed: 3 });
    for (const t of queued) expect((await store.get(t.id))?.status).toBe("queued");
  });

  it("pages the task list by keyset over indexes on 200,000 rows: no sequential scan, no sort of the table, the same plan at any depth", async () => {
    // Every statement of this pool's sessions sends its plan back as a NOTICE.
    const plans: string[] = [];
    const explained = (schema: string): pg.Pool => {
      const pool = new pg.Pool({
        connectionString: pgDsn(),
        max: 2,
        options:
          `-c search_path="${schema}" -c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 ` +
          "-c auto_explain.log_level=notice -c client_min_messages=notice",
      });
      pools.push(pool);
      pool.on("error", () => {});
      pool.on("connect", (client) => client.on("notice", (notice) => plans.push(notice.message ?? "")));
      return pool;
    };
    const store = await freshStore({ pool: explained });
    const schema = schemas.at(-1) as string;
    const n = 200_000;
    const status = "CASE WHEN i % 100 = 0 THEN 'failed' WHEN i % 100 = 1 THEN 'queued' WHEN i % 100 = 2 THEN 'running' ELSE 'succeeded' END";
    await admin.q(
      `INSERT INTO "${schema}".cairnq_tasks (id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms, root_id,
         correlation_id, created_at_ms, updated_at_ms, completed_at_ms)
       SELECT 'task_0' || lpad(i::text, 25, '0'), 'n' || (i % 50), 'q' || (i % 20), ${status}, '{}'::jsonb, '{}'::jsonb, 1, 3, 0, i,
         'task_0' || lpad(i::text, 25, '0'), 'c' || (i % 1000), i, i, CASE WHEN i % 100 IN (1, 2) THEN NULL ELSE i END
       FROM generate_series(1, ${n}) AS i`,
    );
    await admin.q(`ANALYZE "${schema}".cairnq_tasks`);
    const base = await serve(store);
    const id = (i: number): string => `task_0${String(i).padStart(25, "0")}`;

    const planOf = async (filter: Record<string, string>, beforeId?: string): Promise<string> => {
      plans.length = 0;
      const reply = await post(base, "/api/tasks", { filter, limit: 50, ...(beforeId === undefined ? {} : { beforeId }) });
      expect(reply.status, reply.body).toBe(200);
      expect(JSON.parse(reply.body).tasks.length).toBeGreaterThan(0);
      const plan = plans.find((p) => p.includes("cairnq_tasks") && p.includes("ORDER BY id DESC"));
      if (plan === undefined) throw new Error(`no plan of the list statement among:\n${plans.join("\n---\n")}`);
      return plan;
    };

    for (const beforeId of [undefined, id(n / 2), id(1000)]) {
      const where = `beforeId ${beforeId ?? "none"}`;
      const all = await planOf({}, beforeId);
      expect(all, where).toContain("Index Scan Backward using cairnq_tasks_pkey");
      expect(all, where).not.toMatch(/Seq Scan|Sort/);
      const filters: Record<string, string>[] = [{ status: "succeeded" }, { status: "failed" }, { queue: "q7" }, { queue: "q1", status: "queued" }, { name: "n3" }, { correlationId: "c42" }];
      for (const filter of filters) {
        const plan = await planOf(filter, beforeId);
        expect(plan, `${JSON.stringify(filter)}, ${where}`).not.toContain("Seq Scan");
        expect(plan, `${JSON.stringify(filter)}, ${where}`).toMatch(/Index (Only )?Scan|Bitmap Index Scan/);
      }
    }
  }, 120_000);
});
