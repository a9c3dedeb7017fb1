/**
 * `GET <mount>/metrics` scraped over HTTP on a real SQLite file and a real
 * Postgres schema: the Prometheus text parses, `cairnq_tasks` matches a
 * count of the table itself, and `cairnq_oldest_queued_age_seconds` is the
 * age of the oldest due queued task (delayed ones do not count); and the
 * Activity charts' data (`GET /api/activity`) counts the same rows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task, TaskStore } from "@cairnq/protocol";
import { STATUSES } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { parsePrometheus, PgAdmin, randomSchemaName } from "@cairnq/test-support";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { failTask, pgDsn, runTask } from "../support/seed.js";
import { closeDashboards, serveDashboard } from "../support/serve.js";

interface Backend {
  readonly name: string;
  open(): Promise<TaskStore & { db: { selectFrom(table: string): unknown } }>;
  cleanUp(): Promise<void>;
}

const admin = new PgAdmin();
const dirs: string[] = [];
const schemas: string[] = [];
const stores: TaskStore[] = [];

const BACKENDS: Backend[] = [
  {
    name: "SQLite",
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "cairnq-metrics-"));
      dirs.push(dir);
      const store = new SQLiteStore(join(dir, "cairnq.db"));
      stores.push(store);
      await store.connect();
      return store;
    },
    cleanUp: () => Promise.resolve(),
  },
  {
    name: "Postgres",
    async open() {
      const schema = randomSchemaName("cairnq_metrics");
      schemas.push(schema);
      const store = new PostgresStore(pgDsn(), { schema });
      stores.push(store);
      await store.connect();
      return store;
    },
    async cleanUp() {
      for (const schema of schemas.splice(0)) await admin.q(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  },
];

afterEach(async () => {
  await closeDashboards();
  for (const store of stores.splice(0)) await store.close();
});

afterAll(async () => {
  for (const backend of BACKENDS) await backend.cleanUp();
  await admin.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Counts by queue and status, read from the table with a statement of the test's own. */
async function tableCounts(store: TaskStore & { db: unknown }): Promise<Map<string, number>> {
  type Db = {
    selectFrom(table: string): {
      select(columns: string[]): {
        select(fn: (eb: { fn: { countAll(): { as(name: string): unknown } } }) => unknown): {
          groupBy(columns: string[]): { execute(): Promise<{ queue: string; status: string; n: number | string }[]> };
        };
      };
    };
  };
  const rows = await (store.db as Db)
    .selectFrom("cairnq_tasks")
    .select(["queue", "status"])
    .select((eb) => eb.fn.countAll().as("n"))
    .groupBy(["queue", "status"])
    .execute();
  return new Map(rows.map((row) => [`cairnq_tasks{queue=${JSON.stringify(row.queue)},status=${JSON.stringify(row.status)}}`, Number(row.n)]));
}

async function scrape(base: string): Promise<{ status: number; type: string | null; text: string; atMs: [number, number] }> {
  const before = Date.now();
  const res = await fetch(`${base}/metrics`);
  const text = await res.text();
  return { status: res.status, type: res.headers.get("content-type"), text, atMs: [before, Date.now()] };
}

describe.each(BACKENDS)("GET /metrics on $name", (backend) => {
  it("serves Prometheus text whose task counts match the table and whose ages are the oldest due queued task's", async () => {
    const store = await backend.open();
    const due: Task[] = [];
    due.push(await store.submit({ name: "send", queue: "emails" }));
    await new Promise((resolve) => setTimeout(resolve, 30)); // the first task is measurably the oldest
    due.push(await store.submit({ name: "send", queue: "emails" }));
    await store.submit({ name: "send", queue: "emails", runAtDelayMs: 3_600_000 }); // delayed: queued, not due
    await store.submit({ name: "later", queue: "later", runAtDelayMs: 3_600_000 }); // a queue with nothing due
    await runTask(store, "work", "emails");
    await failTask(store, "bad", "emails", { code: "boom" });
    await failTask(store, "build", "reports", { code: "boom" });

    const base = await serveDashboard({ store, metricsCacheMs: 0 });
    const { status, type, text, atMs } = await scrape(base);
    expect(status).toBe(200);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    const { samples, types } = parsePrometheus(text);
    expect(types.get("cairnq_tasks")).toBe("gauge");
    expect(types.get("cairnq_oldest_queued_age_seconds")).toBe("gauge");

    const counted = await tableCounts(store);
    const served = new Map([...samples].filter(([key, value]) => key.startsWith("cairnq_tasks{") && value !== 0));
    expect(served).toEqual(counted);
    // Every status of a queue with rows is present, zeros included.
    for (const queue of ["emails", "reports", "later"]) {
      for (const s of STATUSES) expect(samples.has(`cairnq_tasks{queue=${JSON.stringify(queue)},status=${JSON.stringify(s)}}`), `${queue}/${s}`).toBe(true);
    }
    expect(samples.get('cairnq_tasks{queue="emails",status="queued"}')).toBe(3);

    const oldestRunAt = Math.min(...due.map((task) => task.run_at_ms));
    const age = samples.get('cairnq_oldest_queued_age_seconds{queue="emails"}') as number;
    // The store's clock read the age between the request's start and its answer (±5 ms of clock rounding).
    expect(age).toBeGreaterThanOrEqual((atMs[0] - oldestRunAt - 5) / 1000);
    expect(age).toBeLessThanOrEqual((atMs[1] - oldestRunAt + 5) / 1000);
    expect(age).toBeGreaterThanOrEqual(0.03);
    expect(samples.get('cairnq_oldest_queued_age_seconds{queue="later"}')).toBe(0);
    expect(samples.get('cairnq_oldest_queued_age_seconds{queue="reports"}')).toBe(0);
    expect(samples.get("cairnq_metrics_read_seconds")).toBeGreaterThan(0);
  });

  it("serves one read to every scrape within metricsCacheMs", async () => {
    const store = await backend.open();
    await store.submit({ name: "a", queue: "q" });
    const base = await serveDashboard({ store, metricsCacheMs: 600_000 });
    const first = parsePrometheus((await scrape(base)).text).samples;
    await store.submit({ name: "a", queue: "q" });
    const second = parsePrometheus((await scrape(base)).text).samples;
    expect(second.get('cairnq_tasks{queue="q",status="queued"}')).toBe(1);
    expect(second).toEqual(first);
    const fresh = await serveDashboard({ store, metricsCacheMs: 0 });
    expect(parsePrometheus((await scrape(fresh)).text).samples.get('cairnq_tasks{queue="q",status="queued"}')).toBe(2);
  });
});

describe.each(BACKENDS)("GET /api/activity on $name", (backend) => {
  it("counts the last hour's submitted, succeeded and failed tasks per queue, with due → finished percentiles", async () => {
    const store = await backend.open();
    await store.submit({ name: "send", queue: "emails" });
    await store.submit({ name: "send", queue: "emails" });
    await runTask(store, "work", "emails");
    await failTask(store, "bad", "emails", { code: "boom" });
    await failTask(store, "build", "reports", { code: "boom" });
    const base = await serveDashboard({ store });
    type Activity = { range: string; buckets: { submitted: number; succeeded: number; failed: number }[]; overall: { finished: number; p50: number | null } };
    const read = async (query: string): Promise<Activity> => (await (await fetch(`${base}/api/activity${query}`)).json()) as Activity;
    const sum = (a: Activity, key: "submitted" | "succeeded" | "failed"): number => a.buckets.reduce((n, b) => n + b[key], 0);

    const all = await read("");
    expect(all.range).toBe("hour");
    expect(all.buckets).toHaveLength(60);
    expect([sum(all, "submitted"), sum(all, "succeeded"), sum(all, "failed")]).toEqual([5, 0, 2]);
    expect(all.overall.finished).toBe(2);
    expect(all.overall.p50).toBeGreaterThanOrEqual(0);

    const emails = await read("?queue=emails&range=day");
    expect(emails.range).toBe("day");
    expect(emails.buckets).toHaveLength(48);
    expect([sum(emails, "submitted"), sum(emails, "failed")]).toEqual([4, 1]);
  });
});

describe("GET /metrics and the dashboard's rules", () => {
  it("asks authorize for a read, and rejects a bad metricsCacheMs when the dashboard is built", async () => {
    const store = await (BACKENDS[0] as Backend).open();
    const base = await serveDashboard({ store, authorize: (req) => req.headers.authorization === "Bearer scrape" });
    expect((await fetch(`${base}/metrics`)).status).toBe(403);
    expect((await fetch(`${base}/metrics`, { headers: { authorization: "Bearer scrape" } })).status).toBe(200);
    await expect(serveDashboard({ store, metricsCacheMs: -1 })).rejects.toThrow(/metricsCacheMs must be an integer from 0 to 600000/);
  });
});
