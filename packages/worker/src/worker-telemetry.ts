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
import type { OtelAttributes, OtelContext, OtelCounter, OtelHistogram, OtelSpan, OtelSpanContext, Telemetry } from "@cairnq/runtime";
import { DURATION_BUCKETS_SECONDS, markError, messagingAttributes, MESSAGING_SYSTEM, METRIC_NAMES, TELEMETRY_ATTRIBUTES } from "@cairnq/runtime";
import type { Outcome } from "./call-runner.js";
import type { Context, LostReason } from "./task-context.js";

/** One handler call's span and start, from {@link WorkerTelemetry.startCall} to {@link WorkerTelemetry.handlerEnded}. @internal */
export interface CallSpan {
  readonly span: OtelSpan | null;
  /** The context the handler runs in (the span's), or `null` without tracing. */
  readonly context: OtelContext | null;
  readonly startedAt: number;
  readonly queue: string;
  readonly name: string;
  /** The `error.type` of a failure the handler settled itself (`ctx.fail`), while the span is open. */
  failedType: string | null;
  ended: boolean;
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

/** What the worker's telemetry reads from the worker. @internal */
export interface WorkerTelemetryHost {
  readonly leaseMs: number;
  /** Calls holding a slot now. */
  slotsUsed(): number;
}

const OUTCOME_OF_STATUS: Partial<Record<TaskStatus, string>> = { succeeded: "succeeded", queued: "retried", failed: "failed", canceled: "canceled" };

/** The worker's spans and instruments. @internal */
export class WorkerTelemetry {
  readonly #telemetry: Telemetry;
  readonly #host: WorkerTelemetryHost;
  /** The open (or last) call span of each context, for `ctx.fail` statuses and log fields. */
  readonly #calls = new WeakMap<Context, CallSpan>();
  #instruments: WorkerInstruments | null = null;
  /**
   * The attributes of each `(queue, name)`, made once: a busy worker records four measurements per
   * task, and building their attribute objects anew each time was a visible share of a c64 drain.
   */
  readonly #attributes = new Map<string, OtelAttributes>();

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
    // Counted per run of rows of one queue and name (a claim is usually one), not per row.
    let run = 0;
    let runAttributes: OtelAttributes | null = null;
    for (const row of rows) {
      const attributes = this.#attributesOf(row.queue, row.name);
      if (attributes !== runAttributes) {
        if (runAttributes !== null) increment(instruments.consumed, runAttributes, run);
        runAttributes = attributes;
        run = 0;
      }
      run += 1;
      // The claim's `now` is the lease's start (the store's clock, as run_at_ms is).
      if (row.lease_until_ms !== null) instruments.waitDuration.record(Math.max(0, row.lease_until_ms - leaseMs - row.run_at_ms) / 1000, attributes);
    }
    if (runAttributes !== null) increment(instruments.consumed, runAttributes, run);
  }

  /** The shared attributes of a queue and task name (not to be changed: copy before adding to them). */
  #attributesOf(queue: string, name: string): OtelAttributes {
    const key = `${queue}\u0000${name}`;
    let attributes = this.#attributes.get(key);
    if (attributes === undefined) {
      attributes = Object.freeze(messagingAttributes(queue, name, "process"));
      this.#attributes.set(key, attributes);
    }
    return attributes;
  }

  /** Opens a call's consumer span (with tracing on) and notes its start. */
  startCall(contexts: readonly Context[]): CallSpan {
    const first = contexts[0] as Context;
    const tracer = this.#telemetry.tracer();
    let span: OtelSpan | null = null;
    let context: OtelContext | null = null;
    if (tracer !== null) {
      const telemetry = this.#telemetry;
      const api = telemetry.api;
      const remotes = contexts.map((ctx) => telemetry.remoteContextOf(ctx.traceCarrier)).filter((remote): remote is OtelSpanContext => remote !== null);
      const batch = contexts.length > 1;
      const attributes: OtelAttributes = {
        [TELEMETRY_ATTRIBUTES.system]: MESSAGING_SYSTEM,
        [TELEMETRY_ATTRIBUTES.operationType]: "process",
        [TELEMETRY_ATTRIBUTES.operationName]: "process",
        [TELEMETRY_ATTRIBUTES.destination]: first.queue,
        [TELEMETRY_ATTRIBUTES.taskName]: first.name,
      };
      if (batch) {
        attributes[TELEMETRY_ATTRIBUTES.batchCount] = contexts.length;
      } else {
        attributes[TELEMETRY_ATTRIBUTES.messageId] = first.taskId;
        attributes[TELEMETRY_ATTRIBUTES.attempt] = first.attempt;
      }
      // A single task's span is its submitter's child when asked; a batch has many submitters, so it links to each.
      const child = telemetry.tracing?.relation === "child" && !batch && remotes.length === 1;
      const parent = child ? api.trace.setSpan(api.ROOT_CONTEXT, api.trace.wrapSpanContext(remotes[0] as OtelSpanContext)) : api.ROOT_CONTEXT;
      span = tracer.startSpan(
        `process ${first.queue}`,
        { kind: api.SpanKind.CONSUMER, attributes, ...(child || remotes.length === 0 ? {} : { links: remotes.map((remote) => ({ context: remote })) }) },
        parent,
      );
      context = api.trace.setSpan(parent, span);
    }
    const call: CallSpan = { span, context, startedAt: performance.now(), queue: first.queue, name: first.name, failedType: null, ended: false };
    for (const ctx of contexts) this.#calls.set(ctx, call);
    return call;
  }

  /** Runs the handler inside the call's span, so the user's spans and instrumented calls nest under it. */
  run<R>(call: CallSpan, fn: () => R): R {
    return call.context === null ? fn() : this.#telemetry.api.context.with(call.context, fn);
  }

  /** The handler's wait ended: its duration is recorded, and its span ends with ERROR unless it returned. */
  handlerEnded(call: CallSpan, outcome: Outcome): void {
    if (call.ended) return;
    call.ended = true;
    const api = this.#telemetry.api;
    let errorType: string | null = call.failedType;
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
    call.span?.end();
    const instruments = this.#metrics();
    if (instruments === null) return;
    const shared = this.#attributesOf(call.queue, call.name);
    const attributes = errorType === null ? shared : { ...shared, [TELEMETRY_ATTRIBUTES.errorType]: errorType };
    instruments.processDuration.record((performance.now() - call.startedAt) / 1000, attributes);
  }

  /** A settlement was written: its outcome is counted, and a failure the handler settled itself marks its open span. */
  settled(ctx: Context, status: TaskStatus, failure: { envelope: unknown } | null): void {
    const call = this.#calls.get(ctx);
    if (failure !== null && call !== undefined && !call.ended) {
      const type = envelopeType(failure.envelope);
      call.failedType = type;
      if (call.span !== null) markError(this.#telemetry.api, call.span, failure.envelope, type);
    }
    const instruments = this.#metrics();
    const outcome = OUTCOME_OF_STATUS[status];
    if (instruments === null || outcome === undefined) return;
    increment(instruments.outcomes, this.#outcomeAttributes(ctx.queue, ctx.name, outcome), 1);
  }

  /** The outcome counter's attributes, made once per queue, name and outcome. */
  #outcomeAttributes(queue: string, name: string, outcome: string): OtelAttributes {
    const key = `${queue}\u0000${name}\u0000${outcome}`;
    let attributes = this.#attributes.get(key);
    if (attributes === undefined) {
      attributes = Object.freeze({ ...this.#attributesOf(queue, name), [TELEMETRY_ATTRIBUTES.outcome]: outcome });
      this.#attributes.set(key, attributes);
    }
    return attributes;
  }

  /** A context became lost: a real lease loss is counted (not the worker letting go at a timeout or stop). */
  lost(ctx: Context, reason: LostReason): void {
    if (reason !== "heartbeat" && reason !== "write" && reason !== "reclaimed") return;
    const instruments = this.#metrics();
    if (instruments === null) return;
    instruments.leaseLost.add(1, { ...messagingAttributes(ctx.queue, ctx.name, "process"), [TELEMETRY_ATTRIBUTES.lostReason]: reason });
  }

  /** `trace_id` and `span_id` of the call span that ran `ctx`, for the worker's log records about it. */
  logFields(ctx: Context): { trace_id: string; span_id: string } | undefined {
    const span = this.#calls.get(ctx)?.span;
    if (span === undefined || span === null) return undefined;
    const { traceId, spanId } = span.spanContext();
    return { trace_id: traceId, span_id: spanId };
  }

  /** A child submit from a handler: a producer span (a child of the call's span) and the trace context stored with the task. */
  send(input: SubmitInput, write: (input: SubmitInput) => Promise<Task>): Promise<Task> {
    return this.#telemetry.send(input, write, (row) => row);
  }

  /** The worker's instruments on the current meter, rebuilt when the global provider changed; `null` with metrics off. */
  #metrics(): WorkerInstruments | null {
    const resolved = this.#telemetry.meter();
    if (resolved === null) return null;
    if (!resolved.fresh && this.#instruments !== null) return this.#instruments;
    const meter = resolved.meter;
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
      .createObservableCounter(METRIC_NAMES.outcomes, { description: "Settlements by outcome: succeeded, retried, failed, canceled", unit: "{task}" })
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
