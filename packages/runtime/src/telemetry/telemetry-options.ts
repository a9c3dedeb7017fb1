/**
 * The `tracing` and `metrics` options shared by the client and the worker
 * (and every factory), checked the way every other option is: unknown keys
 * and wrong types are an `InvalidArgument` that says what to write.
 */
import { InvalidArgument } from "@cairnq/protocol";
import { describe } from "@cairnq/protocol/adapter";
import { checkOptions } from "../options.js";
import type { MeterProviderLike, TracerProviderLike } from "./otel-api.js";

/**
 * How a consumer span relates to the span that submitted its task:
 * `"link"` — a new trace that links to the submitter's span (the
 * OpenTelemetry messaging conventions' choice: a task may run long after,
 * and many times); `"child"` — a child of the submitter's span, in its trace.
 */
export type TraceRelation = "link" | "child";

/** The object form of the `tracing` option. */
export interface TracingOptions {
  /** Where spans go. @default the global provider (`trace.getTracerProvider()`), resolved when a span starts */
  tracerProvider?: TracerProviderLike | undefined;
  /**
   * How the worker's `process <queue>` span relates to the submitter's
   * `send <queue>` span (read by the worker; the client accepts it so one
   * options object can serve both). @default "link"
   */
  relation?: TraceRelation | undefined;
}

/** The object form of the `metrics` option. */
export interface MetricsOptions {
  /**
   * Where measurements go. @default the global provider
   * (`metrics.getMeterProvider()`), looked up again until one is registered,
   * so an SDK started after the client or worker still receives data
   */
  meterProvider?: MeterProviderLike | undefined;
}

/** `tracing` after checking: `null` when off. */
export interface ResolvedTracing {
  readonly tracerProvider: TracerProviderLike | null;
  readonly relation: TraceRelation;
}

/** `metrics` after checking: `null` when off. */
export interface ResolvedMetrics {
  readonly meterProvider: MeterProviderLike | null;
}

const TRACING_KEYS = ["tracerProvider", "relation"] as const satisfies readonly (keyof TracingOptions)[];
const METRICS_KEYS = ["meterProvider"] as const satisfies readonly (keyof MetricsOptions)[];

/**
 * Checks a `tracing` option: `undefined`, `null` and `false` are off; `true`
 * uses the global provider; an object may name a provider and a relation.
 *
 * @example
 * ```ts
 * resolveTracing({ relation: "child" }, "new Worker(store, options)"); // { tracerProvider: null, relation: "child" }
 * ```
 */
export function resolveTracing(value: unknown, what: string): ResolvedTracing | null {
  if (value === undefined || value === null || value === false) return null;
  if (value === true) return { tracerProvider: null, relation: "link" };
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidArgument("tracing", `tracing must be true, false or { tracerProvider?, relation? }, got ${describe(value)}`);
  }
  const options = checkOptions(value, `${what} tracing`, TRACING_KEYS) as TracingOptions;
  const relation = options.relation ?? "link";
  if (relation !== "link" && relation !== "child") {
    throw new InvalidArgument(
      "tracing.relation",
      `tracing.relation must be "link" (the process span links to the submitter's span; the default) or "child" (it is the submitter's span's child), got ${describe(relation)}`,
    );
  }
  return { tracerProvider: provider(options.tracerProvider, "tracing.tracerProvider", "getTracer", "a TracerProvider"), relation };
}

/**
 * Checks a `metrics` option: `undefined`, `null` and `false` are off; `true`
 * uses the global provider; an object may name a provider.
 */
export function resolveMetrics(value: unknown, what: string): ResolvedMetrics | null {
  if (value === undefined || value === null || value === false) return null;
  if (value === true) return { meterProvider: null };
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidArgument("metrics", `metrics must be true, false or { meterProvider? }, got ${describe(value)}`);
  }
  const options = checkOptions(value, `${what} metrics`, METRICS_KEYS) as MetricsOptions;
  return { meterProvider: provider(options.meterProvider, "metrics.meterProvider", "getMeter", "a MeterProvider") };
}

function provider<T>(value: T | undefined, argument: string, method: string, kind: string): T | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || typeof (value as Record<string, unknown>)[method] !== "function") {
    throw new InvalidArgument(argument, `${argument} must be ${kind} of the OpenTelemetry SDK (an object with ${method}()), got ${describe(value)}; omit it to use the global one`);
  }
  return value;
}

