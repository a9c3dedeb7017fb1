// The pooler figures (Postgres only): CairnQ behind PgBouncer in transaction
// mode, against itself direct, in the same run.
//
// - drain c64 through PgBouncer ÷ drain c64 direct: the worker-child drain of
//   the c64 row (concurrency 64, claimBatch 64), each on a fresh database of
//   its own — through PgBouncer with `preparedStatements: false` (PgBouncer
//   1.18 keeps none across transactions) and LISTEN on a direct connection,
//   as the store's README says to run behind a transaction pooler.
// - pickup of an idle worker (through PgBouncer): a task submitted to an idle
//   worker process, one at a time, from submit to the handler's start (both
//   clocks of this machine), with LISTEN (direct) and with `listen: false` at
//   the default poll interval.
//
// PgBouncer comes from scripts/pgbouncer-env.mjs (found, or installed from
// Debian as root); it is started here on a free port, as the postgres user
// when this runs as root (PgBouncer refuses root), and stopped at the end.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { ensurePgBouncer } from "../../scripts/pgbouncer-env.mjs";
import { spawnWorker } from "./child.mjs";
import { percentile } from "./stats.mjs";
import { openClient } from "./targets.mjs";

/** PgBouncer's server connections per database: a small pool, as a fleet would run it. */
export const POOLER_POOL_SIZE = 8;

let bouncer = null;
let counter = 0;

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function answers(dsn) {
  const client = new pg.Client({ connectionString: dsn, connectionTimeoutMillis: 2_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Starts PgBouncer (transaction mode) in front of `dsn`'s server once per run; returns `{ port }`. */
async function ensureBouncer(dsn, log) {
  if (bouncer !== null) return bouncer;
  const { binary } = ensurePgBouncer({ log });
  const upstream = new URL(dsn);
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-bench-pgbouncer-"));
  fs.chmodSync(dir, 0o755);
  const ini = [
    "[databases]",
    `* = host=${upstream.hostname === "localhost" ? "127.0.0.1" : upstream.hostname} port=${upstream.port || 5432} user=${decodeURIComponent(upstream.username || "postgres")}`,
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${port}`,
    "unix_socket_dir =",
    "auth_type = any",
    "pool_mode = transaction",
    `default_pool_size = ${POOLER_POOL_SIZE}`,
    "max_client_conn = 500",
    "server_reset_query =",
    "",
  ].join("\n");
  fs.writeFileSync(path.join(dir, "pgbouncer.ini"), ini, { mode: 0o644 });
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  const user = root ? (spawnSync("id", ["-u", "postgres"]).status === 0 ? "postgres" : "nobody") : null;
  const child = spawn(binary, [...(user === null ? [] : ["-u", user]), path.join(dir, "pgbouncer.ini")], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const probe = new URL(dsn);
  probe.hostname = "127.0.0.1";
  probe.port = String(port);
  for (let i = 0; !(await answers(probe.toString())); i += 1) {
    if (i > 100 || child.exitCode !== null) throw new Error(`pgbouncer did not start: ${stderr.slice(-500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  bouncer = { port, child, dir };
  return bouncer;
}

/** Stops the run's PgBouncer, if one was started. */
export async function finishPooler() {
  if (bouncer === null) return;
  const { child, dir } = bouncer;
  bouncer = null;
  if (child.exitCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

function withDatabase(dsn, database, port) {
  const url = new URL(dsn);
  url.pathname = `/${database}`;
  if (port !== undefined) {
    url.hostname = "127.0.0.1";
    url.port = String(port);
  }
  return url.toString();
}

/** A fresh database; through PgBouncer (`pooled`) or direct. `cleanup()` drops it. */
async function freshDatabase(dsn, label, pooled, log) {
  counter += 1;
  const database = `cairnq_bench_${process.pid}_${counter}_${label.replace(/[^A-Za-z0-9_]/g, "_")}`.toLowerCase().slice(0, 63);
  const admin = new pg.Client({ connectionString: dsn });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end();
  }
  const direct = withDatabase(dsn, database);
  const target = pooled
    ? { backend: "postgres", dsn: withDatabase(dsn, database, (await ensureBouncer(dsn, log)).port), options: { preparedStatements: false, listen: direct } }
    : { backend: "postgres", dsn: direct, options: {} };
  return {
    target,
    cleanup: async () => {
      const c = new pg.Client({ connectionString: dsn });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

async function fill(target, n) {
  const client = openClient(target);
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < n) {
          next += 1;
          await client.submit("noop", {});
        }
      }),
    );
  } finally {
    await client.close();
  }
}

/** The c64 drain of one target (the drain row's settings); tasks/s. */
async function drainC64(dsn, { n, warmup, pooled, log }) {
  const { target, cleanup } = await freshDatabase(dsn, pooled ? "pooled_drain" : "direct_drain", pooled, log);
  try {
    await fill(target, warmup + n);
    const child = await spawnWorker({ target, worker: { concurrency: 64, claimBatch: 64 }, expect: warmup + n, warmup });
    let report;
    try {
      report = await child.run(Math.max(120_000, (warmup + n) * 60));
    } finally {
      await child.stop();
    }
    if (child.errors.length > 0) throw new Error(`the worker reported errors: ${child.errors.slice(0, 3).join("; ")}`);
    return n / (report.ms / 1000);
  } finally {
    await cleanup();
  }
}

/** Pickup of an idle worker process through PgBouncer: `samples` tasks one at a time; `{ p50, p99 }` in ms. */
async function pickup(dsn, { samples, listen, log }) {
  const { target, cleanup } = await freshDatabase(dsn, listen ? "pickup_listen" : "pickup_poll", true, log);
  if (!listen) target.options = { ...target.options, listen: false };
  const client = openClient(target, { listen: false });
  let child = null;
  try {
    await client.connect();
    child = await spawnWorker({ target, worker: {}, expect: 0, stamp: true });
    child.start();
    const times = [];
    for (let i = 0; i < samples + 3; i += 1) {
      // Idle between tasks for a random part of a poll interval and more, so each one finds the worker asleep (on
      // LISTEN, or between polls) at a uniformly random point of its sleep: a fixed pause would always land at the
      // same phase of the poll and measure that phase, not the pickup.
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 600));
      const submittedAt = Date.now();
      const task = await client.submit("noop", { i });
      const done = await client.wait(task.id, { timeoutMs: 30_000, pollMs: 5, maxPollMs: 20 });
      if (i >= 3) times.push(done.result.at - submittedAt);
    }
    if (child.errors.length > 0) throw new Error(`the worker reported errors: ${child.errors.slice(0, 3).join("; ")}`);
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    await child?.stop();
    await client.close();
    await cleanup();
  }
}

/**
 * One repetition of the pooler figures; `push(id, value)` records each.
 * Direct and pooled drains run back to back, so a noisy moment hits both.
 */
export async function poolerFigures(dsn, { n, warmup, pickupSamples, push, step, log }) {
  await step("pooler: drain c64 direct (fresh database)", async () => push("pooler.direct.c64", await drainC64(dsn, { n, warmup, pooled: false, log })));
  await step("pooler: drain c64 through PgBouncer", async () => push("pooler.drain.c64", await drainC64(dsn, { n, warmup, pooled: true, log })));
  await step("pooler: idle pickup, LISTEN direct", async () => {
    const r = await pickup(dsn, { samples: pickupSamples, listen: true, log });
    push("pooler.pickupListen.p50", r.p50);
    push("pooler.pickupListen.p99", r.p99);
  });
  await step("pooler: idle pickup, listen: false", async () => {
    const r = await pickup(dsn, { samples: pickupSamples, listen: false, log });
    push("pooler.pickupPoll.p50", r.p50);
    push("pooler.pickupPoll.p99", r.p99);
  });
}
