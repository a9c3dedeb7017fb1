// Where the time of the churn row's "drain under concurrent submits" goes on Postgres (diagnostic, not part
// of the bench table): the row's two drains (lib/churn.mjs churnUnderSubmits: two worker processes of 16
// slots whose handler awaits 4 ms; a backlog, then submits from this process at 1.5× the backlog's rate),
// each with counts instead of wall time alone:
// - per worker process (lib/claim-count.mjs preloaded): claims, rows per claim, claim waits and how many a
//   signal ended early, notifications heard per channel, round trips and statements sent, CPU;
// - this process (the producers): CPU, round trips and statements;
// - the Postgres backends of each side (application_name), CPU from /proc, and the machine's busy share.
//
//   CAIRNQ_BENCH_PG_DSN=… node --import ./bench/lib/claim-count.mjs bench/churn-diag-pg.mjs [--n 20000] [--warmup 2000]
//     [--listen-off] [--skip-backlog --backlog-rate 3000] [--factor 1.5]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { spawnWorker } from "./lib/child.mjs";
import { awaitSucceeded, freshSchema, rateOver, submitPaced } from "./lib/churn.mjs";
import { claimCounts } from "./lib/claim-count.mjs";
import { postgresBackend as backend, POSTGRES_DSN } from "./lib/postgres-backend.mjs";
import { openClient } from "./lib/targets.mjs";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "20000" },
    warmup: { type: "string", default: "2000" },
    "listen-off": { type: "boolean", default: false },
    "skip-backlog": { type: "boolean", default: false },
    "backlog-rate": { type: "string", default: "3000" },
    factor: { type: "string", default: "1.5" },
  },
});
const n = Number(values.n);
const warmup = Number(values.warmup);
const total = warmup + n;
const options = values["listen-off"] ? { listen: false } : {};
const PRELOAD = new URL("./lib/claim-count.mjs", import.meta.url).href;
const pg = createRequire(import.meta.url)("pg");
const HZ = 100;

const ticks = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
};
const machine = () => {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return { busy: f[0] + f[1] + f[2] + f[5] + f[6] + f[7], all: f.reduce((a, b) => a + b, 0) };
};

/** Samples the CPU ticks of the Postgres backends by application_name every 250 ms until stopped. */
function backendSampler() {
  const admin = new pg.Client({ connectionString: POSTGRES_DSN, application_name: "cq_diag_admin" });
  const seen = new Map(); // pid -> { app, first, last }
  let stopped = false;
  const loop = (async () => {
    await admin.connect();
    const first = new Set((await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'cq\\_%'")).rows.map((r) => r.pid));
    for (;;) {
      const { rows } = await admin.query("SELECT pid, application_name AS app, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS q FROM pg_stat_activity WHERE application_name LIKE 'cq\\_%' AND application_name <> 'cq_diag_admin'");
      for (const { pid, app, q } of rows) {
        const t = ticks(pid);
        if (t === null) continue;
        const entry = seen.get(pid) ?? { app, first: first.has(pid) ? t : 0, last: t, queries: new Map() };
        entry.last = t;
        entry.queries.set(q, (entry.queries.get(q) ?? 0) + 1);
        seen.set(pid, entry);
      }
      if (stopped) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await admin.end();
  })();
  return async () => {
    stopped = true;
    await loop;
    const byApp = {};
    for (const [pid, { app, first, last, queries }] of seen) {
      const e = (byApp[app] ??= { backends: 0, cpuS: 0, each: [] });
      e.backends += 1;
      e.cpuS += (last - first) / HZ;
      const top = [...queries].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "";
      e.each.push(`${pid}:${((last - first) / HZ).toFixed(1)}s[${top.slice(0, 40)}]`);
    }
    return byApp;
  };
}

async function drain(label, submitRate) {
  const { target, cleanup } = await freshSchema(backend, label);
  const wTarget = { ...target, options };
  process.env.PGAPPNAME = "cq_worker";
  const children = [];
  let client = null;
  try {
    if (submitRate === null) await backend.fillBacklog(target, total);
    for (let i = 0; i < 2; i += 1) children.push(await spawnWorker({ target: wTarget, worker: { concurrency: 16 }, expect: 0, handlerMs: 4, preload: [PRELOAD] }));
    process.env.PGAPPNAME = "cq_client";
    if (submitRate !== null) {
      client = openClient(wTarget);
      await client.connect();
    }
    const stopSampler = backendSampler();
    const m0 = machine();
    const w0 = children.map((c) => ticks(c.pid));
    const c0 = process.cpuUsage();
    const q0 = claimCounts();
    const started = performance.now();
    for (const child of children) child.start();
    const offered = submitRate === null ? null : await submitPaced(client, total, submitRate, started);
    await awaitSucceeded(target, total, Math.max(300_000, total * 20), { pollMs: 100 });
    const wallS = (performance.now() - started) / 1000;
    const m1 = machine();
    const c1 = process.cpuUsage(c0);
    const q1 = claimCounts();
    const workerCpuS = children.reduce((sum, c, i) => sum + (ticks(c.pid) - w0[i]) / HZ, 0);
    const backends = await stopSampler();
    const times = await backend.completionTimes(target);
    const rate = rateOver(times, warmup, n);
    console.log(`\n== ${label}: ${total} tasks, ${wallS.toFixed(1)} s; drain over the ${n} after warm-up ${rate.toFixed(0)}/s${offered === null ? "" : `; offered ${offered.toFixed(0)}/s`}`);
    console.log(`machine busy ${(((m1.busy - m0.busy) / (m1.all - m0.all)) * 100).toFixed(0)}% of 2 cores = ${(((m1.busy - m0.busy) / HZ)).toFixed(1)} core·s`);
    console.log(`workers CPU ${workerCpuS.toFixed(1)} s (${((workerCpuS / total) * 1e6).toFixed(0)} µs/task)`);
    console.log(`bench process CPU ${((c1.user + c1.system) / 1e6).toFixed(1)} s (${((c1.user + c1.system) / total).toFixed(0)} µs/task); client round trips ${q1.queries - q0.queries} (${((q1.queries - q0.queries) / total).toFixed(2)}/task), statements ${q1.wireStatements - q0.wireStatements}`);
    for (const [app, e] of Object.entries(backends)) console.log(`backends ${app}: ${e.backends}, CPU ${e.cpuS.toFixed(1)} s (${((e.cpuS / total) * 1e6).toFixed(0)} µs/task)\n    ${e.each.join("\n    ")}`);
    const statsClient = new pg.Client(POSTGRES_DSN);
    await statsClient.connect();
    const idx = await statsClient.query("SELECT indexrelname AS i, idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes WHERE schemaname = $1 ORDER BY idx_tup_read DESC", [target.schema]);
    for (const row of idx.rows) console.log(`index ${row.i}: scans ${row.idx_scan}, tuples read ${row.idx_tup_read} (${(row.idx_tup_read / Math.max(1, row.idx_scan)).toFixed(1)}/scan), fetched ${row.idx_tup_fetch}`);
    const tab = await statsClient.query("SELECT seq_scan, seq_tup_read, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'cairnq_tasks'", [target.schema]);
    console.log(`table: ${JSON.stringify(tab.rows[0])}`);
    await statsClient.end();
    return { children, cleanup, client, rate };
  } catch (err) {
    for (const child of children) await child.stop();
    await client?.close();
    await cleanup();
    throw err;
  }
}

async function finish({ children, cleanup, client }) {
  await client?.close();
  for (const child of children) await child.stop(); // prints its [claim-count] line
  await cleanup();
}

console.log(`load ${readFileSync("/proc/loadavg", "utf8").trim()}; LISTEN ${values["listen-off"] ? "off" : "on"}`);
let backlogRate = Number(values["backlog-rate"]);
if (!values["skip-backlog"]) {
  const r = await drain("diag-backlog", null);
  await finish(r);
  backlogRate = r.rate;
}
const r = await drain("diag-submits", backlogRate * Number(values.factor));
await finish(r);
