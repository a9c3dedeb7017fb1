export { loadOpenTelemetry } from "./otel-api.js";
export type {
  MeterProviderLike,
  OtelApi,
  OtelAttributes,
  OtelContext,
  OtelCounter,
  OtelHistogram,
  OtelMeter,
  OtelSpan,
  OtelSpanContext,
  OtelSpanOptions,
  OtelTracer,
  OtelSpec,
  TracerProviderLike,
} from "./otel-api.js";
export { resolveMetrics, resolveTracing } from "./telemetry-options.js";
export type { MetricsOptions, ResolvedMetrics, ResolvedTracing, TraceRelation, TracingOptions } from "./telemetry-options.js";
export {
  ByTask,
  carrierOf,
  DURATION_BUCKETS_SECONDS,
  INSTRUMENTATION_SCOPE,
  markError,
  messagingAttributes,
  MESSAGING_SYSTEM,
  METRIC_NAMES,
  Telemetry,
  TELEMETRY_ATTRIBUTES,
} from "./telemetry.js";
export type { MarkErrorOptions, TelemetryHost } from "./telemetry.js";
