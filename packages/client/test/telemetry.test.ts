import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AlreadyExists, InvalidArgument } from "@cairnq/protocol";
import { TRACE_CONTEXT_METADATA_KEY } from "@cairnq/protocol/sdk";
import type { OtelHarness } from "@cairnq/test-support/otel";
import { counterTotal, otelHarness } from "@cairnq/test-support/otel";
import { CairnQ } from "../src/index.js";
import { claimWhenQueued, MemoryStore } from "./support.js";

let otel: OtelHarness;
beforeEach(() => {
  otel = otelHarness();
});
afterEach(async () => {
  await otel.shutdown();
  // The in-memory exporter answers each export on a timer of its own: let the last one fire before the timer guard looks.
  await new Promise((resolve) => setTimeout(resolve, 5));
});

describe("producer spans", () => {
  it("a submit is a PRODUCER span `send <queue>`, a child of the active span, whose context is stored with the task", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { tracing: { tracerProvider: otel.tracerProvider } });
    const request = otel.tracerProvider.getTracer("app").startSpan("POST /orders");
    const task = await context.with(trace.setSpan(context.active(), request), () =>
      client.submit("ship", { order: 1 }, { queue: "fulfilment", metadata: { tenant: "acme" } }),
    );
    request.end();
    const send = otel.spans().find((span) => span.kind === SpanKind.PRODUCER);
    expect(send?.name).toBe("send fulfilment");
    expect(send?.attributes).toEqual({
      "messaging.system": "cairnq",
      "messaging.operation.type": "send",
      "messaging.operation.name": "send",
      "messaging.destination.name": "fulfilment",
      "messaging.message.id": task.id,
      "cairnq.task.name": "ship",
    });
    expect(send?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    const { traceId, spanId } = send?.spanContext() ?? { traceId: "", spanId: "" };
    // Stored in the same write: the row the submit returned already has it, beside the user's own metadata.
    expect(task.metadata).toEqual({ tenant: "acme", [TRACE_CONTEXT_METADATA_KEY]: { traceparent: `00-${traceId}-${spanId}-01` } });
    expect((await store.get(task.id))?.metadata).toEqual(task.metadata);
  });

  it("keeps the W3C tracestate of the span", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { tracing: { tracerProvider: otel.tracerProvider } });
    const parent = trace.wrapSpanContext({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      traceFlags: 1,
      isRemote: true,
      traceState: (await import("@opentelemetry/api")).createTraceState("vendor=abc"),
    });
    const task = await context.with(trace.setSpan(context.active(), parent), () => client.submit("x"));
    const carrier = task.metadata[TRACE_CONTEXT_METADATA_KEY] as { traceparent: string; tracestate: string };
    expect(carrier.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    expect(carrier.tracestate).toBe("vendor=abc");
  });

  it("submitOutcome and call are traced too; a failed submit ends its span with ERROR", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { tracing: { tracerProvider: otel.tracerProvider } });
    const { task } = await client.submitOutcome("keyed", {}, { key: "k1", conflict: "reject" });
    await expect(client.submitOutcome("keyed", {}, { key: "k1", conflict: "reject" })).rejects.toBeInstanceOf(AlreadyExists);
    const sends = otel.spans().filter((span) => span.name === "send default");
    expect(sends).toHaveLength(2);
    expect(sends[0]?.attributes["messaging.message.id"]).toBe(task.id);
    expect(sends[1]?.status.code).toBe(SpanStatusCode.ERROR);
    expect(sends[1]?.attributes["error.type"]).toBe("AlreadyExists");

    // call(): the submit is a send span too, and its context is stored with the task.
    const call = client.call("rpc", { x: 1 }, { queue: "rpc", waitTimeoutMs: 5_000, pollMs: 5, maxPollMs: 5 });
    const claimed = await claimWhenQueued(store, "rpc");
    await store.complete({ taskId: claimed.id, workerId: claimed.workerId, result: { ok: true } });
    await expect(call).resolves.toEqual({ ok: true });
    const rpc = otel.spans().find((span) => span.name === "send rpc");
    expect(rpc?.attributes["messaging.message.id"]).toBe(claimed.id);
    expect(claimed.metadata[TRACE_CONTEXT_METADATA_KEY]).toEqual({ traceparent: `00-${rpc?.spanContext().traceId}-${rpc?.spanContext().spanId}-01` });
  });

  it("the trace-context key is reserved while tracing is on; without tracing, metadata is stored as given", async () => {
    const store = new MemoryStore();
    const traced = new CairnQ(store, { tracing: { tracerProvider: otel.tracerProvider } });
    await expect(traced.submit("x", {}, { metadata: { [TRACE_CONTEXT_METADATA_KEY]: 1 } })).rejects.toThrow(InvalidArgument);
    await expect(traced.submit("x", {}, { metadata: { [TRACE_CONTEXT_METADATA_KEY]: 1 } })).rejects.toThrow(/'cairnq\.trace' is reserved/);
    const plain = new CairnQ(store);
    const task = await plain.submit("x", {}, { metadata: { tenant: "acme" } });
    expect(task.metadata).toEqual({ tenant: "acme" });
  });

  it("with the API but no SDK registered, nothing is stored (there is no trace to continue)", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { tracing: true });
    const task = await client.submit("x", {}, { metadata: { a: 1 } });
    expect(task.metadata).toEqual({ a: 1 });
  });
});

describe("metrics", () => {
  it("counts sent tasks by queue and name; a provider registered after the client was built still receives them", async () => {
    const store = new MemoryStore();
    const client = new CairnQ(store, { metrics: true });
    await client.submit("early");
    otel.registerGlobal();
    await client.submit("mail", {}, { queue: "q1" });
    await client.submit("mail", {}, { queue: "q1" });
    const metrics = await otel.collect();
    const sent = metrics.get("messaging.client.sent.messages");
    expect(counterTotal(sent, { "messaging.destination.name": "q1", "cairnq.task.name": "mail" })).toBe(2);
    expect(counterTotal(sent, { "cairnq.task.name": "early" })).toBe(0);
  });

  it("rejects bad options with InvalidArgument", () => {
    const store = new MemoryStore();
    expect(() => new CairnQ(store, { metrics: "on" as never })).toThrow(/metrics must be true, false or \{ meterProvider\? \}/);
    expect(() => new CairnQ(store, { tracing: { tracerProvider: 5 as never } })).toThrow(/tracing\.tracerProvider must be a TracerProvider/);
  });
});
