/**
 * `cairnq metrics --db …`, run as the built bin against a real SQLite file
 * and a real Postgres schema: it prints the Prometheus text the dashboard
 * serves at `GET <mount>/metrics`, and its counts are the table's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prometheusText } from "@cairnq/dashboard";
import type { TaskStore } from "@cairnq/protocol";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { parsePrometheus } from "@cairnq/test-support";
import { afterAll, describe, expect, it } from "vitest";
import { closeAdmin, dropSchema, freshSchemaName, pgDsn } from "../support/postgres.js";
import { runCli as cli } from "../support/cli.js";

const dir = mkdtempSync(join(tmpdir(), "cairnq-metrics-cli-"));
const schemas: string[] = [];

afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
  await closeAdmin();
  rmSync(dir, { recursive: true, force: true });
});

const BACKENDS: { name: string; open(): Promise<{ store: TaskStore; args: string[] }> }[] = [
  {
    name: "SQLite",
    open() {
      const file = join(dir, "cairnq.db");
      return Promise.resolve({ store: new SQLiteStore(file), args: ["--db", file] });
    },
  },
  {
    name: "Postgres",
    async open() {
      const schema = await freshSchemaName("cairnq_metrics_cli");
      schemas.push(schema);
      return { store: new PostgresStore(pgDsn(), { schema }), args: ["--db", pgDsn(), "--schema", schema] };
    },
  },
];

describe.each(BACKENDS)("cairnq metrics on $name", (backend) => {
  it("prints the dashboard's Prometheus text: counts by queue and status, and the oldest due queued task's age", async () => {
    const { store, args } = await backend.open();
    try {
      await store.connect();
      for (let i = 0; i < 3; i++) await store.submit({ name: "send", queue: "emails" });
      await store.submit({ name: "build", queue: "reports", runAtDelayMs: 3_600_000 });
      const run = await cli(["metrics", ...args]);
      expect(run.code, run.stderr).toBe(0);
      const printed = parsePrometheus(run.stdout).samples;
      expect(printed.get('cairnq_tasks{queue="emails",status="queued"}')).toBe(3);
      expect(printed.get('cairnq_tasks{queue="reports",status="queued"}')).toBe(1);
      expect(printed.get('cairnq_tasks{queue="emails",status="failed"}')).toBe(0);
      expect(printed.get('cairnq_oldest_queued_age_seconds{queue="emails"}')).toBeGreaterThan(0);
      expect(printed.get('cairnq_oldest_queued_age_seconds{queue="reports"}')).toBe(0);
      // The same families and labels as the dashboard's scrape of the same database.
      const served = parsePrometheus((await prometheusText(store)).text).samples;
      expect([...printed.keys()].sort()).toEqual([...served.keys()].sort());
      for (const [key, value] of served) if (key.startsWith("cairnq_tasks{")) expect(printed.get(key), key).toBe(value);

      const json = await cli(["metrics", ...args, "--json"]);
      expect(json.code, json.stderr).toBe(0);
      const doc = JSON.parse(json.stdout) as { contentType: string; text: string };
      expect(doc.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(parsePrometheus(doc.text).samples.get('cairnq_tasks{queue="emails",status="queued"}')).toBe(3);
    } finally {
      await store.close();
    }
  });
});
