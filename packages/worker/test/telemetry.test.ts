import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Task } from "@cairnq/protocol";
import { InvalidArgument, TaskError } from "@cairnq/protocol";
import { TRACE_CONTEXT_METADATA_KEY } from "@cairnq/protocol/sdk";
import type { OtelHarness } from "@cairnq/test-support/otel";
import { counterTotal, histogramCount, otelHarness } from "@cairnq/test-support/otel";
import { Worker } from "../src/index.js";
import type { TaskContext, WorkerErrorInfo } from "../src/index.js";
import { delay, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

let otel: OtelHarness;
beforeEach(() => {
  otel = otelHarness();
});
afterEach(async () => {
  await otel.shutdown();
});

/** Submits a task as a traced submitter would: its producer span's traceparent stored in the metadata. */
async function submitTraced(store: MemoryStore, name: string, extra: Record<string, unknown> = {}): Promise<{ task: Task; traceId: string; spanId: string }> {
  const span = otel.tracerProvider.getTracer("test").startSpan("send default", { kind: SpanKind.PRODUCER });
  const { traceId, spanId } = span.spanContext();
  span.end();
  const task = await store.submit({
    name,
    maxAttempts: 1,
    metadata: { ...extra, [TRACE_CONTEXT_METADATA_KEY]: { traceparent: `00-${traceId}-${spanId}-01` } },
  });
  return { task, traceId, spanId };
}

function processSpans() {
  return otel.spans().filter((span) => span.name.startsWith("process "));
}

describe("consumer spans", () => {
  it("a handler call is a CONSUMER span `process <queue>` with the pinned attributes, linked to the submitter's span", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider } });
    let seenMetadata: Record<string, unknown> | null = null;
    worker.task("email", (ctx) => {
      seenMetadata = ctx.metadata;
      return "ok";
    });
    const { task, traceId, spanId } = await submitTraced(store, "email", { tenant: "acme" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 1);
    const [span] = processSpans();
    expect(span?.name).toBe("process default");
    expect(span?.kind).toBe(SpanKind.CONSUMER);
    expect(span?.attributes).toMatchObject({
      "messaging.system": "cairnq",
      "messaging.operation.type": "process",
      "messaging.destination.name": "default",
      "messaging.message.id": task.id,
      "cairnq.task.name": "email",
      "cairnq.task.attempt": 1,
    });
    // Linked (the default): a new trace, no parent, one link to the producer span.
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.spanContext().traceId).not.toBe(traceId);
    expect(span?.links.map((link) => [link.context.traceId, link.context.spanId])).toEqual([[traceId, spanId]]);
    expect(span?.status.code).toBe(SpanStatusCode.UNSET);
    // The handler sees the metadata it was submitted with, not the stored trace context.
    expect(seenMetadata).toEqual({ tenant: "acme" });
  });

  it('relation "child": the consumer span is the submitter\'s child, in its trace', async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider, relation: "child" } });
    worker.task("email", () => "ok");
    const { task, traceId, spanId } = await submitTraced(store, "email");
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 1);
    const [span] = processSpans();
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.parentSpanContext?.spanId).toBe(spanId);
    expect(span?.links).toEqual([]);
  });

  it("a task submitted without a trace context still gets a span (a new trace, no link)", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider, relation: "child" } });
    worker.task("plain", () => null);
    const task = await store.submit({ name: "plain" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 1);
    expect(processSpans()[0]?.parentSpanContext).toBeUndefined();
    expect(processSpans()[0]?.links).toEqual([]);
  });

  it("the link is the stored context exactly: trace id, span id, flags, remote, tracestate; a damaged carrier only loses the link", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider } });
    worker.task("linked", () => null);
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const spanId = "00f067aa0ba902b7";
    const stored = await store.submit({
      name: "linked",
      metadata: { [TRACE_CONTEXT_METADATA_KEY]: { traceparent: `00-${traceId}-${spanId}-00`, tracestate: "vendor=abc,other=1" } },
    });
    const damaged = await store.submit({ name: "linked", metadata: { [TRACE_CONTEXT_METADATA_KEY]: { traceparent: `00-${traceId}-${spanId}-1` } } });
    void worker.run();
    await waitForStatus(store, stored.id, ["succeeded"]);
    await waitForStatus(store, damaged.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 2);
    const byId = (id: string) => processSpans().find((span) => span.attributes["messaging.message.id"] === id);
    const link = byId(stored.id)?.links[0]?.context;
    expect(link).toMatchObject({ traceId, spanId, traceFlags: 0, isRemote: true });
    expect(link?.traceState?.serialize()).toBe("vendor=abc,other=1");
    expect(byId(damaged.id)?.links).toEqual([]);
  });

  it("the handler runs inside its span: the user's spans nest under it, and the worker's loops are outside any caller's context", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider } });
    const tracer = otel.tracerProvider.getTracer("app");
    worker.task("nested", async () => {
      await delay(1);
      tracer.startSpan("user work").end();
      return null;
    });
    const task = await store.submit({ name: "nested" });
    // run() inside a caller's span: the handler's span must not become its child.
    const outer = tracer.startSpan("startup");
    void context.with(trace.setSpan(context.active(), outer), () => worker.run());
    outer.end();
    await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 1);
    const process = processSpans()[0];
    const user = otel.spans().find((span) => span.name === "user work");
    expect(user?.parentSpanContext?.spanId).toBe(process?.spanContext().spanId);
    expect(user?.spanContext().traceId).toBe(process?.spanContext().traceId);
    expect(process?.parentSpanContext).toBeUndefined();
    expect(process?.spanContext().traceId).not.toBe(outer.spanContext().traceId);
  });

  it("the handler's context is a full OpenTelemetry context: values set or deleted in it keep the call's span active", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider } });
    const key = Symbol.for("test: a value an instrumentation keeps in the context");
    const seen: Record<string, unknown> = {};
    worker.task("values", async () => {
      const active = context.active();
      const withValue = active.setValue(key, "kept");
      seen.spanId = trace.getSpan(active)?.spanContext().spanId;
      seen.withValueSpanId = trace.getSpan(withValue)?.spanContext().spanId;
      seen.value = withValue.getValue(key);
      seen.deleted = withValue.deleteValue(key).getValue(key);
      seen.deletedSpanId = trace.getSpan(withValue.deleteValue(key))?.spanContext().spanId;
      seen.noSpan = trace.getSpan(trace.deleteSpan(active));
      seen.unknown = active.getValue(key);
      // Entered again, as an instrumented callback would be, and across an await.
      await context.with(withValue, async () => {
        await delay(1);
        seen.innerSpanId = trace.getActiveSpan()?.spanContext().spanId;
        seen.innerValue = context.active().getValue(key);
      });
      return null;
    });
    const task = await store.submit({ name: "values" });
    void worker.run();
    await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 1);
    const spanId = processSpans()[0]?.spanContext().spanId;
    expect(spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(seen).toEqual({
      spanId,
      withValueSpanId: spanId,
      value: "kept",
      deleted: undefined,
      deletedSpanId: spanId,
      noSpan: undefined,
      unknown: undefined,
      innerSpanId: spanId,
      innerValue: "kept",
    });
  });

  it("a failed handler's span has status ERROR, error.type and the error's message as its status message (thrown, TaskError, ctx.fail)", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider } });
    worker.task("throws", () => {
      throw new RangeError("out of range");
    });
    worker.task("task-error", () => {
      throw new TaskError("bad input", { type: "BadInput" });
    });
    worker.task("ctx-fail", async (ctx) => {
      await ctx.fail(new TypeError("nope"), { retryable: false });
      return null;
    });
    const ids = await Promise.all(["throws", "task-error", "ctx-fail"].map(async (name) => (await store.submit({ name, maxAttempts: 1 })).id));
    void worker.run();
    for (const id of ids) await waitForStatus(store, id, ["failed"]);
    await waitFor(() => processSpans().length === 3);
    const byName = new Map(processSpans().map((span) => [span.attributes["cairnq.task.name"], span]));
    for (const [name, type, message] of [
      ["throws", "RangeError", "out of range"],
      ["task-error", "BadInput", "bad input"],
      ["ctx-fail", "TypeError", "nope"],
    ] as const) {
      const span = byName.get(name);
      expect(span?.status, name).toEqual({ code: SpanStatusCode.ERROR, message });
      expect(span?.attributes["error.type"], name).toBe(type);
    }
    expect(byName.get("throws")?.events.some((event) => event.name === "exception")).toBe(true);
  });

  it("an idle worker makes no span: polls, claims and heartbeats are not traced", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider }, pollIntervalMs: 5 });
    worker.task("slow", async () => {
      await delay(120); // several heartbeats (every 20 ms)
      return null;
    });
    void worker.run();
    await delay(100); // ~20 empty polls
    expect(otel.spans()).toEqual([]);
    const task = await store.submit({ name: "slow" });
    await waitForStatus(store, task.id, ["succeeded"]);
    await delay(50);
    expect(otel.spans().map((span) => span.name)).toEqual(["process default"]);
  });

  it("a batch call is one span with the count, linked to each task's submitter", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider, relation: "child" }, concurrency: 1 });
    const submitted = [await submitTraced(store, "embed"), await submitTraced(store, "embed"), await submitTraced(store, "embed")];
    worker.task("embed", { batch: 3 }, () => undefined);
    void worker.run();
    for (const { task } of submitted) await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 1);
    const [span] = processSpans();
    expect(span?.attributes["messaging.batch.message_count"]).toBe(3);
    expect(span?.attributes["messaging.message.id"]).toBeUndefined();
    // A batch has three submitters: it links to each, even with relation "child".
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.links.map((link) => link.context.spanId).sort()).toEqual(submitted.map((s) => s.spanId).sort());
  });

  it("a child submitted from a handler gets a PRODUCER span under the call's span, and its trace context", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider, relation: "child" } });
    let childId = "";
    worker.task("parent", async (ctx) => {
      childId = (await ctx.submit("child", {}, { metadata: { mine: 1 } })).id;
      return null;
    });
    worker.task("child", () => null);
    const parent = await store.submit({ name: "parent" });
    void worker.run();
    await waitForStatus(store, parent.id, ["succeeded"]);
    await waitFor(() => childId !== "");
    await waitForStatus(store, childId, ["succeeded"]);
    await waitFor(() => processSpans().length === 2);
    const parentSpan = processSpans().find((span) => span.attributes["cairnq.task.name"] === "parent");
    const send = otel.spans().find((span) => span.kind === SpanKind.PRODUCER);
    const childSpan = processSpans().find((span) => span.attributes["cairnq.task.name"] === "child");
    expect(send?.name).toBe("send default");
    expect(send?.attributes["messaging.message.id"]).toBe(childId);
    expect(send?.parentSpanContext?.spanId).toBe(parentSpan?.spanContext().spanId);
    expect(childSpan?.parentSpanContext?.spanId).toBe(send?.spanContext().spanId);
    const row = await store.get(childId);
    expect(row?.metadata).toMatchObject({ mine: 1, [TRACE_CONTEXT_METADATA_KEY]: { traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/) } });
  });
});

describe("logs inside a traced handler", () => {
  it("the worker's records about a task carry trace_id and span_id of its call's span", async () => {
    const store = new MemoryStore();
    const records: { msg: string; fields: Record<string, unknown> }[] = [];
    const log = (msg: string, fields: Record<string, unknown>): void => void records.push({ msg, fields });
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider }, logger: { debug: log, info: log, warn: log, error: log } });
    worker.task("ok", () => null);
    worker.task("bad", () => {
      throw new TaskError("no");
    });
    const ok = await store.submit({ name: "ok" });
    const bad = await store.submit({ name: "bad", maxAttempts: 1 });
    void worker.run();
    await waitForStatus(store, ok.id, ["succeeded"]);
    await waitForStatus(store, bad.id, ["failed"]);
    await waitFor(() => processSpans().length === 2);
    for (const [id, msg] of [
      [ok.id, "task succeeded"],
      [bad.id, "task failed"],
    ] as const) {
      const span = processSpans().find((s) => s.attributes["messaging.message.id"] === id);
      const record = records.find((r) => r.msg === msg && r.fields["taskId"] === id);
      expect(record?.fields).toMatchObject({ trace_id: span?.spanContext().traceId, span_id: span?.spanContext().spanId });
    }
  });
});

describe("errors and lost leases of a traced task", () => {
  it("a heartbeat failure reaches onError with traceId/spanId and the logger with trace_id/span_id; a lease lost is logged with them", async () => {
    const spy = spyStore();
    const records: { msg: string; fields: Record<string, unknown> }[] = [];
    const log = (msg: string, fields: Record<string, unknown>): void => void records.push({ msg, fields });
    const errors: WorkerErrorInfo[] = [];
    let failures = 1;
    spy.hooks.heartbeatBatch = (_args, next) => (failures-- > 0 ? Promise.reject(new Error("beat failed")) : next());
    const worker = makeWorker(spy.store, {
      tracing: { tracerProvider: otel.tracerProvider },
      heartbeatIntervalMs: 10,
      logger: { debug: log, info: log, warn: log, error: log },
      onError: (_err, info) => errors.push(info),
    });
    let beatFailed = (): void => {};
    const reported = new Promise<void>((resolve) => {
      beatFailed = resolve;
    });
    worker.task("stolen", async (ctx) => {
      await reported;
      // Another worker takes the task over: this worker's next heartbeat finds the lease gone.
      await spy.inner.fail({ taskId: ctx.taskId, workerId: ctx.workerId, attempt: ctx.attempt, error: {}, retryable: false, delayMs: 0 });
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      return null;
    });
    const task = await spy.store.submit({ name: "stolen" });
    void worker.run();
    await waitFor(() => errors.length > 0);
    beatFailed();
    await waitFor(() => records.some((r) => r.msg.startsWith("lease lost")));
    await waitFor(() => processSpans().length === 1);
    const ids = { traceId: processSpans()[0]?.spanContext().traceId, spanId: processSpans()[0]?.spanContext().spanId };
    expect(ids.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(errors[0]).toEqual({ phase: "execute", taskId: task.id, ...ids });
    const fields = { trace_id: ids.traceId, span_id: ids.spanId };
    expect(records.find((r) => r.msg === "beat failed")?.fields).toMatchObject({ taskId: task.id, ...fields });
    expect(records.find((r) => r.msg.startsWith("lease lost"))?.fields).toMatchObject({ taskId: task.id, ...fields });
  });

  it("a call whose lease was lost ends its span ERROR with error.type LostLease and the loss's message, whether the handler then returned or threw", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider }, metrics: { meterProvider: otel.meterProvider } });
    const stolen = async (ctx: TaskContext): Promise<void> => {
      // Another worker takes the task over: this worker's next heartbeat finds the lease gone.
      await store.fail({ taskId: ctx.taskId, workerId: ctx.workerId, attempt: ctx.attempt, error: {}, retryable: false, delayMs: 0 });
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
    };
    worker.task("returns", async (ctx) => {
      await stolen(ctx);
      return null;
    });
    worker.task("throws", async (ctx) => {
      await stolen(ctx);
      throw new Error("gave up: the signal aborted");
    });
    const ids = await Promise.all(["returns", "throws"].map(async (name) => (await store.submit({ name })).id));
    void worker.run();
    await waitFor(() => processSpans().length === 2);
    for (const id of ids) {
      const span = processSpans().find((s) => s.attributes["messaging.message.id"] === id);
      const name = String(span?.attributes["cairnq.task.name"]);
      expect(span?.status.code, name).toBe(SpanStatusCode.ERROR);
      expect(span?.status.message, name).toBe(`the lease on task ${id} was not renewed (it expired or the task was settled elsewhere); stop working on it`);
      expect(span?.attributes["error.type"], name).toBe("LostLease");
    }
    const durations = (await otel.collect()).get("messaging.process.duration");
    expect(histogramCount(durations, { "error.type": "LostLease" })).toBe(2);
    expect(histogramCount(durations)).toBe(2);
  });

  it("without tracing, onError's info has no trace ids", async () => {
    const spy = spyStore();
    const errors: WorkerErrorInfo[] = [];
    let failures = 1;
    spy.hooks.heartbeatBatch = (_args, next) => (failures-- > 0 ? Promise.reject(new Error("beat failed")) : next());
    const worker = makeWorker(spy.store, { metrics: { meterProvider: otel.meterProvider }, heartbeatIntervalMs: 10, onError: (_err, info) => errors.push(info) });
    worker.task("x", async () => {
      await delay(60);
      return null;
    });
    const task = await spy.store.submit({ name: "x" });
    void worker.run();
    await waitForStatus(spy.store, task.id, ["succeeded"]);
    expect(errors[0]).toEqual({ phase: "execute", taskId: task.id });
  });
});

describe("metrics", () => {
  it("counts consumed tasks, outcomes and records process and wait durations with the task's queue and name", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { metrics: { meterProvider: otel.meterProvider } });
    let attempts = 0;
    worker.task("flaky", () => {
      attempts += 1;
      if (attempts === 1) throw new Error("first attempt fails");
      return null;
    });
    worker.task("doomed", () => {
      throw new TaskError("never");
    });
    const flaky = await store.submit({ name: "flaky", queue: "default", maxAttempts: 2 });
    const doomed = await store.submit({ name: "doomed", maxAttempts: 1 });
    void worker.run();
    await waitForStatus(store, flaky.id, ["succeeded"]);
    await waitForStatus(store, doomed.id, ["failed"]);
    await delay(20);
    const metrics = await otel.collect();
    expect(counterTotal(metrics.get("messaging.client.consumed.messages"), { "cairnq.task.name": "flaky" })).toBe(2);
    expect(counterTotal(metrics.get("messaging.client.consumed.messages"), { "cairnq.task.name": "doomed" })).toBe(1);
    const outcomes = metrics.get("cairnq.task.outcomes");
    expect(counterTotal(outcomes, { "cairnq.task.name": "flaky", "cairnq.task.outcome": "retried" })).toBe(1);
    expect(counterTotal(outcomes, { "cairnq.task.name": "flaky", "cairnq.task.outcome": "succeeded" })).toBe(1);
    expect(counterTotal(outcomes, { "cairnq.task.name": "doomed", "cairnq.task.outcome": "failed" })).toBe(1);
    expect(histogramCount(metrics.get("messaging.process.duration"), { "cairnq.task.name": "flaky" })).toBe(2);
    expect(histogramCount(metrics.get("messaging.process.duration"), { "cairnq.task.name": "doomed", "error.type": "TaskError" })).toBe(1);
    expect(histogramCount(metrics.get("cairnq.task.wait.duration"), { "messaging.destination.name": "default" })).toBe(3);
    const buckets = metrics.get("messaging.process.duration")?.dataPoints[0]?.value as { buckets: { boundaries: number[] } };
    expect(buckets.buckets.boundaries[0]).toBe(0.001);
    expect(buckets.buckets.boundaries.at(-1)).toBe(3600);
    expect(metrics.has("cairnq.worker.slots.used")).toBe(true);
  });

  it("the slots gauge carries messaging.system only, as docs/telemetry.md's metrics table says", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { metrics: { meterProvider: otel.meterProvider } });
    worker.task("x", () => null);
    const task = await store.submit({ name: "x" });
    void worker.run();
    // The instruments are made at the first claim.
    await waitForStatus(store, task.id, ["succeeded"]);
    const gauge = (await otel.collect()).get("cairnq.worker.slots.used");
    expect(gauge?.dataPoints.map((point) => point.attributes)).toEqual([{ "messaging.system": "cairnq" }]);
    const docs = await readFile(new URL("../../../docs/telemetry.md", import.meta.url), "utf8");
    const row = docs.split("\n").find((line) => line.startsWith("| `cairnq.worker.slots.used` |"));
    // | instrument | kind | unit | attributes | recorded by |
    expect(row?.split(" | ")[3]).toBe("`messaging.system`");
  });

  it("counts a durable sleep, wait or join that parks its task as `parked`, not `retried`; a failed attempt that will retry is `retried`", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { metrics: { meterProvider: otel.meterProvider } });
    let parentParked = (): void => {};
    const joining = new Promise<void>((resolve) => {
      parentParked = resolve;
    });
    worker.on("task:parked", (event) => {
      if (event.name === "joins") parentParked();
    });
    worker.task("sleeps", async (ctx) => {
      await ctx.sleep("nap", 20);
      return null;
    });
    worker.task("waits", async (ctx) => {
      await ctx.waitFor("never-sent", { timeoutMs: 20 });
      return null;
    });
    worker.task("joins", async (ctx) => {
      const id = await ctx.spawn("kid", "kid", {});
      await ctx.join("kid", [id]);
      return null;
    });
    // The child finishes only after its parent parked on the join, so the join parks every time.
    worker.task("kid", async () => {
      await joining;
      return null;
    });
    let attempts = 0;
    worker.task("flaky", () => {
      attempts += 1;
      if (attempts === 1) throw new Error("first attempt fails");
      return null;
    });
    const tasks = await Promise.all(["sleeps", "waits", "joins", "flaky"].map((name) => store.submit({ name, maxAttempts: 2 })));
    void worker.run();
    for (const task of tasks) await waitForStatus(store, task.id, ["succeeded"]);
    await delay(20);
    const outcomes = (await otel.collect()).get("cairnq.task.outcomes");
    const counted = (name: string) =>
      Object.fromEntries(["succeeded", "retried", "failed", "canceled", "parked"].map((outcome) => [outcome, counterTotal(outcomes, { "cairnq.task.name": name, "cairnq.task.outcome": outcome })]));
    for (const name of ["sleeps", "waits", "joins"]) expect(counted(name), name).toEqual({ succeeded: 1, retried: 0, failed: 0, canceled: 0, parked: 1 });
    expect(counted("flaky")).toEqual({ succeeded: 1, retried: 1, failed: 0, canceled: 0, parked: 0 });
  });

  it("counts a lease lost under a running handler", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { metrics: { meterProvider: otel.meterProvider } });
    worker.task("stolen", async (ctx) => {
      // Another worker takes the task over: this worker's next heartbeat finds the lease gone.
      await store.fail({ taskId: ctx.taskId, workerId: ctx.workerId, attempt: ctx.attempt, error: {}, retryable: false, delayMs: 0 });
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      return null;
    });
    await store.submit({ name: "stolen" });
    void worker.run();
    await waitFor(async () => counterTotal((await otel.collect()).get("cairnq.task.lease.lost"), { "cairnq.task.name": "stolen" }) === 1);
  });

  it("a meter provider registered globally after the worker started still receives its metrics", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { metrics: true });
    worker.task("x", () => null);
    void worker.run();
    const before = await store.submit({ name: "x" });
    await waitForStatus(store, before.id, ["succeeded"]);
    otel.registerGlobal(); // as an app whose SDK starts after its worker does
    const after = await Promise.all([store.submit({ name: "x" }), store.submit({ name: "x" })]);
    for (const task of after) await waitForStatus(store, task.id, ["succeeded"]);
    await delay(20);
    const metrics = await otel.collect();
    expect(counterTotal(metrics.get("messaging.client.consumed.messages"))).toBe(2);
    expect(counterTotal(metrics.get("cairnq.task.outcomes"), { "cairnq.task.outcome": "succeeded" })).toBe(2);
  });
});

describe("what telemetry does per task", () => {
  it("per task: one span, one record on each histogram with a shared attribute object, no synchronous counter add", async () => {
    const records = new Map<string, object[]>();
    const adds: string[] = [];
    const instrument = (name: string) => ({
      record: (_value: number, attributes: object) => void (records.get(name) ?? records.set(name, []).get(name))?.push(attributes),
      add: () => void adds.push(name),
      addCallback: () => {},
    });
    const meter = { createCounter: instrument, createHistogram: instrument, createObservableGauge: instrument, createObservableCounter: instrument };
    const store = new MemoryStore();
    const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider }, metrics: { meterProvider: { getMeter: () => meter } }, claimBatch: 8, concurrency: 8 });
    worker.task("x", () => null);
    const tasks = await Promise.all(Array.from({ length: 20 }, () => store.submit({ name: "x" })));
    void worker.run();
    for (const task of tasks) await waitForStatus(store, task.id, ["succeeded"]);
    await waitFor(() => processSpans().length === 20);
    for (const name of ["messaging.process.duration", "cairnq.task.wait.duration"]) {
      const seen = records.get(name) ?? [];
      expect(seen).toHaveLength(20);
      // The same frozen object every time: nothing is built per record.
      expect(new Set(seen).size).toBe(1);
      expect(Object.isFrozen(seen[0])).toBe(true);
    }
    // The SDK hashes a record's attributes each time: the wait histogram carries the two that vary, not the constant ones.
    expect(records.get("messaging.process.duration")?.[0]).toEqual({
      "messaging.system": "cairnq",
      "messaging.destination.name": "default",
      "messaging.operation.name": "process",
      "cairnq.task.name": "x",
    });
    expect(records.get("cairnq.task.wait.duration")?.[0]).toEqual({ "messaging.destination.name": "default", "cairnq.task.name": "x" });
    expect(adds).toEqual([]);
  });
});

describe("metrics after a late provider, through a handler's ctx.submit", () => {
  it("the worker's instruments follow a provider registered while a handler submits (its sent counter and the worker's own share one meter)", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { metrics: true });
    let childId = "";
    let registered = (): void => {};
    const gate = new Promise<void>((resolve) => {
      registered = resolve;
    });
    worker.task("parent", async (ctx) => {
      await gate;
      // The first use of the new meter is this submit's counter: the worker's instruments must still move to it.
      childId = (await ctx.submit("child", {})).id;
      return null;
    });
    worker.task("child", () => null);
    const parent = await store.submit({ name: "parent" });
    void worker.run();
    await waitForStatus(store, parent.id, ["running"]);
    otel.registerGlobal();
    registered();
    await waitForStatus(store, parent.id, ["succeeded"]);
    const later = await store.submit({ name: "child" });
    await waitForStatus(store, later.id, ["succeeded"]);
    await waitForStatus(store, childId, ["succeeded"]);
    await delay(20);
    const metrics = await otel.collect();
    expect(counterTotal(metrics.get("messaging.client.sent.messages"), { "cairnq.task.name": "child" })).toBe(1);
    // Both children were claimed after the provider changed (parent's was claimed before).
    expect(counterTotal(metrics.get("messaging.client.consumed.messages"), { "cairnq.task.name": "child" })).toBe(2);
    expect(counterTotal(metrics.get("cairnq.task.outcomes"), { "cairnq.task.outcome": "succeeded" })).toBe(3);
  });
});

describe("options", () => {
  it("rejects bad tracing and metrics options, naming what to write", () => {
    const store = new MemoryStore();
    expect(() => new Worker(store, { tracing: "yes" as never })).toThrow(InvalidArgument);
    expect(() => new Worker(store, { tracing: { relation: "parent" as never } })).toThrow(/tracing\.relation must be "link".*or "child"/);
    expect(() => new Worker(store, { tracing: { tracerprovider: {} } as never })).toThrow(/did you mean 'tracerProvider'/);
    expect(() => new Worker(store, { metrics: { meterProvider: {} as never } })).toThrow(/metrics\.meterProvider must be a MeterProvider/);
    expect(() => new Worker(store, { tracing: false, metrics: false, logger: null })).not.toThrow();
  });
});
