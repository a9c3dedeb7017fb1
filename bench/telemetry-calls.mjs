#!/usr/bin/env node
// What the worker's telemetry calls cost per task, outside any drain: the calls a traced worker makes for one
// task (its wait recorded at claim, its consumer span opened, entered and ended, its run time recorded, its
// outcome counted) driven in a loop against the SDK of lib/otel-noop.mjs, next to the same SDK calls made bare
// and to each of them alone. No database, no handler, no other work: the figures are the calls' own, which a
// drain (telemetry-cost.mjs) then pays again in cache misses and garbage collection among the worker's work.
//
//   node bench/telemetry-calls.mjs [--n 300000] [--rounds 3] [--modes none,wait,process,span,context,small,bare,worker]
//
//   none      the loop alone (the claimed rows it makes stand for the claim's)
//   wait      one histogram record with the wait histogram's attributes (queue, name)
//   process   one histogram record with the process histogram's attributes (system, queue, operation, name)
//   span      a consumer span with its seven attributes, started and ended
//   context   the API's trace.setSpan(ROOT_CONTEXT, span), entered with context.with
//   small     the worker's context holding the span (Telemetry.contextWithSpan), entered with context.with
//   bare      what a task costs in SDK calls, made bare: wait + span + context + process
//   worker    the worker's own telemetry (WorkerTelemetry: claimed, startCall, run, handlerEnded, settled)
//
// Each mode runs in its own process, once per round (rounds are the outer loop), after a warm-up; each figure
// is the median over the rounds of CPU time (user + system) and bytes allocated per task. Runs the BUILT
// packages (pnpm turbo run build --filter cairnq...).
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { median } from "./lib/stats.mjs";

const MODES = ["none", "wait", "process", "span", "context", "small", "bare", "worker"];
const BATCH = 64;

if (process.argv[2] === "--child") await child(process.argv[3], Number(process.argv[4]));
else await parent();

async function parent() {
  const { values } = parseArgs({ options: { n: { type: "string", default: "300000" }, rounds: { type: "string", default: "3" }, modes: { type: "string", default: MODES.join(",") } } });
  const modes = values.modes.split(",");
  for (const mode of modes) if (!MODES.includes(mode)) throw new Error(`unknown mode '${mode}' (${MODES.join(", ")})`);
  const samples = Object.fromEntries(modes.map((mode) => [mode, []]));
  for (let round = 1; round <= Number(values.rounds); round += 1) {
    for (const mode of modes) {
      const r = await runChild(mode, Number(values.n));
      samples[mode].push(r);
      process.stderr.write(`round ${round} ${mode}: ${r.cpuUs.toFixed(2)} µs CPU, ${Math.round(r.allocBytes)} B allocated per task\n`);
    }
  }
  console.log(`${values.n} tasks per mode, in claims of ${BATCH}, medians of ${values.rounds} round(s); per task:`);
  console.log("| mode | CPU µs | allocated bytes |");
  console.log("| --- | --- | --- |");
  for (const mode of modes) {
    const m = (key) => median(samples[mode].map((r) => r[key]));
    console.log(`| ${mode} | ${m("cpuUs").toFixed(2)} | ${Math.round(m("allocBytes"))} |`);
  }
}

function runChild(mode, n) {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ["--child", mode, String(n)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    let result = null;
    proc.on("message", (message) => {
      result = message;
    });
    proc.on("exit", (code) => (result === null ? reject(new Error(`the child exited (code ${code}) without a result`)) : resolve(result)));
  });
}

async function child(mode, n) {
  await import("./lib/otel-noop.mjs");
  const api = await import("@opentelemetry/api");
  const { Telemetry, DURATION_BUCKETS_SECONDS } = await import("../packages/runtime/dist/index.js");
  const { WorkerTelemetry } = await import("../packages/worker/dist/worker-telemetry.js");
  const telemetry = Telemetry.load({ tracerProvider: null, relation: "link" }, { meterProvider: null }, { requiredBy: "bench", from: import.meta.url, what: "bench" });
  const worker = new WorkerTelemetry(telemetry, { leaseMs: 30_000, slotsUsed: () => 0 });
  const tracer = api.trace.getTracer("cairnq");
  const meter = api.metrics.getMeter("bench");
  const advice = { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] };
  const waits = meter.createHistogram("wait", { unit: "s", advice });
  const runs = meter.createHistogram("process", { unit: "s", advice });
  const waitAttributes = Object.freeze({ "messaging.destination.name": "default", "cairnq.task.name": "noop" });
  const processAttributes = Object.freeze({ "messaging.system": "cairnq", "messaging.destination.name": "default", "messaging.operation.name": "process", "cairnq.task.name": "noop" });
  const RETURNED = Object.freeze({ kind: "returned", value: null });
  const handler = () => null;
  const startSpan = (row) =>
    tracer.startSpan(
      "process default",
      {
        kind: api.SpanKind.CONSUMER,
        attributes: {
          "messaging.system": "cairnq",
          "messaging.operation.type": "process",
          "messaging.operation.name": "process",
          "messaging.destination.name": "default",
          "cairnq.task.name": "noop",
          "messaging.message.id": row.id,
          "cairnq.task.attempt": row.attempt,
        },
      },
      api.ROOT_CONTEXT,
    );
  const placeholder = api.trace.wrapSpanContext({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 });
  const wait = (row) => waits.record((row.lease_until_ms - 30_000 - row.run_at_ms) / 1000, waitAttributes);
  const perTask = {
    none: () => {},
    wait,
    process: () => runs.record(0.0001, processAttributes),
    span: (row) => startSpan(row).end(),
    context: () => api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, placeholder), handler),
    small: () => api.context.with(telemetry.contextWithSpan(api.ROOT_CONTEXT, placeholder), handler),
    bare: (row) => {
      wait(row);
      const startedAt = performance.now();
      const span = startSpan(row);
      api.context.with(telemetry.contextWithSpan(api.ROOT_CONTEXT, span), handler);
      span.end();
      runs.record((performance.now() - startedAt) / 1000, processAttributes);
    },
  };
  const claim = (rows) => {
    if (mode === "worker") {
      worker.claimed(rows);
      for (const row of rows) {
        const ctx = { queue: row.queue, name: row.name, taskId: row.id, attempt: row.attempt, traceCarrier: null, callSpan: null };
        const call = worker.startCall([ctx]);
        worker.run(call, handler);
        worker.handlerEnded(call, RETURNED);
        worker.settled(ctx, "succeeded", null);
      }
    } else {
      const each = perTask[mode];
      for (const row of rows) each(row);
    }
  };
  let next = 0;
  const rowsOfClaim = () => {
    const rows = [];
    for (let i = 0; i < BATCH; i += 1, next += 1) {
      rows.push({ id: `019${next.toString(16).padStart(23, "0")}`, queue: "default", name: "noop", attempt: 1, run_at_ms: 1_000 + (next % 97), lease_until_ms: 31_200 });
    }
    return rows;
  };
  for (let i = 0; i < 30_000; i += BATCH) claim(rowsOfClaim());
  const profiler = new v8.GCProfiler();
  profiler.start();
  const usedFrom = v8.getHeapStatistics().used_heap_size;
  const cpuFrom = process.cpuUsage();
  for (let i = 0; i < n; i += BATCH) claim(rowsOfClaim());
  const cpu = process.cpuUsage(cpuFrom);
  const { statistics } = profiler.stop();
  // Allocated = what each collection found in use beyond what the previous one left, plus the growth since the last.
  let allocated = 0;
  let last = usedFrom;
  for (const gc of statistics) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - last;
    last = gc.afterGC.heapStatistics.usedHeapSize;
  }
  allocated += v8.getHeapStatistics().used_heap_size - last;
  process.send({ cpuUs: (cpu.user + cpu.system) / n, allocBytes: allocated / n });
  process.disconnect();
}
