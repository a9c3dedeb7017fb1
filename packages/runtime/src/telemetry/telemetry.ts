/**
 * What the client and the worker share to speak OpenTelemetry: the names
 * (span names, attributes, instruments), the histogram buckets, the tracer
 * and the lazily resolved meter, the trace context written into a task at
 * submit and read back at run time, and the producer span around a submit.
 *
 * Words used here:
 * - *producer span* — `send <queue>`, kind PRODUCER, around one submit.
 * - *consumer span* — `process <queue>`, kind CONSUMER, around one handler call.
 * - *carrier* — the submitter's trace context as stored in the task
 *   (`@cairnq/protocol`'s `trace-context.ts`).
 */
import type { SubmitInput } from "@cairnq/protocol";
import type { ReadTraceCarrier, TraceCarrier } from "@cairnq/protocol/sdk";
import { formatTraceparent, parseTraceparent, requireTraceableMetadata, withTraceCarrier } from "@cairnq/protocol/sdk";
import type { OtelApi, OtelAttributes, OtelContext, OtelCounter, OtelMeter, OtelSpan, OtelSpanContext, OtelTracer } from "./otel-api.js";
import { loadOpenTelemetry } from "./otel-api.js";
import type { ResolvedMetrics, ResolvedTracing } from "./telemetry-options.js";
import { resolveMetrics, resolveTracing } from "./telemetry-options.js";

/** The instrumentation scope of every tracer and meter CairnQ makes. */
export const INSTRUMENTATION_SCOPE = "cairnq";

/** Attribute names (the OpenTelemetry messaging conventions', then CairnQ's own). */
export const TELEMETRY_ATTRIBUTES = Object.freeze({
  system: "messaging.system",
  operationType: "messaging.operation.type",
  operationName: "messaging.operation.name",
  destination: "messaging.destination.name",
  messageId: "messaging.message.id",
  batchCount: "messaging.batch.message_count",
  errorType: "error.type",
  taskName: "cairnq.task.name",
  attempt: "cairnq.task.attempt",
  outcome: "cairnq.task.outcome",
  lostReason: "cairnq.lease.lost_reason",
} as const);

/** `messaging.system`'s value. */
export const MESSAGING_SYSTEM = "cairnq";

/** Instrument names. */
export const METRIC_NAMES = Object.freeze({
  sent: "messaging.client.sent.messages",
  consumed: "messaging.client.consumed.messages",
  processDuration: "messaging.process.duration",
  waitDuration: "cairnq.task.wait.duration",
  outcomes: "cairnq.task.outcomes",
  leaseLost: "cairnq.task.lease.lost",
  slotsUsed: "cairnq.worker.slots.used",
} as const);

/**
 * Bucket bounds (seconds) of the duration histograms: from 1 ms to an hour,
 * roughly ×2–×2.5 apart. The SDK's default bounds (0 to 10 s in its own
 * steps) put every task longer than 10 s in one bucket; tasks here run from
 * a millisecond (a no-op) to the better part of an hour (a report, a model
 * call chain), and wait from nothing to however long a backlog lasts.
 */
export const DURATION_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600,
]);

/** Where telemetry is set up from: the role's package (for messages and the API's resolution). */
export interface TelemetryHost {
  /** `"@cairnq/client"` or `"@cairnq/worker"`. */
  readonly requiredBy: string;
  /** `import.meta.url` of the role's module. */
  readonly from: string;
  /** How the caller wrote the call, for messages: `"new Worker(store, options)"`. */
  readonly what: string;
}

/**
 * A role's telemetry: the OpenTelemetry API (loaded only when `tracing` or
 * `metrics` is on), its tracer, and its instruments, resolved lazily.
 */
export class Telemetry {
  readonly api: OtelApi;
  readonly tracing: ResolvedTracing | null;
  readonly metrics: ResolvedMetrics | null;
  #tracer: OtelTracer | null = null;
  #meterProvider: unknown = undefined;
  #meter: OtelMeter | null = null;
  #meterVersion = 0;
  #sent: OtelCounter | null = null;
  /** The sent counter's attributes and the producer span's name, per queue and task name. */
  readonly #sendNames = new ByTask((queue, name) => ({ attributes: Object.freeze(messagingAttributes(queue, name, "send")), spanName: `send ${queue}` }));
  /** The {@link Telemetry.meterVersion} `#sent` was made on. */
  #sentVersion = 0;

  /** Whether {@link SpanContext} stands for `trace.setSpan` with this copy of the API (checked once, at load). */
  readonly #lightContexts: boolean;

  private constructor(api: OtelApi, tracing: ResolvedTracing | null, metrics: ResolvedMetrics | null) {
    this.api = api;
    this.tracing = tracing;
    this.metrics = metrics;
    const probe = api.trace.wrapSpanContext({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 });
    this.#lightContexts = api.trace.getSpan(new SpanContext(api, api.ROOT_CONTEXT, probe)) === probe;
  }

  /**
   * `parent` with `span` active: what `trace.setSpan(parent, span)` returns, in one small object. The API's own
   * context copies its parent's entries into a new Map and makes three closures, for every span the worker
   * enters (one per handler call); this one holds the two references and makes the API's context only if
   * something inside sets or deletes a value.
   */
  contextWithSpan(parent: OtelContext, span: OtelSpan): OtelContext {
    return this.#lightContexts ? new SpanContext(this.api, parent, span) : this.api.trace.setSpan(parent, span);
  }

  /**
   * Checks `tracing` and `metrics`; `null` when both are off (nothing is
   * loaded then), else the role's telemetry.
   *
   * @throws InvalidArgument for a bad option; `CairnQError` when
   *   `@opentelemetry/api` is not installed.
   */
  static of(options: { tracing?: unknown; metrics?: unknown }, host: TelemetryHost): Telemetry | null {
    return Telemetry.load(resolveTracing(options.tracing, host.what), resolveMetrics(options.metrics, host.what), host);
  }

  /** {@link Telemetry.of} for options already checked: `null` when both are off. */
  static load(tracing: ResolvedTracing | null, metrics: ResolvedMetrics | null, host: TelemetryHost): Telemetry | null {
    if (tracing === null && metrics === null) return null;
    const api = loadOpenTelemetry({ requiredBy: host.requiredBy, option: tracing === null ? "metrics" : "tracing", from: host.from });
    return new Telemetry(api, tracing, metrics);
  }

  /**
   * The tracer, or `null` with tracing off. From the global provider it is
   * the API's proxy tracer, which follows a provider registered later.
   */
  tracer(): OtelTracer | null {
    if (this.tracing === null) return null;
    if (this.#tracer !== null) return this.#tracer;
    const provider = this.tracing.tracerProvider;
    this.#tracer = (provider === null ? this.api.trace.getTracerProvider().getTracer(INSTRUMENTATION_SCOPE) : provider.getTracer(INSTRUMENTATION_SCOPE)) as OtelTracer;
    return this.#tracer;
  }

  /**
   * The meter, or `null` with metrics off. With no provider given, the
   * global provider is looked up on every call (a property read, no
   * allocation) and the meter rebuilt when it changed: the API has no proxy
   * meter, so a meter taken before the SDK registered would drop everything
   * for good. {@link Telemetry.meterVersion} then moves: a caller that built
   * instruments on an older version builds them again.
   */
  meter(): OtelMeter | null {
    const metrics = this.metrics;
    if (metrics === null) return null;
    const provider = metrics.meterProvider ?? this.api.metrics.getMeterProvider();
    if (provider === this.#meterProvider && this.#meter !== null) return this.#meter;
    this.#meterProvider = provider;
    this.#meter = (provider as { getMeter(name: string): OtelMeter }).getMeter(INSTRUMENTATION_SCOPE);
    this.#meterVersion += 1;
    return this.#meter;
  }

  /** Moves each time {@link Telemetry.meter} changes meter (0 before the first). */
  get meterVersion(): number {
    return this.#meterVersion;
  }

  /**
   * The span context stored with a task, as a remote span context; `null` when the task carries none.
   * `carrier` is what `traceCarrierOf` read from the task's metadata: its `traceparent` was parsed and
   * checked there, and its parts are taken as they are.
   */
  remoteContextOf(carrier: ReadTraceCarrier | null): OtelSpanContext | null {
    if (carrier === null) return null;
    const { traceId, spanId, traceFlags } = carrier.parent;
    if (carrier.tracestate === undefined) return { traceId, spanId, traceFlags, isRemote: true };
    return { traceId, spanId, traceFlags, isRemote: true, traceState: this.api.createTraceState(carrier.tracestate) };
  }

  /**
   * Submits through `write` inside a producer span `send <queue>` (with
   * tracing on), whose context is stored in the task's metadata in the same
   * write; counts the submit (with metrics on).
   *
   * @throws InvalidArgument when the submit's own metadata is not a plain object, or uses the reserved key.
   */
  async send<T>(input: SubmitInput, write: (input: SubmitInput) => Promise<T>, rowOf: (out: T) => { readonly id: string }): Promise<T> {
    const tracer = this.tracer();
    const queue = input.queue ?? "default";
    if (tracer === null) {
      const out = await write(input);
      this.#countSent(queue, input.name);
      return out;
    }
    // Checked before the span starts: the carrier is spread into the metadata, which would turn an array or a Map
    // the store refuses into an object it stores.
    const metadata = requireTraceableMetadata(input.metadata);
    const api = this.api;
    const parent = api.context.active();
    const span = tracer.startSpan(
      this.#sendNames.get(queue, input.name).spanName,
      {
        kind: api.SpanKind.PRODUCER,
        attributes: {
          [TELEMETRY_ATTRIBUTES.system]: MESSAGING_SYSTEM,
          [TELEMETRY_ATTRIBUTES.operationType]: "send",
          [TELEMETRY_ATTRIBUTES.operationName]: "send",
          [TELEMETRY_ATTRIBUTES.destination]: queue,
          [TELEMETRY_ATTRIBUTES.taskName]: input.name,
        },
      },
      parent,
    );
    const carrier = carrierOf(span.spanContext());
    const traced = carrier === null ? input : { ...input, metadata: withTraceCarrier(metadata, carrier) };
    try {
      // The write runs in the producer span's context, so an instrumented driver's spans nest under it.
      const out = await api.context.with(this.contextWithSpan(parent, span), () => write(traced));
      span.setAttribute(TELEMETRY_ATTRIBUTES.messageId, rowOf(out).id);
      this.#countSent(queue, input.name);
      return out;
    } catch (err) {
      markError(api, span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  #countSent(queue: string, name: string): void {
    const meter = this.meter();
    if (meter === null) return;
    if (this.#sent === null || this.#sentVersion !== this.#meterVersion) {
      this.#sent = meter.createCounter(METRIC_NAMES.sent, { description: "Tasks submitted", unit: "{message}" });
      this.#sentVersion = this.#meterVersion;
    }
    this.#sent.add(1, this.#sendNames.get(queue, name).attributes);
  }
}

/**
 * The key under which the API keeps a context's active span. `@opentelemetry/api` makes its context keys with
 * `Symbol.for`, so that every copy of the API in one process shares them; {@link Telemetry} checks at load that
 * `trace.getSpan` finds a span under it before using {@link SpanContext}.
 */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");

/** A context: `parent` with `span` active (see {@link Telemetry.contextWithSpan}). */
class SpanContext implements OtelContext {
  readonly #api: OtelApi;
  readonly #parent: OtelContext;
  readonly #span: OtelSpan;

  constructor(api: OtelApi, parent: OtelContext, span: OtelSpan) {
    this.#api = api;
    this.#parent = parent;
    this.#span = span;
  }

  getValue(key: symbol): unknown {
    return key === SPAN_KEY ? this.#span : this.#parent.getValue(key);
  }

  setValue(key: symbol, value: unknown): OtelContext {
    return this.#full().setValue(key, value);
  }

  deleteValue(key: symbol): OtelContext {
    return this.#full().deleteValue(key);
  }

  /** The API's own context with the same values. */
  #full(): OtelContext {
    return this.#api.trace.setSpan(this.#parent, this.#span);
  }
}

/**
 * Values made once per queue and task name (attribute sets, span names), found without building a
 * key string; the last pair asked for is kept at hand, since a busy worker or submitter mostly asks
 * for the same one again.
 */
export class ByTask<T> {
  readonly #make: (queue: string, name: string) => T;
  readonly #byQueue = new Map<string, Map<string, T>>();
  #lastQueue: string | null = null;
  #lastName: string | null = null;
  #last: T | undefined = undefined;

  constructor(make: (queue: string, name: string) => T) {
    this.#make = make;
  }

  /** The value of `queue` and `name`, made on first use. */
  get(queue: string, name: string): T {
    if (queue === this.#lastQueue && name === this.#lastName) return this.#last as T;
    let names = this.#byQueue.get(queue);
    if (names === undefined) {
      names = new Map();
      this.#byQueue.set(queue, names);
    }
    let value = names.get(name);
    if (value === undefined) {
      value = this.#make(queue, name);
      names.set(name, value);
    }
    this.#lastQueue = queue;
    this.#lastName = name;
    this.#last = value;
    return value;
  }
}

/** The attributes every instrument carries: system, queue, operation and task name. */
export function messagingAttributes(queue: string, name: string, operation: "send" | "process"): OtelAttributes {
  return {
    [TELEMETRY_ATTRIBUTES.system]: MESSAGING_SYSTEM,
    [TELEMETRY_ATTRIBUTES.destination]: queue,
    [TELEMETRY_ATTRIBUTES.operationName]: operation,
    [TELEMETRY_ATTRIBUTES.taskName]: name,
  };
}

/** The carrier of a span context; `null` for an invalid one (no SDK registered: nothing to continue). */
export function carrierOf(spanContext: OtelSpanContext): TraceCarrier | null {
  const traceparent = formatTraceparent(spanContext);
  if (parseTraceparent(traceparent) === null) return null;
  const tracestate = spanContext.traceState?.serialize();
  return tracestate === undefined || tracestate === "" ? { traceparent } : { traceparent, tracestate };
}

/** How {@link markError} marks a span. */
export interface MarkErrorOptions {
  /**
   * Whether a thrown `Error` also gets the span's exception event. A worker marking a lost lease passes `false`:
   * the loss is why the call ended, not an exception the handler raised.
   * @default true
   */
  recordException?: boolean;
}

/**
 * Sets ERROR status and `error.type` on `span`, and records the exception event for an `Error`. The status message
 * is the error's message: an `Error`'s own, a non-empty string `message` of any other object (a failure envelope
 * from `ctx.fail`), else the error type.
 */
export function markError(api: OtelApi, span: OtelSpan, err: unknown, type?: string, options?: MarkErrorOptions): void {
  const errorType = type ?? errorTypeOf(err);
  span.setAttribute(TELEMETRY_ATTRIBUTES.errorType, errorType);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : (objectMessage(err) ?? errorType) });
  if (err instanceof Error && options?.recordException !== false) span.recordException(err);
}

/** A non-`Error` value's non-empty string `message`, if it has one. */
function objectMessage(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const message = (err as { message?: unknown }).message;
  return typeof message === "string" && message !== "" ? message : undefined;
}

function errorTypeOf(err: unknown): string {
  if (err instanceof Error) return err.name;
  return "Error";
}
