#!/usr/bin/env node
// What the OpenTelemetry SDK itself charges for each thing a traced worker asks of it per task, measured
// alone (no store, no worker): the consumer span (start with the worker's attributes, end, onEnd into the
// batching processor), each histogram record the worker makes per task (process duration with its 4
// attributes, wait time with its 2), and a context.with() under the AsyncLocalStorage context manager —
// with the same SDK setup as the telemetry row (lib/otel-noop.mjs). Put next to telemetry-cost.mjs's
// "both − off" (the whole traced task's extra CPU), it says how much of that extra is the SDK's fixed
// price per task and how much is CairnQ's own code around it. CPU time per operation (user + system) of
// this process, the median of `--rounds` rounds of `--n` operations each after a warm-up; read the
// figures against each other, not against another run.
//
// The last two rows put CairnQ's own code beside the SDK's: one task's telemetry as the worker makes it
// (packages/worker's WorkerTelemetry from the built dist: `claimed`, `startCall` with a stored trace context,
// `run`, `handlerEnded`, `settled`), against the same SDK calls made bare (the span with its 7 attributes and
// link, `context.with` inside it, the two histogram records). Their difference is what CairnQ adds around the
// SDK per task outside the store and the handler's promises.
//
//   node bench/otel-sdk-costs.mjs [--n 200000] [--rounds 5]
import { context, metrics, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { parseArgs } from "node:util";
import "./lib/otel-noop.mjs";
import { median } from "./lib/stats.mjs";
import { traceCarrierOf } from "../packages/protocol/dist/sdk.js";
import { Telemetry } from "../packages/runtime/dist/index.js";
import { WorkerTelemetry } from "../packages/worker/dist/worker-telemetry.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "200000" }, rounds: { type: "string", default: "5" } } });
const n = Number(values.n);
const rounds = Number(values.rounds);
if (!(Number.isInteger(n) && n > 0) || !(Number.isInteger(rounds) && rounds > 0)) throw new Error("--n and --rounds take positive integers");

// The worker's shapes (packages/worker/src/worker-telemetry.ts): the same keys, values of the same kind.
// DURATION_BUCKETS_SECONDS of @cairnq/runtime (not a dependency of the bench).
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600];
const meter = metrics.getMeter("otel-sdk-costs");
const histogram = meter.createHistogram("cairnq.bench.duration", { unit: "s", advice: { explicitBucketBoundaries: BUCKETS } });
const PROCESS = Object.freeze({ "messaging.system": "cairnq", "messaging.operation.name": "process", "messaging.destination.name": "default", "cairnq.task.name": "noop" });
const WAIT = Object.freeze({ "messaging.destination.name": "default", "cairnq.task.name": "noop" });
const tracer = trace.getTracer("otel-sdk-costs");
const LINK = { context: { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1, isRemote: true } };

/** The consumer span's attributes, a new object per task as the worker makes them. */
const spanAttributes = (i) => ({
  "messaging.system": "cairnq",
  "messaging.operation.type": "process",
  "messaging.operation.name": "process",
  "messaging.destination.name": "default",
  "cairnq.task.name": "noop",
  "messaging.message.id": `01JTASK${i}`,
  "cairnq.task.attempt": 1,
});

// The worker's telemetry, on the SDK above (the global providers), for a task that carries its submitter's context.
const workerTelemetry = new WorkerTelemetry(
  Telemetry.of({ tracing: true, metrics: true }, { requiredBy: "@cairnq/worker", from: new URL("../packages/worker/dist/worker.js", import.meta.url).href, what: "otel-sdk-costs" }),
  { leaseMs: 30_000, slotsUsed: () => 1 },
);
const CARRIER = traceCarrierOf({ "cairnq.trace": { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } });
if (CARRIER === null) throw new Error("the stored trace context did not parse");
const processHistogram = meter.createHistogram("cairnq.bench.process", { unit: "s", advice: { explicitBucketBoundaries: BUCKETS } });
const waitHistogram = meter.createHistogram("cairnq.bench.wait", { unit: "s", advice: { explicitBucketBoundaries: BUCKETS } });
const inside = () => 1;

const OPERATIONS = {
  "consumer span, 7 attributes, a link (the worker's)": (i) => tracer.startSpan("process default", { kind: SpanKind.CONSUMER, attributes: spanAttributes(i), links: [LINK] }, ROOT_CONTEXT).end(),
  "consumer span, 7 attributes, no link": (i) => tracer.startSpan("process default", { kind: SpanKind.CONSUMER, attributes: spanAttributes(i) }, ROOT_CONTEXT).end(),
  "consumer span, no attributes": () => tracer.startSpan("process default", { kind: SpanKind.CONSUMER }, ROOT_CONTEXT).end(),
  "histogram record, 4 attributes (process duration)": (i) => histogram.record(i * 1e-6, PROCESS),
  "histogram record, 2 attributes (wait time)": (i) => histogram.record(i * 1e-6, WAIT),
  "histogram record, no attributes": (i) => histogram.record(i * 1e-6),
  "context.with (AsyncLocalStorage)": (i) => context.with(ROOT_CONTEXT, () => i),
  "one task's telemetry, the SDK calls bare (span + link, context.with, 2 records)": (i) => {
    const span = tracer.startSpan("process default", { kind: SpanKind.CONSUMER, attributes: spanAttributes(i), links: [LINK] }, ROOT_CONTEXT);
    waitHistogram.record(i * 1e-6, WAIT);
    context.with(trace.setSpan(ROOT_CONTEXT, span), inside);
    span.end();
    processHistogram.record(i * 1e-6, PROCESS);
  },
  "one task's telemetry, through the worker's WorkerTelemetry": (i) => {
    workerTelemetry.claimed([{ queue: "default", name: "noop", lease_until_ms: 31_000 + i, run_at_ms: 1_000 }]);
    const ctx = { queue: "default", name: "noop", taskId: `01JTASK${i}`, attempt: 1, traceCarrier: CARRIER, callSpan: null };
    const call = workerTelemetry.startCall([ctx]);
    workerTelemetry.run(call, inside);
    workerTelemetry.handlerEnded(call, { kind: "returned" });
    workerTelemetry.settled(ctx, "succeeded", null);
  },
};

const samples = Object.fromEntries(Object.keys(OPERATIONS).map((name) => [name, []]));
for (const op of Object.values(OPERATIONS)) for (let i = 0; i < 20_000; i += 1) op(i);
for (let round = 0; round < rounds; round += 1) {
  for (const [name, op] of Object.entries(OPERATIONS)) {
    const before = process.cpuUsage();
    for (let i = 0; i < n; i += 1) op(i);
    const spent = process.cpuUsage(before);
    samples[name].push(((spent.user + spent.system) * 1000) / n);
  }
}
console.log(`OpenTelemetry SDK operations, CPU ns per operation, median of ${rounds} rounds of ${n} (min–max):`);
console.log("| operation | ns | min–max |\n| --- | --- | --- |");
for (const [name, ns] of Object.entries(samples)) console.log(`| ${name} | ${median(ns).toFixed(0)} | ${Math.min(...ns).toFixed(0)}–${Math.max(...ns).toFixed(0)} |`);
// The periodic reader and the batching processor hold timers: nothing left to measure.
process.exit(0);
