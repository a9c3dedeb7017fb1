#!/usr/bin/env node
// Where a traced worker's time goes, per task: the c64 drain of the telemetry row on SQLite, in one worker
// process per configuration, measured by what the process itself spent over the timed tasks — CPU time
// (user + system), time in garbage collection, and bytes allocated — rather than by the wall clock, which
// the shared machine's other processes move by tens of percent. Configurations build up telemetry a piece
// at a time, so each piece's cost is the difference between two rows:
//
//   off       no OpenTelemetry module loaded
//   sdk       the SDK of lib/otel-noop.mjs registered, the worker's tracing and metrics off (the context
//             manager's AsyncLocalStorage is not in use yet, so no hook runs)
//   als       as sdk, with the worker started inside a context.with() of the root context, as an application
//             whose instrumentation entered a context once would: the AsyncLocalStorage hook on every promise
//   metrics   the SDK, metrics: true
//   tracing   the SDK, tracing: true
//   both      the SDK, tracing: true, metrics: true (the bench row's "on")
//
//   node bench/telemetry-cost.mjs [--backend sqlite|postgres] [--n 30000] [--rounds 3] [--modes off,sdk,als,metrics,tracing,both] [--cpu-prof]
//
// On Postgres (CAIRNQ_BENCH_PG_DSN) every drain fills a fresh schema first, through the client.
//
// --cpu-prof writes a V8 CPU profile of each worker process to bench/results/profiles/ (summarize with
// bench/profile-summary.mjs). COST_HEAP=<file prefix> writes a sampling heap profile of each worker over the timed
// tasks. On Postgres each row also gives the worker's round trips and socket writes per task. COUNT_PROMISES=1 in the environment also counts the promises made per task,
// COUNT_ASYNC=1 the async resources (async_hooks init, by type: what Node 20's AsyncLocalStorage pays a hook
// call for) — each counting hook costs time itself: not for the other columns.
//
// The rounds are the outer loop (every configuration once per round, in the order given on odd rounds and
// reversed on even ones), and each figure is the median over the rounds; the CPU column also gives each
// configuration's difference from the first one, as the median of the rounds' own differences. Runs the BUILT packages (pnpm turbo run build --filter cairnq...).
import { createHook } from "node:async_hooks";
import { fork } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { median } from "./lib/stats.mjs";

const MODES = ["off", "sdk", "als", "metrics", "tracing", "both"];
const WARMUP = 2_000;

if (process.argv[2] === "--child") await child(JSON.parse(process.argv[3]));
else await parent();

async function parent() {
  const { values } = parseArgs({ options: { backend: { type: "string", default: "sqlite" }, n: { type: "string", default: "30000" }, rounds: { type: "string", default: "3" }, modes: { type: "string", default: MODES.join(",") }, "cpu-prof": { type: "boolean", default: false } } });
  const execArgv = values["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${fileURLToPath(new URL("./results/profiles/", import.meta.url))}`] : [];
  const n = Number(values.n);
  const rounds = Number(values.rounds);
  const modes = values.modes.split(",");
  for (const mode of modes) if (!MODES.includes(mode)) throw new Error(`unknown mode '${mode}' (${MODES.join(", ")})`);
  const { openClient } = await import("./lib/targets.mjs");
  const { fill } = await import("./lib/ours.mjs");
  const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
  const record = (round, mode, r) => {
    samples[mode].push(r);
    process.stderr.write(`round ${round} ${mode}: ${fmt(r)}\n`);
  };
  const dir = mkdtempSync(join(tmpdir(), "cairnq-telemetry-cost-"));
  try {
    if (values.backend === "postgres") {
      const { postgresBackend } = await import("./lib/postgres-backend.mjs");
      try {
        for (let round = 1; round <= rounds; round += 1) {
          for (const mode of inOrderOf(round, modes)) {
            const { target, cleanup } = await postgresBackend.fresh(`telemetry-cost-${mode}`);
            try {
              await fill(target, WARMUP + n);
              record(round, mode, await runChild({ target, mode, n }, execArgv));
            } finally {
              await cleanup();
            }
          }
        }
      } finally {
        await postgresBackend.finish();
      }
    } else {
      // One filled database, copied for every drain (the fill takes longer than the drain).
      const template = join(dir, "template.db");
      await fill({ backend: "sqlite", path: template }, WARMUP + n);
      const closer = openClient({ backend: "sqlite", path: template });
      await closer.connect();
      await closer.close();
      for (let round = 1; round <= rounds; round += 1) {
        for (const mode of inOrderOf(round, modes)) {
          const path = join(dir, `${mode}-${round}.db`);
          copyFileSync(template, path);
          record(round, mode, await runChild({ target: { backend: "sqlite", path }, mode, n }, execArgv));
          rmSync(path, { force: true });
          rmSync(`${path}-wal`, { force: true });
          rmSync(`${path}-shm`, { force: true });
          rmSync(`${path}-wake`, { force: true });
        }
      }
    }
    console.log(`c64 drain of ${n} tasks after ${WARMUP} untimed, ${values.backend}, medians of ${rounds} round(s); per task:`);
    // The rounds' own differences from the first configuration (each round runs them back to back): on a shared
    // machine the CPU time of one configuration swings by more than the pieces measured, and a difference taken
    // within a round, a few seconds apart, is steadier than the difference of two medians.
    const base = modes[0];
    console.log(`| configuration | CPU µs (min–max) | CPU µs − ${base}, median of the rounds' own (min–max) | GC µs | allocated bytes | tasks/s |`);
    console.log("| --- | --- | --- | --- | --- | --- |");
    const spread = (values, digits) => `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
    for (const mode of modes) {
      const m = (key) => median(samples[mode].map((r) => r[key]));
      const cpu = samples[mode].map((r) => r.cpuUs);
      const delta = mode === base ? "—" : spread(cpu.map((us, round) => us - samples[base][round].cpuUs), 2);
      console.log(`| ${mode} | ${spread(cpu, 1)} | ${delta} | ${m("gcUs").toFixed(1)} | ${Math.round(m("allocBytes"))} | ${Math.round(m("tasksPerSec"))} |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The configurations in their order on odd rounds and reversed on even ones, so a machine getting busier within a round favours none. */
function inOrderOf(round, modes) {
  return round % 2 === 1 ? modes : [...modes].reverse();
}

function fmt(r) {
  const wire = r.roundTrips === undefined ? "" : `${r.roundTrips.toFixed(3)} round trips and ${r.writes.toFixed(3)} socket writes, `;
  return `${r.promises > 0 ? `${r.promises.toFixed(1)} promises, ` : ""}${r.asyncResources === undefined ? "" : `async resources ${JSON.stringify(r.asyncResources)}, `}${wire}${r.cpuUs.toFixed(1)} µs CPU, ${r.gcUs.toFixed(1)} µs GC, ${Math.round(r.allocBytes)} B allocated per task, ${Math.round(r.tasksPerSec)}/s; collections ${JSON.stringify(r.gcs)}`;
}

function runChild(config, execArgv) {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ["--child", JSON.stringify(config)], { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
    let result = null;
    proc.on("message", (message) => {
      result = message;
    });
    proc.on("exit", (code) => (result === null ? reject(new Error(`the child exited (code ${code}) without a result`)) : resolve(result)));
  });
}

/**
 * On Postgres: counts what the worker's pg connections send — round trips (Syncs and simple queries) and
 * socket writes (each a syscall: pg writes a round trip's messages corked, as one `writev`).
 */
async function countPgWrites() {
  const { createRequire } = await import("node:module");
  const require = createRequire(import.meta.url);
  const Connection = require("pg/lib/connection.js");
  const counts = { roundTrips: 0, writes: 0, on: false };
  const { sync, query, connect } = Connection.prototype;
  Connection.prototype.sync = function countedSync(...args) {
    if (counts.on) counts.roundTrips += 1;
    return sync.apply(this, args);
  };
  Connection.prototype.query = function countedQuery(...args) {
    if (counts.on) counts.roundTrips += 1;
    return query.apply(this, args);
  };
  Connection.prototype.connect = function countedConnect(...args) {
    const result = connect.apply(this, args);
    const stream = this.stream;
    const { _writev: writev, _write: write } = stream;
    if (typeof writev === "function") {
      stream._writev = function countedWritev(...rest) {
        if (counts.on) counts.writes += 1;
        return writev.apply(this, rest);
      };
    }
    stream._write = function countedWrite(...rest) {
      if (counts.on) counts.writes += 1;
      return write.apply(this, rest);
    };
    return result;
  };
  return counts;
}

/**
 * With COST_HEAP=<file prefix>: V8's sampling heap profiler over the timed tasks, collected objects included,
 * written as `<prefix>-<mode>-<pid>.heapprofile` (sum `selfSize` by function to see where a task's bytes go).
 */
async function heapSampler() {
  const prefix = process.env.COST_HEAP;
  if (prefix === undefined) return { start: () => {}, stop: () => {} };
  const { Session } = await import("node:inspector");
  const { writeFileSync } = await import("node:fs");
  const session = new Session();
  session.connect();
  return {
    start: () => session.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }),
    stop: () =>
      session.post("HeapProfiler.stopSampling", (error, result) => {
        if (error === null) writeFileSync(`${prefix}-${process.pid}.heapprofile`, JSON.stringify(result.profile));
        session.disconnect();
      }),
  };
}

async function child({ target, mode, n }) {
  if (mode !== "off") await import("./lib/otel-noop.mjs");
  const wire = target.backend === "postgres" ? await countPgWrites() : null;
  const heap = await heapSampler();
  const { openWorker } = await import("./lib/targets.mjs");
  const options = { concurrency: 64, claimBatch: 64, tracing: mode === "tracing" || mode === "both", metrics: mode === "metrics" || mode === "both" };
  const worker = openWorker(target, { ...options, onError: (err) => console.error(err) });
  worker.task("noop", () => null);
  await worker.store.connect();
  const profiler = new v8.GCProfiler();
  let succeeded = 0;
  let from = null;
  let promises = 0;
  /** COUNT_ASYNC=1: the async resources made over the timed tasks, by type. */
  const asyncResources = {};
  const done = new Promise((resolve) => {
    worker.on("task:succeeded", () => {
      succeeded += 1;
      if (succeeded === WARMUP) {
        if (process.env.COUNT_PROMISES === "1") v8.promiseHooks.onInit(() => (promises += 1));
        if (process.env.COUNT_ASYNC === "1") {
          createHook({ init: (_id, type) => (asyncResources[type] = (asyncResources[type] ?? 0) + 1) }).enable();
        }
        from = { at: performance.now(), cpu: process.cpuUsage(), used: v8.getHeapStatistics().used_heap_size };
        profiler.start();
        if (wire !== null) wire.on = true;
        heap.start();
      } else if (succeeded === WARMUP + n) {
        const cpu = process.cpuUsage(from.cpu);
        const ms = performance.now() - from.at;
        const used = v8.getHeapStatistics().used_heap_size;
        const { statistics } = profiler.stop();
        heap.stop();
        // Allocated = what each collection found in use beyond what the previous one left, plus the growth since the last.
        let allocated = 0;
        let last = from.used;
        let gcUs = 0;
        const byType = {};
        for (const gc of statistics) {
          byType[gc.gcType] = (byType[gc.gcType] ?? 0) + 1;
          allocated += gc.beforeGC.heapStatistics.usedHeapSize - last;
          last = gc.afterGC.heapStatistics.usedHeapSize;
          gcUs += gc.cost;
        }
        allocated += used - last;
        resolve({
          cpuUs: (cpu.user + cpu.system) / n,
          gcUs: gcUs / n,
          allocBytes: allocated / n,
          tasksPerSec: n / (ms / 1000),
          promises: promises / n,
          ...(process.env.COUNT_ASYNC === "1" ? { asyncResources: Object.fromEntries(Object.entries(asyncResources).map(([type, count]) => [type, Number((count / n).toFixed(3))])) } : {}),
          gcs: byType,
          ...(wire === null ? {} : { roundTrips: wire.roundTrips / n, writes: wire.writes / n }),
        });
      }
    });
  });
  let running;
  if (mode === "als") {
    const { context, ROOT_CONTEXT } = await import("@opentelemetry/api");
    running = context.with(ROOT_CONTEXT, () => worker.run());
  } else running = worker.run();
  const result = await done;
  await worker.close();
  await running;
  process.send(result);
  process.disconnect();
}
