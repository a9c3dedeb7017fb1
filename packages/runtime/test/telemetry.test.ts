import { describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import type { OtelApi, OtelContext, OtelSpan } from "@cairnq/runtime";
import { ByTask, resolveMetrics, resolveTracing, Telemetry } from "@cairnq/runtime";

describe("the tracing and metrics options", () => {
  it("resolve true and objects, and reject anything else with InvalidArgument", () => {
    expect(resolveTracing(true, "x")).toEqual({ tracerProvider: null, relation: "link" });
    expect(resolveTracing({ relation: "child" }, "x")).toEqual({ tracerProvider: null, relation: "child" });
    expect(resolveMetrics(true, "x")).toEqual({ meterProvider: null });
    const provider = { getMeter: () => ({}) };
    expect(resolveMetrics({ meterProvider: provider }, "x")).toEqual({ meterProvider: provider });
    expect(() => resolveTracing(1, "x")).toThrow(InvalidArgument);
    expect(() => resolveTracing([], "x")).toThrow(/got an array/);
    expect(() => resolveMetrics("yes", "x")).toThrow(/got "yes"/);
    // A provider that is an object without the method, or a value of another type, is named with its article.
    expect(() => resolveTracing({ tracerProvider: {} }, "x")).toThrow(/got an object;/);
    expect(() => resolveMetrics({ meterProvider: () => 1 }, "x")).toThrow(/got a function;/);
    expect(() => resolveTracing({ relation: undefined, tracerProvider: 5n }, "x")).toThrow(/got 5n;/);
  });
});

describe("ByTask", () => {
  it("makes one value per queue and task name, and hands the same one back (last pair or not)", () => {
    const made: string[] = [];
    const byTask = new ByTask((queue, name) => {
      made.push(`${queue}/${name}`);
      return { queue, name };
    });
    const a = byTask.get("q", "a");
    expect(byTask.get("q", "a")).toBe(a);
    const b = byTask.get("q", "b");
    const c = byTask.get("r", "a");
    expect(byTask.get("q", "a")).toBe(a);
    expect(byTask.get("q", "b")).toBe(b);
    expect(byTask.get("r", "a")).toBe(c);
    expect(made).toEqual(["q/a", "q/b", "r/a"]);
  });
});

/** A context as the API's own: a map of values, copied on every set (what `@opentelemetry/api`'s BaseContext does). */
class MapContext implements OtelContext {
  constructor(readonly values: ReadonlyMap<symbol, unknown> = new Map()) {}
  getValue(key: symbol): unknown {
    return this.values.get(key);
  }
  setValue(key: symbol, value: unknown): OtelContext {
    return new MapContext(new Map(this.values).set(key, value));
  }
  deleteValue(key: symbol): OtelContext {
    const values = new Map(this.values);
    values.delete(key);
    return new MapContext(values);
  }
}

/** The parts of the API `contextWithSpan` uses, keeping the span under `spanKey`. */
function fakeApi(spanKey: symbol): OtelApi {
  const root = new MapContext();
  const trace = {
    getSpan: (context: OtelContext) => context.getValue(spanKey) as OtelSpan | undefined,
    setSpan: (context: OtelContext, span: OtelSpan) => context.setValue(spanKey, span),
    wrapSpanContext: (spanContext: unknown) => ({ spanContext: () => spanContext }) as unknown as OtelSpan,
  };
  return { trace, ROOT_CONTEXT: root } as unknown as OtelApi;
}

/** A Telemetry on `api` (its constructor is private: `Telemetry.load` requires the real package). */
function telemetryOn(api: OtelApi): Telemetry {
  return new (Telemetry as unknown as new (api: OtelApi, tracing: null, metrics: null) => Telemetry)(api, null, null);
}

describe("Telemetry.contextWithSpan", () => {
  const span = { name: "the span" } as unknown as OtelSpan;
  const other = Symbol("another value");

  it("with the API's own span key: a small context that reads as trace.setSpan's, and becomes the API's context when a value is set or deleted", () => {
    const api = fakeApi(Symbol.for("OpenTelemetry Context Key SPAN"));
    const telemetry = telemetryOn(api);
    const parent = api.ROOT_CONTEXT.setValue(other, "from the parent");
    const context = telemetry.contextWithSpan(parent, span);
    expect(context).not.toBeInstanceOf(MapContext);
    expect(api.trace.getSpan(context)).toBe(span);
    expect(context.getValue(other)).toBe("from the parent");
    const set = context.setValue(other, "replaced");
    expect(set).toBeInstanceOf(MapContext);
    expect(api.trace.getSpan(set)).toBe(span);
    expect(set.getValue(other)).toBe("replaced");
    const deleted = context.deleteValue(other);
    expect(api.trace.getSpan(deleted)).toBe(span);
    expect(deleted.getValue(other)).toBeUndefined();
  });

  it("with an API that keeps the span under another key: the API's own context, as trace.setSpan makes it", () => {
    const api = fakeApi(Symbol("a different span key"));
    const context = telemetryOn(api).contextWithSpan(api.ROOT_CONTEXT, span);
    expect(context).toBeInstanceOf(MapContext);
    expect(api.trace.getSpan(context)).toBe(span);
  });
});

describe("Telemetry.send with tracing on", () => {
  const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  const SPAN = "00f067aa0ba902b7";

  /** A Telemetry with tracing on, on a tracer that records the spans it starts and ends. */
  function traced(): { telemetry: Telemetry; spans: string[] } {
    const spans: string[] = [];
    const api = fakeApi(Symbol("span key"));
    const span = {
      spanContext: () => ({ traceId: TRACE, spanId: SPAN, traceFlags: 1 }),
      setAttribute: () => span,
      setStatus: () => span,
      recordException: () => undefined,
      end: () => spans.push("end"),
    } as unknown as OtelSpan;
    const tracer = { startSpan: (name: string) => (spans.push(`start ${name}`), span) };
    Object.assign(api, { context: { active: () => api.ROOT_CONTEXT, with: (_c: unknown, fn: () => unknown) => fn() }, SpanKind: { PRODUCER: 3 } });
    const Ctor = Telemetry as unknown as new (api: OtelApi, tracing: unknown, metrics: null) => Telemetry;
    const telemetry = new Ctor(api, { tracerProvider: { getTracer: () => tracer }, relation: "link" }, null);
    return { telemetry, spans };
  }

  it("adds the carrier to plain-object metadata (or to {} when there is none)", async () => {
    const { telemetry, spans } = traced();
    const written: unknown[] = [];
    const write = (input: { metadata?: unknown }) => (written.push(input.metadata), Promise.resolve({ id: "t1" }));
    await telemetry.send({ name: "m", metadata: { a: 1 } }, write, (out) => out);
    await telemetry.send({ name: "m" }, write, (out) => out);
    const carrier = { traceparent: `00-${TRACE}-${SPAN}-01` };
    expect(written).toEqual([{ a: 1, "cairnq.trace": carrier }, { "cairnq.trace": carrier }]);
    expect(spans).toEqual(["start send default", "end", "start send default", "end"]);
  });

  // Spread beside the carrier, an array would become an object the store accepts. The kinds refused are
  // protocol's table (trace-context.test.ts); here, only that nothing is spanned or written.
  it("refuses metadata that is an array, as the untraced submit does, before any span or write", async () => {
    const metadata = [1, 2];
    const { telemetry, spans } = traced();
    let writes = 0;
    const send = telemetry.send(
      { name: "m", metadata: metadata as unknown as Record<string, unknown> },
      () => ((writes += 1), Promise.resolve({ id: "t1" })),
      (out) => out,
    );
    await expect(send).rejects.toThrow(InvalidArgument);
    await expect(send).rejects.toThrow(/^metadata must be a plain object, got an array/);
    expect(writes).toBe(0);
    expect(spans).toEqual([]);
  });
});
