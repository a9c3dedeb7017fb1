/**
 * Durable steps in traces (`step-spans.ts`): a step that runs is a span
 * `step <name>` under the call's consumer span, with its occurrence; a step
 * replayed from the journal makes none; a step that throws is ERROR; a
 * spawned child carries the parent's trace context, so its `process` span
 * joins the parent's trace.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { TRACE_CONTEXT_METADATA_KEY } from "@cairnq/protocol/sdk";
import type { OtelHarness } from "@cairnq/test-support/otel";
import { otelHarness } from "@cairnq/test-support/otel";
import { MemoryStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

let otel: OtelHarness;
beforeEach(() => {
  otel = otelHarness();
});
afterEach(async () => {
  await otel.shutdown();
});

const spansNamed = (prefix: string) => otel.spans().filter((span) => span.name.startsWith(prefix));

it("each step that runs is a span `step <name>` under the call's consumer span, with its occurrence; a replayed step makes none", async () => {
  const store = new MemoryStore();
  const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider }, retryBackoffMs: 1 });
  worker.task("pages", async (ctx) => {
    await ctx.step("page", () => 1);
    await ctx.step("page", () => 2);
    if (ctx.attempt === 1) throw new Error("again");
    return ctx.step("total", () => 3);
  });
  const task = await store.submit({ name: "pages", maxAttempts: 2 });
  void worker.run();
  await waitForStatus(store, task.id, ["succeeded"]);
  await waitFor(() => spansNamed("process ").length === 2);
  const calls = spansNamed("process ").sort((a, b) => Number(a.attributes["cairnq.task.attempt"]) - Number(b.attributes["cairnq.task.attempt"]));
  const steps = spansNamed("step ");
  // Attempt 1 ran page, page#2; attempt 2 replayed both (no spans) and ran total.
  expect(steps.map((span) => [span.name, span.attributes["cairnq.step.occurrence"], span.parentSpanContext?.spanId])).toEqual([
    ["step page", 1, calls[0]?.spanContext().spanId],
    ["step page", 2, calls[0]?.spanContext().spanId],
    ["step total", 1, calls[1]?.spanContext().spanId],
  ]);
  for (const span of steps) {
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.spanContext().traceId).toBe(span.name === "step total" ? calls[1]?.spanContext().traceId : calls[0]?.spanContext().traceId);
  }
  expect(steps[2]?.attributes).toMatchObject({
    "messaging.system": "cairnq",
    "messaging.message.id": task.id,
    "cairnq.task.name": "pages",
    "cairnq.task.attempt": 2,
    "cairnq.step.name": "total",
  });
});

it("a step that throws is a span with status ERROR and error.type", async () => {
  const store = new MemoryStore();
  const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider } });
  worker.task("boom", async (ctx) => {
    await ctx.step("charge", () => {
      throw new TypeError("card declined");
    });
  });
  const task = await store.submit({ name: "boom", maxAttempts: 1 });
  void worker.run();
  await waitForStatus(store, task.id, ["failed"]);
  await waitFor(() => spansNamed("step ").length === 1);
  const [span] = spansNamed("step ");
  expect(span?.name).toBe("step charge");
  expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  expect(span?.attributes["error.type"]).toBe("TypeError");
});

it("a spawned child carries the parent's trace context (cairnq.trace): its process span joins the parent's trace", async () => {
  const store = new MemoryStore();
  const worker = makeWorker(store, { tracing: { tracerProvider: otel.tracerProvider, relation: "child" } });
  let childId = "";
  worker.task("parent", async (ctx) => {
    childId = await ctx.spawn("kid", "child", {});
    const [row] = await ctx.join("kids", [childId]);
    return row?.status ?? null;
  });
  worker.task("child", () => "done");
  const parent = await store.submit({ name: "parent" });
  void worker.run();
  await waitForStatus(store, parent.id, ["succeeded"], 5000);
  const childRow = await store.get(childId);
  expect(childRow?.metadata).toMatchObject({ [TRACE_CONTEXT_METADATA_KEY]: { traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/) } });
  await waitFor(() => spansNamed("process ").length === 3);
  const [firstCall] = spansNamed("process ").filter((span) => span.attributes["cairnq.task.name"] === "parent");
  const childCall = spansNamed("process ").find((span) => span.attributes["cairnq.task.name"] === "child");
  const send = otel.spans().find((span) => span.kind === SpanKind.PRODUCER);
  expect(send?.name).toBe("send default");
  expect(send?.attributes["messaging.message.id"]).toBe(childId);
  expect(send?.parentSpanContext?.spanId).toBe(firstCall?.spanContext().spanId);
  expect(childCall?.spanContext().traceId).toBe(firstCall?.spanContext().traceId);
  expect(childCall?.parentSpanContext?.spanId).toBe(send?.spanContext().spanId);
});
