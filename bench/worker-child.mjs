// The worker process of the drain, memory and latency measurements: one
// CairnQ worker with a no-op handler on the target, driven over IPC.
//
//   argv[2] = JSON { target, worker: WorkerOptions, taskOptions?, expect, warmup, stamp?, handlerMs? }
//   parent → child: { type: "start" }   start the worker (the drain clock starts here)
//                   { type: "stop" }    close the worker and exit
//   child → parent: { type: "ready" }   store connected (migrations done), handler registered
//                   { type: "done", ms, cpuUs, peakRssBytes, startRssBytes, peakHeapUsedBytes }
//                                       after `expect` tasks succeeded: ms since the `warmup`-th
//                                       success (since "start" when `warmup` is 0), the process's
//                                       CPU time (user + system, µs) over the same window, the
//                                       highest RSS (and V8 heap used) sampled every 50 ms meanwhile,
//                                       and the RSS at "start" (connected, idle)
//                   { type: "stats", busyRetries }  on "stop", before closing: the worker's SQLite busy
//                                       retries (null on Postgres)
//                   { type: "error", message }
//
// "Succeeded" is counted on `task:succeeded`, which the worker emits only
// after the store's complete() resolved, i.e. after the commit: when the count
// reaches `expect`, the store shows all of them succeeded (the parent checks
// with stats() afterwards).
import { createRequire } from "node:module";
import { busyRetriesOf, openWorker } from "./lib/targets.mjs";

const RSS_SAMPLE_MS = 50;
const config = JSON.parse(process.argv[2]);
const send = (message) => process.send?.(message);

// `telemetry`: an OpenTelemetry SDK (batched spans and periodic metrics, both to no-op exporters) and the
// worker's tracing and metrics on; the drain then pays for spans, context and instruments, not for an export.
if (config.telemetry) await import("./lib/otel-noop.mjs");
const telemetryOptions = config.telemetry ? { tracing: true, metrics: true } : {};

const worker = openWorker(config.target, {
  ...config.worker,
  ...telemetryOptions,
  onError: (err) => send({ type: "error", message: `worker error: ${err instanceof Error ? err.stack : String(err)}` }),
});
// `stamp`: the handler answers when it began (this machine's clock), so the parent can time the pickup.
// `handlerMs`: the handler awaits that long before it answers null (a task that waits on I/O).
const handlerMs = config.handlerMs ?? 0;
const pause = () => new Promise((resolve) => setTimeout(() => resolve(null), handlerMs));
// `taskOptions`: the noop task's options (e.g. `groupConcurrency` for the groups figures).
worker.task("noop", config.taskOptions ?? {}, config.stamp ? () => ({ at: Date.now() }) : handlerMs > 0 ? pause : () => null);

let succeeded = 0;
let startedAt = 0;
let peakRss = 0;
let peakHeapUsed = 0;
let startRss = 0;
let sampler = null;
let reported = false;

function sampleRss() {
  const { rss, heapUsed } = process.memoryUsage();
  if (rss > peakRss) peakRss = rss;
  if (heapUsed > peakHeapUsed) peakHeapUsed = heapUsed;
}

const warmup = config.warmup ?? 0;
let timedFrom = 0;
let cpuFrom = null;

worker.on("task:succeeded", () => {
  succeeded += 1;
  // The clock of a warmed drain starts at the warm-up's last success: the tasks after it are the timed ones.
  if (warmup > 0 && succeeded === warmup) {
    timedFrom = performance.now();
    cpuFrom = process.cpuUsage();
  }
  if (!reported && config.expect > 0 && succeeded >= config.expect) {
    reported = true;
    const ms = performance.now() - (warmup > 0 ? timedFrom : startedAt);
    // CPU time of this process over the timed window: what the worker itself spent, which the machine's other
    // processes disturb far less than the wall clock (they slow it through caches, not by taking its turn).
    const cpu = process.cpuUsage(cpuFrom ?? undefined);
    sampleRss();
    clearInterval(sampler);
    // Whether any OpenTelemetry module was loaded (CairnQ requires the API through Node's CommonJS loader).
    const otelLoaded = Object.keys(createRequire(import.meta.url).cache ?? {}).some((path) => path.includes("@opentelemetry"));
    send({ type: "done", ms, cpuUs: cpu.user + cpu.system, peakRssBytes: peakRss, startRssBytes: startRss, peakHeapUsedBytes: peakHeapUsed, otelLoaded });
  }
});
worker.on("task:failed", (e) => send({ type: "error", message: `task ${e.taskId} failed: ${JSON.stringify(e.error)}` }));

let running = null;
process.on("message", (message) => {
  if (message?.type === "start") {
    peakRss = 0;
    peakHeapUsed = 0;
    sampleRss();
    startRss = peakRss;
    startedAt = performance.now();
    cpuFrom = warmup > 0 ? null : process.cpuUsage();
    sampler = setInterval(sampleRss, RSS_SAMPLE_MS);
    running = worker.run();
  } else if (message?.type === "stop") {
    clearInterval(sampler);
    void (async () => {
      send({ type: "stats", busyRetries: busyRetriesOf(worker.store) });
      await worker.close();
      await running;
      process.disconnect?.();
    })();
  }
});
process.on("disconnect", () => {
  // The parent went away without a stop (it crashed): do not linger as an orphan.
  if (!worker.running) return;
  void worker.close().finally(() => process.exit(0));
});

try {
  await worker.store.connect();
  send({ type: "ready" });
} catch (err) {
  send({ type: "error", message: `connect failed: ${err instanceof Error ? err.stack : String(err)}` });
  process.exitCode = 1;
  process.disconnect?.();
}
