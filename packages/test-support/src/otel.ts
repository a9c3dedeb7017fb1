/**
 * An in-memory OpenTelemetry SDK for tests: a tracer provider whose finished
 * spans are kept, a meter provider whose reader collects on demand, and the
 * AsyncLocalStorage context manager (what the Node SDK registers), so a
 * span made active around a handler is active in its awaits.
 */
import type { ContextManager } from "@opentelemetry/api";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import type { DataPoint, Histogram, MetricData } from "@opentelemetry/sdk-metrics";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

/** A metric reader that collects only when asked. */
class OnDemandReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** The harness: providers, what they recorded, and `shutdown()` to undo every global it set. */
export interface OtelHarness {
  readonly tracerProvider: BasicTracerProvider;
  readonly meterProvider: MeterProvider;
  readonly exporter: InMemorySpanExporter;
  /** Finished spans, in the order they ended. */
  spans(): ReadableSpan[];
  /** Every metric collected now, by name. */
  collect(): Promise<Map<string, MetricData>>;
  /** Registers the providers as the global ones (the Node SDK's `start()` does the same). */
  registerGlobal(): void;
  shutdown(): Promise<void>;
}

let contextManager: ContextManager | null = null;

/**
 * Builds the in-memory SDK. The context manager is global and set once per
 * process; the providers are global only after {@link OtelHarness.registerGlobal}.
 */
export function otelHarness(): OtelHarness {
  if (contextManager === null) {
    contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
  }
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  let global = false;
  return {
    tracerProvider,
    meterProvider,
    exporter,
    spans: () => exporter.getFinishedSpans(),
    async collect() {
      const { resourceMetrics } = await reader.collect();
      const out = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) out.set(metric.descriptor.name, metric);
      return out;
    },
    registerGlobal() {
      trace.setGlobalTracerProvider(tracerProvider);
      metrics.setGlobalMeterProvider(meterProvider);
      global = true;
    },
    async shutdown() {
      if (global) {
        trace.disable();
        metrics.disable();
      }
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** The sum of a counter's data points whose attributes include `match`. */
export function counterTotal(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  if (metric === undefined) return 0;
  let total = 0;
  for (const point of metric.dataPoints as DataPoint<number>[]) if (matches(point.attributes, match)) total += point.value;
  return total;
}

/** The number of values a histogram recorded in data points whose attributes include `match`. */
export function histogramCount(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  if (metric === undefined) return 0;
  let total = 0;
  for (const point of metric.dataPoints as DataPoint<Histogram>[]) if (matches(point.attributes, match)) total += point.value.count;
  return total;
}

function matches(attributes: Record<string, unknown>, match: Record<string, unknown>): boolean {
  return Object.entries(match).every(([key, value]) => attributes[key] === value);
}
