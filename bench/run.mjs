#!/usr/bin/env node
// The CairnQ benchmark suite (bench/README.md). Runs the BUILT packages: build first
// (`pnpm bench` does: `turbo run build --filter=cairnq...`).
//
//   node bench/run.mjs [--quick] [--n 10000] [--reps 3] [--backend all|sqlite|postgres|mysql]
//                      [--only submit,drain,telemetry,latency,claim,floors,pooler,churn,drivers,groups,steps] [--drain-warmup 2000]
//                      [--telemetry-n 30000] [--telemetry-pairs 2]
//                      [--cpu-prof] [--trace-sql]   diagnostics of the worker processes (slower; not for the table)
//
// Prints a markdown table on stdout (progress goes to stderr) and writes
// bench/results/<date>.json and bench/results/latest.md. Numbers are never
// asserted anywhere: this is a measurement, not a test.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import { machineInfo } from "./lib/machine.mjs";
import { callLatency, claimUnderBacklog, DRAIN_PREFETCH, DRAIN_PREFETCH_C64, drainThroughput, finishOurs, submitThroughput } from "./lib/ours.mjs";
import { churnDrain, churnUnderSubmits } from "./lib/churn.mjs";
import { GROUP_DRAINS, groupClaimUnderBacklog, groupDrain } from "./lib/groups.mjs";
import { driverComparison, renderDrivers } from "./lib/drivers.mjs";
import { buildRows, buildTargets, renderMarkdown } from "./lib/report.mjs";
import { sqliteBackend } from "./lib/sqlite-backend.mjs";
import { parkWakeLatency, stepsThroughput } from "./lib/steps.mjs";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    n: { type: "string" },
    reps: { type: "string" },
    backend: { type: "string", default: "all" },
    only: { type: "string" },
    "latency-calls": { type: "string" },
    "driver-calls": { type: "string" },
    "claim-samples": { type: "string" },
    "pickup-samples": { type: "string" },
    "drain-warmup": { type: "string" },
    "telemetry-n": { type: "string" },
    "telemetry-pairs": { type: "string" },
    "cpu-prof": { type: "boolean", default: false },
    "trace-sql": { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (args.help) {
  process.stdout.write(
    [
      "usage: node bench/run.mjs [--quick] [--n 10000] [--reps 3] [--backend all|sqlite|postgres|mysql]",
      "                          [--only submit,drain,telemetry,latency,claim,floors,pooler,churn,drivers,groups,steps]",
      "                          [--drain-warmup 2000] [--latency-calls 200] [--driver-calls 1000] [--claim-samples 200] [--pickup-samples 60]",
      "                          [--telemetry-n 30000] [--telemetry-pairs 2] [--cpu-prof] [--trace-sql]",
      "",
      "Runs the built packages (`pnpm bench` builds first); prints a markdown table on stdout and writes",
      "bench/results/<date>.json and bench/results/latest.md. Every option and row: bench/README.md.",
      "",
    ].join("\n"),
  );
  process.exit(0);
}

const positiveInt = (value, name) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${value}`);
  return n;
};

const settings = {
  n: args.quick ? 1_000 : 10_000,
  reps: args.quick ? 1 : 3,
  latencyCalls: args.quick ? 30 : 200,
  latencyWarmup: args.quick ? 5 : 20,
  // The drivers row's call()s per driver and repetition: 1,000, the count issue 24 asks the SQLITE_BUSY
  // collisions to be counted over (each repetition's count is printed), and still seconds per driver.
  driverCalls: args.quick ? 200 : 1_000,
  // Drains (ours and the floors) take this many tasks untimed first, then time the next n: the worker's pool
  // connections open and its code is compiled during the warm-up, as the floors' connections are opened and
  // submits and calls are warmed before their clocks start (bench/README.md, "drain warm-up").
  drainWarmup: args.quick ? 200 : 2_000,
  claimSamples: args.quick ? 50 : 200,
  // Idle pickups per repetition of the pooler figures; each waits for a poll on the listen: false side (≈ 250 ms).
  pickupSamples: args.quick ? 20 : 60,
  backlogs: [1_000, 100_000],
  // The growth figure (bloat resistance): claim cost with this many terminal rows next to this many queued,
  // against the 1k-queued figure. --quick scales both down by 10 to stay fast (the row says which it measured).
  growth: args.quick ? { terminal: 100_000, queued: 10_000 } : { terminal: 1_000_000, queued: 100_000 },
  // The churn figures: a drain of `total` queued tasks judged on its first and last `window` completions, and
  // `submitsN` tasks drained while they are submitted against the same drain of a backlog. --quick scales down.
  churn: args.quick ? { total: 20_000, window: 2_000, submitsN: 3_000 } : { total: 100_000, window: 10_000, submitsN: 20_000 },
  // The groups claim figure: one claim with this many queued tasks spread over this many groups. --quick scales down by 10.
  groupsClaim: args.quick ? { backlog: 10_000, groups: 1_000 } : { backlog: 100_000, groups: 10_000 },
  // Durable steps: no-op steps per task (the issue's figure is 1,000; --quick runs 200), and park/wake round trips.
  steps: args.quick ? { perTask: 200, latencyCalls: 30 } : { perTask: 1_000, latencyCalls: 200 },
  // The telemetry row: tasks per drain (3 × n unless given: a drain of n = 10,000 lasted half a second on SQLite,
  // so one noisy second of the shared machine decided a whole pair), and off/on pairs per repetition.
  telemetryN: null,
  telemetryPairs: args.quick ? 1 : 2,
};
if (args.n !== undefined) settings.n = positiveInt(args.n, "n");
if (args.reps !== undefined) settings.reps = positiveInt(args.reps, "reps");
if (args["latency-calls"] !== undefined) settings.latencyCalls = positiveInt(args["latency-calls"], "latency-calls");
if (args["driver-calls"] !== undefined) settings.driverCalls = positiveInt(args["driver-calls"], "driver-calls");
if (args["claim-samples"] !== undefined) settings.claimSamples = positiveInt(args["claim-samples"], "claim-samples");
if (args["pickup-samples"] !== undefined) settings.pickupSamples = positiveInt(args["pickup-samples"], "pickup-samples");
settings.telemetryN = args["telemetry-n"] === undefined ? settings.n * 3 : positiveInt(args["telemetry-n"], "telemetry-n");
if (args["telemetry-pairs"] !== undefined) settings.telemetryPairs = positiveInt(args["telemetry-pairs"], "telemetry-pairs");
if (args["drain-warmup"] !== undefined) {
  const warmup = Number(args["drain-warmup"]);
  if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`--drain-warmup must be an integer ≥ 0, got ${args["drain-warmup"]}`);
  settings.drainWarmup = warmup;
}
const only = args.only === undefined ? null : new Set(args.only.split(",").map((s) => s.trim()));
const wants = (group) => only === null || only.has(group);

const resultsDir = new URL("./results/", import.meta.url);
// Diagnostics of the worker children (--cpu-prof: drains; --trace-sql: drains and latency); both slow the worker
// down, so runs using them are not for the table. Trace this process too with `node --import ./bench/lib/sql-trace.mjs`.
const cpuProfDir = args["cpu-prof"] ? new URL("./profiles/", resultsDir).pathname : null;
const traceSql = args["trace-sql"];

const log = (message) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

async function loadBackends() {
  const wanted = args.backend === "all" ? ["sqlite", "postgres", "mysql"] : args.backend.split(",");
  const backends = [];
  const skipped = {};
  for (const name of wanted) {
    if (name === "sqlite") backends.push(sqliteBackend);
    else if (name === "postgres") {
      const { postgresBackend } = await import("./lib/postgres-backend.mjs");
      const status = await postgresBackend.available();
      if (status.ok) backends.push(postgresBackend);
      else {
        skipped.postgres = status.reason;
        if (args.backend !== "all") throw new Error(`postgres requested but unavailable: ${status.reason}`);
      }
    } else if (name === "mysql") {
      const { mysqlBackend } = await import("./lib/mysql-backend.mjs");
      const status = await mysqlBackend.available();
      if (status.ok) backends.push(mysqlBackend);
      else {
        skipped.mysql = status.reason;
        if (args.backend !== "all") throw new Error(`mysql requested but unavailable: ${status.reason}`);
      }
    } else throw new Error(`unknown backend '${name}' (sqlite, postgres, mysql, all)`);
  }
  return { backends, skipped };
}

/**
 * One repetition of every workload on one backend, floors first, each result
 * appended to `result` under its figure id. Repetitions are the outer loop, so
 * a noisy minute on the shared machine spreads over all figures instead of
 * landing on one.
 */
async function repetition(backend, result, rep, errors) {
  const n = settings.n;
  const push = (bucket, id, value) => (result[bucket][id] ??= []).push(value);
  const step = async (id, fn) => {
    const started = performance.now();
    try {
      await fn();
      log(`${backend.name} rep ${rep} ${id}: ${Math.round(performance.now() - started)} ms`);
    } catch (err) {
      errors.push({ backend: backend.name, rep, id, error: err instanceof Error ? err.stack : String(err) });
      log(`${backend.name} rep ${rep} ${id} FAILED: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  if (wants("floors")) {
    for (const floor of backend.floorPlan) {
      await step(`floor ${floor.id}`, async () => {
        // A floor measures one value (tasks/s), or several named ones (the call floor's { p50, p99 } in ms).
        const value = await floor.run(n, settings);
        if (typeof value === "number") push("floors", floor.id, value);
        else for (const [name, v] of Object.entries(value)) push("floors", `${floor.id}.${name}`, v);
      });
    }
  }
  if (wants("submit")) {
    await step("submit c1", async () => push("ours", "submit.c1", await submitThroughput(backend, { n, concurrency: 1 })));
    await step("submit c64", async () => push("ours", "submit.c64", await submitThroughput(backend, { n, concurrency: 64 })));
  }
  if (wants("drain")) {
    await step("drain c1", async () => {
      const r = await drainThroughput(backend, { n, warmup: settings.drainWarmup, concurrency: 1, cpuProfDir, traceSql });
      push("ours", "drain.c1", r.tasksPerSec);
    });
    await step(`drain c1, prefetch ${DRAIN_PREFETCH}`, async () => {
      const r = await drainThroughput(backend, { n, warmup: settings.drainWarmup, concurrency: 1, prefetch: DRAIN_PREFETCH, cpuProfDir, traceSql });
      push("ours", "drainPrefetch.c1", r.tasksPerSec);
    });
    await step("drain c1, prefetch 1", async () => {
      const r = await drainThroughput(backend, { n, warmup: settings.drainWarmup, concurrency: 1, prefetch: 1, cpuProfDir, traceSql });
      push("ours", "drainPrefetch1.c1", r.tasksPerSec);
    });
    await step("drain c64", async () => {
      const r = await drainThroughput(backend, { n, warmup: settings.drainWarmup, concurrency: 64, claimBatch: 64, cpuProfDir, traceSql });
      push("ours", "drain.c64", r.tasksPerSec);
      push("ours", "rss.c64", r.peakRssMB);
      push("ours", "rssIdle.c64", r.startRssMB);
      push("ours", "heapUsed.c64", r.peakHeapUsedMB);
    });
    await step(`drain c64, prefetch ${DRAIN_PREFETCH_C64}`, async () => {
      const r = await drainThroughput(backend, { n, warmup: settings.drainWarmup, concurrency: 64, claimBatch: 64, prefetch: DRAIN_PREFETCH_C64, cpuProfDir, traceSql });
      push("ours", "drainPrefetch.c64", r.tasksPerSec);
    });
  }
  if (wants("telemetry")) {
    // Pairs of drains, telemetry off and on back to back on fresh databases, so both halves of a pair see the same
    // minute of the shared machine; the order alternates from pair to pair (off-on, on-off, …), so a machine
    // getting busier or quieter through a repetition favours neither side. The row's ratio is the median of the
    // pairs' own ratios (on ÷ off), not a ratio of medians taken over different minutes.
    const pairs = settings.telemetryPairs;
    for (let pair = 0; pair < pairs; pair += 1) {
      const onFirst = ((rep - 1) * pairs + pair) % 2 === 1;
      await step(`drain c64, telemetry ${onFirst ? "on, then off" : "off, then on"} (pair ${pair + 1} of ${pairs}, n = ${settings.telemetryN})`, async () => {
        const drain = async (telemetry) => {
          const r = await drainThroughput(backend, { n: settings.telemetryN, warmup: settings.drainWarmup, concurrency: 64, claimBatch: 64, telemetry, cpuProfDir });
          if (!telemetry && r.otelLoaded) throw new Error("a worker without tracing or metrics loaded an @opentelemetry module");
          if (telemetry && !r.otelLoaded) throw new Error("the traced worker loaded no @opentelemetry module: telemetry was not on");
          return r;
        };
        const first = await drain(onFirst);
        const second = await drain(!onFirst);
        const [on, off] = onFirst ? [first, second] : [second, first];
        push("ours", "telemetryOff.c64", off.tasksPerSec);
        push("ours", "telemetryOn.c64", on.tasksPerSec);
        push("ours", "telemetryRatio.c64", on.tasksPerSec / off.tasksPerSec);
        push("ours", "telemetryCpuOff.c64", off.cpuUsPerTask);
        push("ours", "telemetryCpuOn.c64", on.cpuUsPerTask);
        push("ours", "telemetryCpuRatio.c64", on.cpuUsPerTask / off.cpuUsPerTask);
        // Kept in the JSON with the samples: the machine's 1-minute load average as each pair ended.
        push("ours", "telemetryLoad.c64", os.loadavg()[0]);
        log(
          `${backend.name} telemetry pair: off ${Math.round(off.tasksPerSec)}/s ${off.cpuUsPerTask.toFixed(1)} µs/task, ` +
            `on ${Math.round(on.tasksPerSec)}/s ${on.cpuUsPerTask.toFixed(1)} µs/task, ratio ${(on.tasksPerSec / off.tasksPerSec).toFixed(3)}, ` +
            `load ${os.loadavg()[0].toFixed(2)}`,
        );
      });
    }
  }
  if (wants("latency")) {
    const base = { calls: settings.latencyCalls, warmup: settings.latencyWarmup, traceSql };
    await step("latency (defaults)", async () => {
      const r = await callLatency(backend, base);
      push("ours", "latency.p50", r.p50);
      push("ours", "latency.p95", r.p95);
      push("ours", "latency.p99", r.p99);
      if (r.clientBusyRetries !== null) push("ours", "latency.clientBusy", r.clientBusyRetries);
      if (r.workerBusyRetries !== null) push("ours", "latency.workerBusy", r.workerBusyRetries);
      // SQLite: the same samples against the call floor across two processes, measured right after them so both
      // see the same minute of the shared machine (that floor swings with the load more than any other).
      if (backend.crossProcessCallFloor !== undefined) {
        push("ours", "latencyX.p50", r.p50);
        const floor = await backend.crossProcessCallFloor({ calls: settings.latencyCalls, warmup: settings.latencyWarmup });
        push("floors", "proto.callx.p50", floor.p50);
        push("floors", "proto.callx.p99", floor.p99);
        // `--only latency` (without floors): the one-connection call floor too, so that both ratios the
        // issue-24 target is judged on (p50 ≤ 5× the call floor) come from the same minute of this run.
        if (!wants("floors")) {
          const one = await backend.callFloor({ calls: settings.latencyCalls, warmup: settings.latencyWarmup });
          push("floors", "proto.call.p50", one.p50);
          push("floors", "proto.call.p99", one.p99);
        }
      }
    });
    // Informational: the same round trip with polling turned far below its defaults, to separate what the
    // polling intervals cost from what the machinery costs. Not a recommended setting (it busy-polls).
    await step("latency (tuned polling)", async () => {
      const r = await callLatency(backend, {
        ...base,
        label: "latency-tuned",
        worker: { pollIntervalMs: 5 },
        call: { pollMs: 1, maxPollMs: 1 },
      });
      push("ours", "latencyTuned.p50", r.p50);
      push("ours", "latencyTuned.p99", r.p99);
    });
  }
  if (wants("pooler") && backend.name === "postgres") {
    const { poolerFigures } = await import("./lib/pooler.mjs");
    const { POSTGRES_DSN } = await import("./lib/postgres-backend.mjs");
    await poolerFigures(POSTGRES_DSN, { n, warmup: settings.drainWarmup, pickupSamples: settings.pickupSamples, push: (id, value) => push("ours", id, value), step, log });
  }
  if (wants("churn")) {
    const { total, window, submitsN } = settings.churn;
    await step(`churn: drain of ${total} queued, first and last ${window}`, async () => {
      const r = await churnDrain(backend, { total, window, warmup: settings.drainWarmup });
      push("ours", "churn.first", r.first);
      push("ours", "churn.last", r.last);
    });
    await step(`churn: ${submitsN} submitted at 1.5× capacity while draining, and as a backlog`, async () => {
      const r = await churnUnderSubmits(backend, { n: submitsN, warmup: settings.drainWarmup });
      push("ours", "churn.backlog", r.backlog);
      push("ours", "churn.submits", r.submits);
      push("ours", "churn.offered", r.offered);
    });
  }
  if (wants("groups")) {
    await step("groups: drain c64, 10 groups, no limit", async () => {
      const r = await groupDrain(backend, { n, warmup: settings.drainWarmup, groups: 10 });
      push("ours", "groups.drain.plain", r.tasksPerSec);
    });
    for (const drain of GROUP_DRAINS) {
      await step(`groups: drain c64, ${drain.groups} groups, groupConcurrency ${drain.groupConcurrency}`, async () => {
        const r = await groupDrain(backend, { n, warmup: settings.drainWarmup, groups: drain.groups, taskOptions: { groupConcurrency: drain.groupConcurrency }, cpuProfDir, traceSql });
        push("ours", drain.id, r.tasksPerSec);
      });
    }
    const { backlog, groups } = settings.groupsClaim;
    await step(`groups: claim with ${backlog} queued over ${groups} groups`, async () => {
      const r = await groupClaimUnderBacklog(backend, { backlog, groups, samples: settings.claimSamples });
      push("ours", "groups.claim", r.limited);
      push("ours", "groups.claimPlain", r.plain);
    });
  }
  if (wants("steps")) {
    const { perTask, latencyCalls } = settings.steps;
    await step(`steps c1: 1 task × ${perTask} no-op steps`, async () => push("ours", "steps.c1", await stepsThroughput(backend, { tasks: 1, steps: perTask })));
    await step(`steps c64: 64 tasks × ${perTask} no-op steps`, async () => push("ours", "steps.c64", await stepsThroughput(backend, { tasks: 64, steps: perTask })));
    await step("park/wake (sleep 0 → resumed) and call() p50", async () => {
      const r = await parkWakeLatency(backend, { calls: latencyCalls, warmup: settings.latencyWarmup });
      push("ours", "parkWake.p50", r.park);
      push("ours", "parkWakeCall.p50", r.call);
    });
  }
  if (wants("claim")) {
    for (const backlog of settings.backlogs) {
      const id = `claim.${backlog / 1000}k`;
      await step(`claim with ${backlog} queued`, async () =>
        push("ours", id, await claimUnderBacklog(backend, { backlog, samples: settings.claimSamples })),
      );
    }
    const { terminal, queued } = settings.growth;
    await step(`claim with ${terminal} terminal + ${queued} queued`, async () =>
      push("ours", "claim.growth", await claimUnderBacklog(backend, { backlog: queued, terminal, samples: settings.claimSamples })),
    );
  }
}

const startedAt = new Date();
const machine = machineInfo();
const { backends, skipped } = await loadBackends();
for (const backend of backends) if (backend.name === "postgres") machine.postgres = await backend.version();
for (const backend of backends) if (backend.name === "mysql") machine.mysql = await backend.version();
log(`n=${settings.n} reps=${settings.reps} backends=${backends.map((b) => b.name).join(",")}${Object.keys(skipped).length ? ` (skipped: ${Object.keys(skipped).join(",")})` : ""}`);

const results = {};
const errors = [];
try {
  for (const backend of backends) {
    const result = { floors: {}, ours: {} };
    results[backend.name] = result;
    for (let rep = 1; rep <= settings.reps; rep += 1) await repetition(backend, result, rep, errors);
  }
} finally {
  await finishOurs();
  if (backends.some((backend) => backend.name === "postgres")) await (await import("./lib/pooler.mjs")).finishPooler();
  for (const backend of backends) await backend.finish();
}
// SQLite on better-sqlite3 and node:sqlite under Node 22 and on bun:sqlite under Bun (lib/drivers.mjs): after the repetitions, in the same run.
let drivers = null;
if (wants("drivers") && backends.some((backend) => backend.name === "sqlite")) {
  const started = performance.now();
  try {
    drivers = await driverComparison({ calls: settings.driverCalls, warmup: settings.latencyWarmup, reps: settings.reps }, log);
    log(`sqlite drivers (Node 22, Bun): ${Math.round(performance.now() - started)} ms`);
  } catch (err) {
    errors.push({ backend: "sqlite", rep: 0, id: "drivers", error: err instanceof Error ? err.stack : String(err) });
    log(`sqlite drivers (Node 22, Bun) FAILED: ${err instanceof Error ? err.message : String(err)}`);
  }
}
machine.loadAverageAtEnd = os.loadavg().map((v) => Math.round(v * 100) / 100);

const durationS = (Date.now() - startedAt.getTime()) / 1000;
const rows = buildRows(results, settings);
const targets = buildTargets(rows);
const markdown =
  renderMarkdown({ machine, settings, rows, results, skipped, startedAt: startedAt.toISOString(), durationS }) +
  (drivers === null ? "" : `\n${renderDrivers(drivers, settings.driverCalls)}`);
process.stdout.write(`${markdown}\n`);

mkdirSync(resultsDir, { recursive: true });
const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
const json = { startedAt: startedAt.toISOString(), durationS, machine, settings, args, skipped, results, rows, targets, drivers, errors };
writeFileSync(new URL(`${stamp}.json`, resultsDir), `${JSON.stringify(json, null, 2)}\n`);
writeFileSync(new URL("latest.md", resultsDir), `${markdown}\n`);
log(`wrote bench/results/${stamp}.json and bench/results/latest.md`);
if (errors.length > 0) {
  for (const e of errors) process.stderr.write(`\n${e.backend} rep ${e.rep} ${e.id}:\n${e.error}\n`);
  process.exitCode = 1;
}
