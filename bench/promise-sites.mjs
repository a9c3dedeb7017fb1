#!/usr/bin/env node
// Where a draining worker's promises come from: the c64 drain of the telemetry row (one worker, concurrency 64,
// claimBatch 64), with a V8 promise hook over the timed tasks that counts every promise made and, for one
// promise in `--every`, takes its creation stack. Prints promises per task, then the sampled stacks grouped by
// their first `--depth` frames in CairnQ's own code (packages/*/dist; node_modules and node: frames are kept
// only as the frame that called into them), each as promises per task. The stack capture costs far more than a
// promise: the counts are exact, the time is not a figure to read.
//
//   node bench/promise-sites.mjs [--backend sqlite|postgres] [--n 10000] [--mode off|both] [--every 7] [--depth 3] [--top 25]
//
// On Postgres (CAIRNQ_BENCH_PG_DSN) the drain fills a fresh schema first. Runs the BUILT packages
// (pnpm turbo run build --filter cairnq...).
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import v8 from "node:v8";

const WARMUP = 2_000;

if (process.argv[2] === "--child") await child(JSON.parse(process.argv[3]));
else await parent();

async function parent() {
  const { values } = parseArgs({
    options: {
      backend: { type: "string", default: "sqlite" },
      n: { type: "string", default: "10000" },
      mode: { type: "string", default: "off" },
      every: { type: "string", default: "7" },
      depth: { type: "string", default: "3" },
      top: { type: "string", default: "25" },
    },
  });
  if (values.mode !== "off" && values.mode !== "both") throw new Error(`--mode is off or both, got '${values.mode}'`);
  const n = Number(values.n);
  const config = { mode: values.mode, n, every: Number(values.every), depth: Number(values.depth) };
  const { fill } = await import("./lib/ours.mjs");
  let result;
  if (values.backend === "postgres") {
    const { postgresBackend } = await import("./lib/postgres-backend.mjs");
    try {
      const { target, cleanup } = await postgresBackend.fresh("promise-sites");
      try {
        await fill(target, WARMUP + n);
        result = await runChild({ ...config, target });
      } finally {
        await cleanup();
      }
    } finally {
      await postgresBackend.finish();
    }
  } else {
    const dir = mkdtempSync(join(tmpdir(), "cairnq-promise-sites-"));
    try {
      const target = { backend: "sqlite", path: join(dir, "drain.db") };
      await fill(target, WARMUP + n);
      result = await runChild({ ...config, target });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(`c64 drain of ${n} tasks after ${WARMUP} untimed, ${values.backend}, telemetry ${values.mode}: ${(result.promises / n).toFixed(2)} promises per task`);
  console.log(`sampled 1 in ${config.every}, by creation site (first ${config.depth} frames of CairnQ's code, innermost first), per task:`);
  const sites = Object.entries(result.sites).sort((a, b) => b[1] - a[1]);
  for (const [site, count] of sites.slice(0, Number(values.top))) {
    console.log(`${((count * config.every) / n).toFixed(3).padStart(7)}  ${site}`);
  }
}

function runChild(config) {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ["--child", JSON.stringify(config)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    let result = null;
    proc.on("message", (message) => {
      result = message;
    });
    proc.on("exit", (code) => (result === null ? reject(new Error(`the child exited (code ${code}) without a result`)) : resolve(result)));
  });
}

/** The frames of a stack worth grouping by: CairnQ's own, and the first frame outside it below each run of them. */
function siteOf(stack, depth) {
  const frames = [];
  const lines = stack.split("\n").slice(1);
  for (const line of lines) {
    const own = /packages\/([\w-]+)\/dist\/([\w./-]+):(\d+)/.exec(line);
    const name = /at (?:async )?([^\s(]+) \(/.exec(line)?.[1] ?? "<anonymous>";
    if (own !== null) frames.push(`${name} ${own[1]}/${own[2]}:${own[3]}`);
    else if (frames.length === 0) frames.push(`[${name}]`);
    if (frames.filter((frame) => !frame.startsWith("[")).length >= depth) break;
  }
  return frames.join(" < ");
}

async function child({ target, mode, n, every, depth }) {
  if (mode !== "off") await import("./lib/otel-noop.mjs");
  const { openWorker } = await import("./lib/targets.mjs");
  const worker = openWorker(target, { concurrency: 64, claimBatch: 64, tracing: mode === "both", metrics: mode === "both", onError: (err) => console.error(err) });
  worker.task("noop", () => null);
  await worker.store.connect();
  let succeeded = 0;
  let promises = 0;
  let counting = false;
  const sites = {};
  Error.stackTraceLimit = 40;
  const stop = v8.promiseHooks.onInit(() => {
    if (!counting) return;
    promises += 1;
    if (promises % every !== 0) return;
    const site = siteOf(new Error().stack ?? "", depth);
    sites[site] = (sites[site] ?? 0) + 1;
  });
  const done = new Promise((resolve) => {
    worker.on("task:succeeded", () => {
      succeeded += 1;
      if (succeeded === WARMUP) counting = true;
      else if (succeeded === WARMUP + n) {
        counting = false;
        resolve({ promises, sites });
      }
    });
  });
  const running = worker.run();
  const result = await done;
  stop();
  await worker.close();
  await running;
  process.send(result);
  process.disconnect();
}
