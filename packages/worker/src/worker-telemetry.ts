/**
 * The worker's OpenTelemetry: a consumer span `process <queue>` around each
 * handler call, producer spans for `ctx.submit`, and the worker's
 * instruments (consumed, process duration, wait time, outcomes, lost leases,
 * slots in use). Built only when `tracing` or `metrics` is on; a worker
 * without them holds `null` and calls none of this.
 *
 * Only handler calls get spans: polls, claims, heartbeats, sweeps and
 * LISTEN never do, and the worker's loops run in the root context
 * ({@link WorkerTelemetry.detached}), so a worker started inside a caller's
 * span does not grow one trace for its whole life.
 */
import type { SubmitInput, Task, TaskStatus } from "@cairnq/protocol";
import { envelopeFromThrown } from "@cairnq/protocol/sdk";
import type { MarkErrorOptions, OtelAttributes, OtelContext, OtelCounter, OtelHistogram, OtelSpan, OtelSpanContext, OtelSpanOptions, OtelTracer, Telemetry } from "@cairnq/runtime";
import { ByTask, DURATION_BUCKETS_SECONDS, markError, messagingAttributes, MESSAGING_SYSTEM, METRIC_NAMES, TELEMETRY_ATTRIBUTES } from "@cairnq/runtime";
import type { Outcome } from "./call-runner.js";
import type { Context, LostReason } from "./task-context.js";

/** One handler call's span and start, from {@link WorkerTelemetry.startCall} to {@link WorkerTelemetry.handlerEnded}. @internal */
export interface CallSpan {
  readonly span: OtelSpan | null;
  /** The context the handler runs in (the span's), or `null` without tracing. */
  readonly context: OtelContext | null;
  readonly startedAt: number;
  /** The metric attributes of the call's queue and task name. */
  readonly attributes: TaskAttributes;
  /** The `error.type` of a failure the handler settled itself (`ctx.fail`), or of a lease lost, while the span is open. */
  failedType: string | null;
  /**
   * A task of the call lost its lease while the span was open: the span is ERROR with `error.type` `LostLease`
   * whatever the handler did next (returned, or threw — most often because its signal aborted), as the task is not
   * this call's to settle any more.
   */
  leaseLost: boolean;
  ended: boolean;
  /** `trace_id` and `span_id` for log records, made on the first record that asks. */
  logFields: { trace_id: string; span_id: string } | null;
}

interface WorkerInstruments {
  /** Tasks consumed, by attributes: counted here and observed at collection (see {@link WorkerTelemetry.claimed}). */
  readonly consumed: Map<OtelAttributes, number>;
  readonly processDuration: OtelHistogram;
  readonly waitDuration: OtelHistogram;
  /** Settlements by attributes (outcome included), observed at collection like `consumed`. */
  readonly outcomes: Map<OtelAttributes, number>;
  readonly leaseLost: OtelCounter;
}

/**
 * The metric attribute objects of one queue and task name, made once and shared (frozen: copy before
 * adding to one): the SDK hashes a record's attributes on every call, and CairnQ adds no allocation to that.
 */
class TaskAttributes {
  /** queue, name, system, `messaging.operation.name` = process: what the messaging instruments carry (consumed, process duration). */
  readonly process: OtelAttributes;
  /**
   * queue and name only: the wait histogram's (CairnQ's own instrument, recorded once per claimed task). The SDK
   * hashes a record's attribute set on every call, in time that grows with its keys: the two constant keys of
   * {@link TaskAttributes.process} told nothing here and made each record cost half as much again.
   */
  readonly wait: OtelAttributes;
  /** The consumer span's name, `process <queue>`. */
  readonly spanName: string;
  readonly #outcomes = new Map<string, OtelAttributes>();
  readonly #errors = new Map<string, OtelAttributes>();

  constructor(queue: string, name: string) {
    this.process = Object.freeze(messagingAttributes(queue, name, "process"));
    this.wait = Object.freeze({ [TELEMETRY_ATTRIBUTES.destination]: queue, [TELEMETRY_ATTRIBUTES.taskName]: name });
    this.spanName = `process ${queue}`;
  }

  /** With `cairnq.task.outcome`. */
  outcome(outcome: string): OtelAttributes {
    return this.#with(this.#outcomes, TELEMETRY_ATTRIBUTES.outcome, outcome);
  }

  /** With `error.type`. */
  failed(errorType: string): OtelAttributes {
    return this.#with(this.#errors, TELEMETRY_ATTRIBUTES.errorType, errorType);
  }

  #with(cache: Map<string, OtelAttributes>, key: string, value: string): OtelAttributes {
    let attributes = cache.get(value);
    if (attributes === undefined) {
      attributes = Object.freeze({ ...this.process, [key]: value });
      // Error types are names from code; the bound only keeps a stream of made-up ones from growing the cache.
      if (cache.size < MAX_CACHED_VARIANTS) cache.set(value, attributes);
    }
    return attributes;
  }
}

const MAX_CACHED_VARIANTS = 64;

/** What the worker's telemetry reads from the worker. @internal */
export interface WorkerTelemetryHost {
  readonly leaseMs: number;
  /** Calls holding a slot now. */
  slotsUsed(): number;
}

/**
 * `cairnq.task.outcome` by the status a settlement wrote: `queued` is a retry. A durable sleep, wait or join parking
 * the task also leaves it `queued`, but the host says so (`parked`) and it counts as {@link PARKED}, not a retry.
 */
const OUTCOME_OF_STATUS: Partial<Record<TaskStatus, string>> = { succeeded: "succeeded", queued: "retried", failed: "failed", canceled: "canceled" };
/** The `error.type` of a call whose lease was lost under it: the class of the error its signal aborted with. */
const LOST_LEASE_TYPE = "LostLease";
/** The outcome of a park: the attempt ended without a settlement, and the task runs again when the park is over. */
const PARKED = "parked";

/** A lost lease marks its call's span without an exception event: the loss is why the call ended, not a throw. */
const NO_EXCEPTION_EVENT: MarkErrorOptions = { recordException: false };

/** The worker's spans and instruments. @internal */
export class WorkerTelemetry {
  readonly #telemetry: Telemetry;
  readonly #host: WorkerTelemetryHost;
  #instruments: WorkerInstruments | null = null;
  /** The {@link Telemetry.meterVersion} `#instruments` were made on. */
  #instrumentsVersion = 0;
  /** The attributes of each queue and task name. */
  readonly #attributes = new ByTask((queue, name) => new TaskAttributes(queue, name));

  constructor(telemetry: Telemetry, host: WorkerTelemetryHost) {
    this.#telemetry = telemetry;
    this.#host = host;
  }

  /** Runs `fn` (a loop's start) in the root context, whatever context the caller of `run()` had. */
  detached<R>(fn: () => R): R {
    const api = this.#telemetry.api;
    return api.context.with(api.ROOT_CONTEXT, fn);
  }

  /** A claim's rows: each counts as consumed, and its wait (due → claimed) is recorded. */
  claimed(rows: readonly Task[]): void {
    const instruments = this.#metrics();
    if (instruments === null) return;
    const leaseMs = this.#host.leaseMs;
    const waits = instruments.waitDuration;
    // Counted per run of rows of one queue and name (a claim is usually one), not per row.
    let run = 0;
    let runAttributes: OtelAttributes | null = null;
    for (const row of rows) {
      const attributes = this.#attributesOf(row.queue, row.name);
      if (attributes.process !== runAttributes) {
        if (runAttributes !== null) increment(instruments.consumed, runAttributes, run);
        runAttributes = attributes.process;
        run = 0;
      }
      run += 1;
      // The claim's `now` is the lease's start (the store's clock, as run_at_ms is).
      if (row.lease_until_ms !== null) waits.record(Math.max(0, row.lease_until_ms - leaseMs - row.run_at_ms) / 1000, attributes.wait);
    }
    if (runAttributes !== null) increment(instruments.consumed, runAttributes, run);
  }

  /** The shared attributes of a queue and task name. */
  #attributesOf(queue: string, name: string): TaskAttributes {
    return this.#attributes.get(queue, name);
  }

  /** Opens a call's consumer span (with tracing on) and notes its start. */
  startCall(contexts: readonly Context[]): CallSpan {
    const first = contexts[0] as Context;
    const attributes = this.#attributesOf(first.queue, first.name);
    const tracer = this.#telemetry.tracer();
    let span: OtelSpan | null = null;
    let context: OtelContext | null = null;
    if (tracer !== null) {
      const opened = contexts.length === 1 ? this.#openSingle(tracer, first, attributes) : this.#openBatch(tracer, contexts, attributes);
      span = opened.span;
      context = opened.context;
    }
    const call: CallSpan = { span, context, startedAt: performance.now(), attributes, failedType: null, leaseLost: false, ended: false, logFields: null };
    // Kept on the context (for `ctx.fail` statuses and log fields) rather than in a WeakMap: an entry per task
    // there cost a hash and an ephemeron for the collector, where a field costs a store.
    for (const ctx of contexts) ctx.callSpan = call;
    return call;
  }

  /** One task's span: linked to its submitter's span, or its child with `relation: "child"`. */
  #openSingle(tracer: OtelTracer, ctx: Context, attributes: TaskAttributes): { span: OtelSpan; context: OtelContext } {
    const telemetry = this.#telemetry;
    const api = telemetry.api;
    const remote = ctx.traceCarrier === null ? null : telemetry.remoteContextOf(ctx.traceCarrier);
    const spanAttributes = processSpanAttributes(ctx.queue, ctx.name);
    spanAttributes[TELEMETRY_ATTRIBUTES.messageId] = ctx.taskId;
    spanAttributes[TELEMETRY_ATTRIBUTES.attempt] = ctx.attempt;
    const kind = api.SpanKind.CONSUMER;
    if (remote !== null && telemetry.tracing?.relation === "child") {
      const parent = telemetry.contextWithSpan(api.ROOT_CONTEXT, api.trace.wrapSpanContext(remote));
      const span = tracer.startSpan(attributes.spanName, { kind, attributes: spanAttributes }, parent);
      return { span, context: telemetry.contextWithSpan(parent, span) };
    }
    const options: OtelSpanOptions = remote === null ? { kind, attributes: spanAttributes } : { kind, attributes: spanAttributes, links: [{ context: remote }] };
    const span = tracer.startSpan(attributes.spanName, options, api.ROOT_CONTEXT);
    return { span, context: telemetry.contextWithSpan(api.ROOT_CONTEXT, span) };
  }

  /** A batch call's span: it has several submitters, so it links to each. */
  #openBatch(tracer: OtelTracer, contexts: readonly Context[], attributes: TaskAttributes): { span: OtelSpan; context: OtelContext } {
    const telemetry = this.#telemetry;
    const api = telemetry.api;
    const first = contexts[0] as Context;
    const links: { context: OtelSpanContext }[] = [];
    for (const ctx of contexts) {
      const remote = telemetry.remoteContextOf(ctx.traceCarrier);
      if (remote !== null) links.push({ context: remote });
    }
    const spanAttributes = processSpanAttributes(first.queue, first.name);
    spanAttributes[TELEMETRY_ATTRIBUTES.batchCount] = contexts.length;
    const kind = api.SpanKind.CONSUMER;
    const span = tracer.startSpan(attributes.spanName, links.length === 0 ? { kind, attributes: spanAttributes } : { kind, attributes: spanAttributes, links }, api.ROOT_CONTEXT);
    return { span, context: telemetry.contextWithSpan(api.ROOT_CONTEXT, span) };
  }

  /** Runs the handler inside the call's span, so the user's spans and instrumented calls nest under it. */
  run<R>(call: CallSpan, fn: () => R): R {
    return call.context === null ? fn() : this.#telemetry.api.context.with(call.context, fn);
  }

  /**
   * The handler's wait ended: its duration is recorded, and its span ends with ERROR unless it returned or parked
   * (or ERROR already, its lease lost: see {@link WorkerTelemetry.lost}).
   */
  handlerEnded(call: CallSpan, outcome: Outcome): void {
    if (call.ended) return;
    call.ended = true;
    const api = this.#telemetry.api;
    let errorType: string | null = call.failedType;
    // A lease lost under the call already marked its span: the loss is why the call ended as it did (a handler
    // most often throws because its signal aborted), and the task is not this call's to settle any more.
    if (!call.leaseLost) {
      switch (outcome.kind) {
        case "returned":
          break;
        case "parked":
          // A parked task (a durable sleep, wait or join) ended its call without an error; it runs again later.
          break;
        case "threw": {
          errorType = thrownType(outcome.error);
          if (call.span !== null) markError(api, call.span, outcome.error, errorType);
          break;
        }
        case "timeout":
          errorType = "HandlerTimeout";
          if (call.span !== null) markError(api, call.span, new Error("the handler exceeded maxRunMs"), errorType);
          break;
        case "abandoned":
          errorType = "Abandoned";
          if (call.span !== null) markError(api, call.span, new Error("the worker stopped and let go of the call at its stop deadline"), errorType);
          break;
      }
    }
    call.span?.end();
    const instruments = this.#current();
    if (instruments === null) return;
    const attributes = errorType === null ? call.attributes.process : call.attributes.failed(errorType);
    instruments.processDuration.record((performance.now() - call.startedAt) / 1000, attributes);
  }

  /** A settlement or park was written (`ContextHost.settled`): its outcome is counted, and a failure the handler settled itself marks its open span. */
  settled(ctx: Context, status: TaskStatus, failure: { envelope: unknown } | null, parked: boolean): void {
    const call = ctx.callSpan;
    if (failure !== null && call !== null && !call.ended) {
      const type = envelopeType(failure.envelope);
      call.failedType = type;
      if (call.span !== null) markError(this.#telemetry.api, call.span, failure.envelope, type);
    }
    const instruments = this.#current();
    const outcome = parked ? PARKED : OUTCOME_OF_STATUS[status];
    if (instruments === null || outcome === undefined) return;
    const attributes = call === null ? this.#attributesOf(ctx.queue, ctx.name) : call.attributes;
    increment(instruments.outcomes, attributes.outcome(outcome), 1);
  }

  /**
   * A context became lost: a real lease loss (not the worker letting go at a timeout or stop) is counted, and
   * marks its call's span, while open, ERROR with `error.type` `LostLease` and the loss's message.
   */
  lost(ctx: Context, reason: LostReason): void {
    if (reason !== "heartbeat" && reason !== "write" && reason !== "reclaimed") return;
    const call = ctx.callSpan;
    if (call !== null && !call.ended && !call.leaseLost) {
      call.leaseLost = true;
      call.failedType = LOST_LEASE_TYPE;
      // The signal aborted with the LostLease that says why (markLost), before this was called.
      const why: unknown = ctx.signal.reason;
      if (call.span !== null) markError(this.#telemetry.api, call.span, why, LOST_LEASE_TYPE, NO_EXCEPTION_EVENT);
    }
    const instruments = this.#metrics();
    if (instruments === null) return;
    instruments.leaseLost.add(1, { ...this.#attributesOf(ctx.queue, ctx.name).process, [TELEMETRY_ATTRIBUTES.lostReason]: reason });
  }

  /** `trace_id` and `span_id` of the call span that ran `ctx`, for the worker's log records about it (made once per call). */
  logFields(ctx: Context): { trace_id: string; span_id: string } | undefined {
    const call = ctx.callSpan;
    if (call === null || call.span === null) return undefined;
    if (call.logFields === null) {
      const { traceId, spanId } = call.span.spanContext();
      call.logFields = { trace_id: traceId, span_id: spanId };
    }
    return call.logFields;
  }

  /** A child submit from a handler: a producer span (a child of the call's span) and the trace context stored with the task. */
  send(input: SubmitInput, write: (input: SubmitInput) => Promise<Task>): Promise<Task> {
    return this.#telemetry.send(input, write, (row) => row);
  }

  /**
   * The instruments {@link WorkerTelemetry.claimed} last resolved, without looking the provider up again: a call's
   * end and its settlement follow the provider its claim saw (or a newer one another caller found since, such as
   * a handler's `ctx.submit`: the meter's version then moved). Looking the global provider up is a call into the
   * API's global registry with a version check; once per claim rather than three times per task.
   */
  #current(): WorkerInstruments | null {
    if (this.#instruments !== null && this.#instrumentsVersion === this.#telemetry.meterVersion) return this.#instruments;
    return this.#metrics();
  }

  /** The worker's instruments on the current meter, made again when the global provider changed; `null` with metrics off. */
  #metrics(): WorkerInstruments | null {
    const telemetry = this.#telemetry;
    const meter = telemetry.meter();
    if (meter === null) return null;
    if (this.#instruments !== null && this.#instrumentsVersion === telemetry.meterVersion) return this.#instruments;
    this.#instrumentsVersion = telemetry.meterVersion;
    const buckets = { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] };
    const slots = meter.createObservableGauge(METRIC_NAMES.slotsUsed, { description: "Handler calls holding one of the worker's concurrency slots", unit: "{slot}" });
    slots.addCallback((result) => result.observe(this.#host.slotsUsed(), { [TELEMETRY_ATTRIBUTES.system]: MESSAGING_SYSTEM }));
    // The two counters every task moves are counted in plain maps and observed when the SDK collects:
    // a synchronous add hashes its attributes on every call, which a c64 drain paid twice per task.
    const consumed = new Map<OtelAttributes, number>();
    const outcomes = new Map<OtelAttributes, number>();
    meter.createObservableCounter(METRIC_NAMES.consumed, { description: "Tasks claimed by workers", unit: "{message}" }).addCallback((result) => {
      for (const [attributes, count] of consumed) result.observe(count, attributes);
    });
    meter
      .createObservableCounter(METRIC_NAMES.outcomes, { description: "Settlements and parks by outcome: succeeded, retried, failed, canceled, parked", unit: "{task}" })
      .addCallback((result) => {
        for (const [attributes, count] of outcomes) result.observe(count, attributes);
      });
    this.#instruments = {
      consumed,
      processDuration: meter.createHistogram(METRIC_NAMES.processDuration, { description: "How long handler calls ran", unit: "s", advice: buckets }),
      waitDuration: meter.createHistogram(METRIC_NAMES.waitDuration, {
        description: "How long tasks waited from due (run_at_ms) to claimed",
        unit: "s",
        advice: buckets,
      }),
      outcomes,
      leaseLost: meter.createCounter(METRIC_NAMES.leaseLost, { description: "Leases a worker lost before its handler settled", unit: "{task}" }),
    };
    return this.#instruments;
  }
}

/** A consumer span's attributes before the per-call ones (a new object: the caller adds to it). */
function processSpanAttributes(queue: string, name: string): OtelAttributes {
  return {
    [TELEMETRY_ATTRIBUTES.system]: MESSAGING_SYSTEM,
    [TELEMETRY_ATTRIBUTES.operationType]: "process",
    [TELEMETRY_ATTRIBUTES.operationName]: "process",
    [TELEMETRY_ATTRIBUTES.destination]: queue,
    [TELEMETRY_ATTRIBUTES.taskName]: name,
  };
}

/** Adds `by` to the count of `attributes` (one of the shared, frozen attribute objects, so the map stays small). */
function increment(counts: Map<OtelAttributes, number>, attributes: OtelAttributes, by: number): void {
  counts.set(attributes, (counts.get(attributes) ?? 0) + by);
}

/** The `error.type` of a thrown value: the envelope type the worker records for it (a `TaskError`'s own `type`). */
function thrownType(error: unknown): string {
  try {
    return envelopeType(envelopeFromThrown(error).envelope);
  } catch {
    return "Error";
  }
}

function envelopeType(envelope: unknown): string {
  const type = typeof envelope === "object" && envelope !== null ? (envelope as { type?: unknown }).type : undefined;
  return typeof type === "string" && type !== "" ? type : "Error";
}
