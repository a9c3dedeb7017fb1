// What one read behind the Prometheus text costs on a large table: the
// `queueHealth` aggregate (what GET <mount>/metrics and `cairnq metrics`
// run, once per cache period) against `stats()`, on SQLite and Postgres.
//
//   node bench/queue-health.mjs [--rows 1000000] [--backend sqlite,postgres] [--samples 5]
//
// Rows are written straight into a fresh database with SQL (the bench is
// about the read): 8 queues; 85% succeeded, 4% failed, 1% canceled,
// 1% running, 9% queued (a third of those delayed). Prints the median and
// the worst of `samples` reads of each, warm (after one untimed read).
// Postgres: CAIRNQ_BENCH_PG_DSN (default postgres://postgres@127.0.0.1:5432/test), a schema of its own.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { PostgresStore, SQLiteStore } from "cairnq";
import pg from "pg";

const { values: args } = parseArgs({ options: { rows: { type: "string" }, backend: { type: "string" }, samples: { type: "string" } } });
const rows = Number(args.rows ?? 1_000_000);
const samples = Number(args.samples ?? 5);
const backends = (args.backend ?? "sqlite,postgres").split(",");
const DSN = process.env.CAIRNQ_BENCH_PG_DSN ?? "postgres://postgres@127.0.0.1:5432/test";

// One row's status, queue and times from its number: the same table on both backends.
const STATUS_SQL = (i) =>
  `CASE WHEN ${i} % 100 < 85 THEN 'succeeded' WHEN ${i} % 100 < 89 THEN 'failed' WHEN ${i} % 100 < 90 THEN 'canceled' WHEN ${i} % 100 < 91 THEN 'running' ELSE 'queued' END`;

async function time(fn) {
  await fn();
  const ms = [];
  for (let s = 0; s < samples; s++) {
    const started = performance.now();
    await fn();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], worst: ms[ms.length - 1] };
}

async function measure(name, store) {
  const health = await time(() => store.queueHealth());
  const stats = await time(() => store.stats());
  const fmt = (t) => `median ${t.median.toFixed(1)} ms, worst ${t.worst.toFixed(1)} ms`;
  console.log(`${name}, ${rows.toLocaleString("en-US")} rows: queueHealth ${fmt(health)}; stats ${fmt(stats)}`);
}

if (backends.includes("sqlite")) {
  const dir = mkdtempSync(join(tmpdir(), "cairnq-health-"));
  try {
    const path = join(dir, "cairnq.db");
    const store = new SQLiteStore(path);
    await store.connect();
    const db = new Database(path);
    const now = Date.now();
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows - 1})
      INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms, created_at_ms, updated_at_ms, completed_at_ms, lease_until_ms, worker_id)
      SELECT printf('task_0%025d', i), 'job', 'q' || (i % 8), ${STATUS_SQL("i")}, '{}', '{}', 1, 3, 0,
        ${now} - 3600000 + (i % 3600000) + CASE WHEN i % 300 = 299 THEN 7200000 ELSE 0 END, ${now} - 3600000, ${now}, NULL, NULL, NULL FROM n`);
    db.exec("ANALYZE");
    db.close();
    await measure("SQLite", store);
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (backends.includes("postgres")) {
  const schema = `cairnq_health_${process.pid}`;
  const store = new PostgresStore(DSN, { schema });
  const admin = new pg.Client({ connectionString: DSN });
  await admin.connect();
  try {
    await store.connect();
    const now = Date.now();
    await admin.query(`SET search_path TO "${schema}"`);
    await admin.query(`INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms, created_at_ms, updated_at_ms)
      SELECT 'task_0' || lpad(i::text, 25, '0'), 'job', 'q' || (i % 8), ${STATUS_SQL("i")}, '{}', '{}', 1, 3, 0,
        ${now} - 3600000 + (i % 3600000) + CASE WHEN i % 300 = 299 THEN 7200000 ELSE 0 END, ${now} - 3600000, ${now}
      FROM generate_series(0, ${rows - 1}) AS i`);
    await admin.query("VACUUM ANALYZE cairnq_tasks");
    await measure("Postgres", store);
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}
