/**
 * The parts of `@opentelemetry/api` CairnQ calls, as structural types, and
 * the loader that brings the package in only when `tracing` or `metrics` is
 * asked for.
 *
 * Why structural types rather than `import type` from the package: it is an
 * optional peer, and the published declarations of a package that names it
 * would fail to type-check in an application that never installed it. The
 * shapes below are what the API's 1.x line has had since 1.3; a real
 * `TracerProvider` or `MeterProvider` is assignable to the `…Like` types.
 */
import { createRequire } from "node:module";
import { CairnQError } from "@cairnq/protocol";

/** Anything with `getTracer` — a `TracerProvider` of the OpenTelemetry SDK. */
export interface TracerProviderLike {
  getTracer(name: string, version?: string, options?: object): unknown;
}

/** Anything with `getMeter` — a `MeterProvider` of the OpenTelemetry SDK. */
export interface MeterProviderLike {
  getMeter(name: string, version?: string, options?: object): unknown;
}

/** An OpenTelemetry `Context`. @internal */
export interface OtelContext {
  getValue(key: symbol): unknown;
  setValue(key: symbol, value: unknown): OtelContext;
  deleteValue(key: symbol): OtelContext;
}

/** Attribute values CairnQ sets. @internal */
export type OtelAttributes = Record<string, string | number | boolean>;

/** An OpenTelemetry `SpanContext`. @internal */
export interface OtelSpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
  readonly traceState?: { serialize(): string };
}

/** An OpenTelemetry `Span`. @internal */
export interface OtelSpan {
  spanContext(): OtelSpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: unknown): void;
  end(): void;
}

/** Options of `Tracer.startSpan`. @internal */
export interface OtelSpanOptions {
  kind?: number;
  attributes?: OtelAttributes;
  links?: { context: OtelSpanContext; attributes?: OtelAttributes }[];
  root?: boolean;
}

/** An OpenTelemetry `Tracer`. @internal */
export interface OtelTracer {
  startSpan(name: string, options?: OtelSpanOptions, context?: OtelContext): OtelSpan;
}

/** A synchronous counter or histogram. @internal */
export interface OtelRecorder {
  add?(value: number, attributes?: OtelAttributes): void;
  record?(value: number, attributes?: OtelAttributes): void;
}

/** An OpenTelemetry `Counter` / `UpDownCounter`. @internal */
export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

/** An OpenTelemetry `Histogram`. @internal */
export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

/** An OpenTelemetry observable instrument. @internal */
export interface OtelObservable {
  addCallback(callback: (result: { observe(value: number, attributes?: OtelAttributes): void }) => void): void;
}

/** Options of an instrument. @internal */
export interface OtelInstrumentOptions {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

/** An OpenTelemetry `Meter`. @internal */
export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createHistogram(name: string, options?: OtelInstrumentOptions): OtelHistogram;
  createObservableGauge(name: string, options?: OtelInstrumentOptions): OtelObservable;
  createObservableCounter(name: string, options?: OtelInstrumentOptions): OtelObservable;
}

/** The `@opentelemetry/api` module, in the parts CairnQ calls. @internal */
export interface OtelApi {
  readonly trace: {
    getTracerProvider(): { getTracer(name: string, version?: string): OtelTracer };
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
    getSpan(context: OtelContext): OtelSpan | undefined;
    wrapSpanContext(spanContext: OtelSpanContext): OtelSpan;
  };
  readonly context: {
    active(): OtelContext;
    with<R>(context: OtelContext, fn: () => R): R;
  };
  readonly metrics: {
    getMeterProvider(): { getMeter(name: string, version?: string): OtelMeter };
  };
  readonly ROOT_CONTEXT: OtelContext;
  readonly SpanKind: { readonly PRODUCER: number; readonly CONSUMER: number };
  readonly SpanStatusCode: { readonly ERROR: number };
  createTraceState(text?: string): { serialize(): string };
}

/** What {@link loadOpenTelemetry} needs to find the package and to explain its absence. */
export interface OtelSpec {
  /** The package that needs it, e.g. `"@cairnq/worker"`. */
  requiredBy: string;
  /** The option that asked for it, e.g. `"tracing"`. */
  option: string;
  /** `import.meta.url` of the calling module: the package resolves from there, as an import would. */
  from: string;
}

/**
 * Requires `@opentelemetry/api` as seen from `spec.from`, or throws a
 * {@link CairnQError} that says what to install.
 *
 * Required synchronously (as the store drivers are) so that a constructor
 * given `tracing: true` fails at once, in the line that asked for it, rather
 * than at the first submit. The API keeps its global state (the registered
 * providers, the context manager) under a `Symbol.for` key, so this copy and
 * an application's `import` of the package share one state.
 *
 * @example
 * ```ts
 * const api = loadOpenTelemetry({ requiredBy: "@cairnq/worker", option: "tracing", from: import.meta.url });
 * ```
 */
export function loadOpenTelemetry(spec: OtelSpec): OtelApi {
  const require = createRequire(spec.from);
  try {
    require.resolve("@opentelemetry/api");
  } catch (err) {
    throw new CairnQError(
      `${spec.requiredBy} needs '@opentelemetry/api' for the '${spec.option}' option, and it is not installed: ` +
        `CairnQ leaves it to the application so that an install without telemetry pulls in nothing. ` +
        `Install it (and an OpenTelemetry SDK to export with): npm install @opentelemetry/api`,
      { cause: err, fatal: true },
    );
  }
  return require("@opentelemetry/api") as OtelApi;
}
