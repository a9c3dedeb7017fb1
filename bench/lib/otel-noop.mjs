// An OpenTelemetry SDK as an application would start it — the
// AsyncLocalStorage context manager, a tracer provider with a batching
// span processor, a meter provider with a periodic reader — whose exporters
// drop everything: the bench measures what recording costs the worker, not
// what a collector costs.
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

const SUCCESS = { code: 0 };
const noopSpanExporter = { export: (_spans, done) => done(SUCCESS), shutdown: () => Promise.resolve(), forceFlush: () => Promise.resolve() };
const noopMetricExporter = { export: (_metrics, done) => done(SUCCESS), shutdown: () => Promise.resolve(), forceFlush: () => Promise.resolve() };

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(noopSpanExporter)] }));
metrics.setGlobalMeterProvider(
  new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: noopMetricExporter, exportIntervalMillis: 10_000 })] }),
);
