/**
 * The call and settlement path (§8.4): runs one handler call under its
 * heartbeat, bounded by `maxRunMs` and by abandonment at the stop deadline,
 * then settles every task the handler did not settle itself.
 *
 * Terminology: a *call* and its phases are defined in `call.ts`; *settling*
 * a task is writing its outcome (`complete` or `fail`).
 */
import type { RefCompleteTaskStore, Task, TaskStatus, TaskStore } from "@cairnq/protocol";
import { LostLease, SerializationError } from "@cairnq/protocol";
import { envelopeFromThrown, handlerTimeoutEnvelope, noHandlerEnvelope, unserializableResultEnvelope } from "@cairnq/protocol/sdk";
import type { RuntimeClock, TimerHandle } from "@cairnq/runtime";
import type { Call } from "./call.js";
import { Heartbeat } from "./heartbeat.js";
import type { Reporter } from "./reporter.js";
import { writeFailure } from "./failure-write.js";
import { storableEnvelope } from "./storable-outcome.js";
import type { ContextHost, TaskContext } from "./task-context.js";
import type { Context } from "./task-context.js";
import type { Registration } from "./task-registry.js";
import type { CallSpan, WorkerTelemetry } from "./worker-telemetry.js";

/** How a handler call ended. @internal */
export type Outcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "timeout" }
  | { readonly kind: "abandoned" }
  /** The task parked (a sleep, wait or join, `steps.ts`): the store already wrote its row; nothing to settle. */
  | { readonly kind: "parked" };

/** What a {@link CallRunner} needs from its worker. @internal */
export interface CallRunnerHost {
  readonly store: TaskStore;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly heartbeatIntervalMs: number;
  readonly maxRunMs: number | null;
  /** The worker's clock: heartbeats and the `maxRunMs` timer run on it. */
  readonly clock: RuntimeClock;
  readonly contexts: ContextHost;
  /** Where errors the worker survives go (the worker's {@link Reporter}). */
  readonly reporter: Pick<Reporter, "report">;
  /** The worker's telemetry, or `null` with `tracing` and `metrics` off. */
  readonly telemetry: Pick<WorkerTelemetry, "startCall" | "run" | "handlerEnded"> | null;
}

/** Runs calls and settles their tasks. @internal */
export class CallRunner {
  readonly #host: CallRunnerHost;

  constructor(host: CallRunnerHost) {
    this.#host = host;
  }

  /**
   * A heartbeat (§8.5) for the calls of one claim, each joining it with {@link Call.join} when
   * it is claimed, so the leases of a buffered call are renewed while it waits exactly as a running
   * call's are; `onBeat` runs after each beat.
   */
  heartbeat(onBeat?: () => void): Heartbeat {
    const host = this.#host;
    const reporter = host.reporter;
    return new Heartbeat({
      store: host.store,
      workerId: host.workerId,
      leaseMs: host.leaseMs,
      intervalMs: host.heartbeatIntervalMs,
      clock: host.clock,
      report: (err, info, ctx) => reporter.report(err, info, ctx),
      ...(onBeat === undefined ? {} : { onBeat }),
    });
  }

  /**
   * Settles a claimed task whose handler never started because a cancel was requested while it
   * waited in the buffer: `complete` with no result, which ends a flagged task `canceled` (T7,
   * cancel wins), as the call's end would have once the handler saw the cancel.
   */
  cancelWaiting(ctx: Context): Promise<void> {
    return this.#finalComplete(ctx, null);
  }

  /**
   * Runs `call` to its end — handler, heartbeat, settlement — and then tells `ended` (exactly once). Never
   * settles an abandoned call. A callback rather than a promise: the path of one task from its claim to its
   * settlement made ten promises, each one more object for the collector (and, with an AsyncLocalStorage
   * context manager in use, one more hook call), where the store's own write needs two.
   */
  execute(call: Call, ended: CallEnded): void {
    const registration = call.registration;
    if (registration === undefined) {
      // Handlers changed while the claim was in flight: fail for good, without a heartbeat.
      Promise.all(call.contexts.map((ctx) => this.#finalFail(ctx, noHandlerEnvelope(ctx.name), false, 0))).then(
        () => ended.callEnded(call, undefined),
        (err: unknown) => ended.callEnded(call, err),
      );
      return;
    }
    if (call.heartbeat === null) call.join(this.heartbeat());
    const telemetry = this.#host.telemetry;
    const span = telemetry === null || call.handed.length === 0 ? null : telemetry.startCall(call.handed);
    this.#invoke(new Invocation(call, registration, span, ended, this.#handlerEnded));
  }

  /**
   * Fails, for good, a claimed task whose call could not be prepared — building its context threw (a row
   * the worker cannot read, or a bug of the worker's own) — so the handler never ran: the error goes to
   * `onError` (`phase: "execute"`) and the task is failed with `task_unreadable` instead of staying
   * `running` until its lease expires and then being claimed, and failing the same way, again. Never rejects.
   */
  async failUnprepared(row: Task, err: unknown): Promise<void> {
    const host = this.#host;
    host.reporter.report(err, { phase: "execute", taskId: row.id });
    try {
      await writeFailure(host.store, { taskId: row.id, workerId: host.workerId, attempt: row.attempt, error: unpreparedEnvelope(row.id, err), retryable: false, delayMs: 0 });
    } catch (failed) {
      if (!(failed instanceof LostLease)) host.reporter.report(failed, { phase: "execute", taskId: row.id });
    }
  }

  /** The handler's wait ended (first of: its outcome, `maxRunMs`, abandonment, a park): settle what is left. */
  readonly #handlerEnded = (invocation: Invocation, outcome: Outcome): void => {
    const { call, span, ended } = invocation;
    call.handlerEnded(outcome.kind === "abandoned");
    if (span !== null) this.#host.telemetry?.handlerEnded(span, outcome);
    if (outcome.kind === "abandoned" || outcome.kind === "parked") {
      ended.callEnded(call, undefined);
      return;
    }
    let settled: Promise<void> | undefined;
    try {
      settled = this.#settle(call, outcome, ended);
    } catch (err) {
      ended.callEnded(call, err);
      return;
    }
    if (settled !== undefined) settled.then(() => ended.callEnded(call, undefined), (err: unknown) => ended.callEnded(call, err));
  };

  /**
   * Runs the handler, bounded by `maxRunMs` and by abandonment at the stop deadline: the first of the
   * three to end decides the outcome ({@link Invocation.end}). No promise of its own: a synchronous
   * return ends the call at once, a promise's settlement ends it from its reaction.
   */
  #invoke(invocation: Invocation): void {
    const { call, registration, span } = invocation;
    call.onAbandon(invocation);
    const batch = registration.batch !== null;
    const contexts = call.handed;
    for (const ctx of contexts) {
      ctx.inBatch = batch;
      if (!batch) ctx.onParked(invocation);
    }
    const maxRunMs = this.#host.maxRunMs;
    // Chained past 2^31 ms: a 30-day maxRunMs must not fire after 1 ms.
    if (maxRunMs !== null) invocation.timer = this.#host.clock.startTimer(() => invocation.end(TIMED_OUT), maxRunMs, { unref: true });
    let returned: unknown;
    try {
      returned = span === null ? callHandler(registration, contexts) : (this.#host.telemetry as Pick<WorkerTelemetry, "run">).run(span, () => callHandler(registration, contexts));
    } catch (error) {
      invocation.end({ kind: "threw", error });
      return;
    }
    settleWith(returned, invocation);
    // Abandoned before the handler was invoked (a buffered call the deadline let go of as it started).
    if (call.abandoned) invocation.end(ABANDONED);
  }

  /** The settlement table (§8.4): tasks the handler did not settle are settled by how the call ended. */
  #settle(call: Call, outcome: Exclude<Outcome, { kind: "abandoned" | "parked" }>, ended: CallEnded): Promise<void> | undefined {
    const handed = call.handed;
    const batch = call.registration !== undefined && call.registration.batch !== null;
    if (outcome.kind === "returned" && !batch && handed.length === 1) {
      // The common call, one task that returned: no arrays of leftovers or settlements to build, and the
      // write's own reaction ends the call.
      const ctx = handed[0] as Context;
      if (ctx.live) this.#completeAndEnd(call, ctx, outcome.value, ended);
      else ended.callEnded(call, undefined);
      return undefined;
    }
    return this.#settleAll(call, outcome, batch);
  }

  async #settleAll(call: Call, outcome: Exclude<Outcome, { kind: "abandoned" | "parked" }>, batch: boolean): Promise<void> {
    const failDelayMs = (ctx: Context, retryable: boolean, error: unknown): number => this.#host.contexts.failDelayMs(ctx, retryable, error);
    const handed = call.handed;
    // Contexts already lost are left alone: this worker no longer holds them (and a write might land on a newer run).
    const leftovers = handed.filter((ctx) => ctx.live);
    switch (outcome.kind) {
      case "returned": {
        await Promise.all(
          leftovers.map((ctx) => this.#finalComplete(ctx, batch ? resultById(outcome.value, ctx.taskId) : outcome.value)),
        );
        return;
      }
      case "threw": {
        if (isLostLease(outcome.error)) return;
        const { envelope, retryable } = envelopeFromThrown(outcome.error);
        await Promise.all(leftovers.map((ctx) => this.#finalFail(ctx, envelope, retryable, failDelayMs(ctx, retryable, outcome.error))));
        return;
      }
      case "timeout": {
        for (const ctx of call.handed) ctx.markLost("timeout");
        const envelope = handlerTimeoutEnvelope(this.#host.maxRunMs as number);
        await Promise.all(leftovers.map((ctx) => this.#finalFail(ctx, envelope, true, failDelayMs(ctx, true, envelope))));
        return;
      }
    }
  }

  /** The worker's own `complete`, straight to the store (the store's ownership check decides). */
  #finalComplete(ctx: Context, result: unknown): Promise<void> {
    let written: Promise<{ readonly status: TaskStatus }>;
    try {
      written = this.#sendComplete(ctx, result);
    } catch (err) {
      return this.#completeFailed(ctx, err) ?? Promise.resolve();
    }
    const host = this.#host;
    return written.then(
      ({ status }) => host.contexts.settled(ctx, status, null, false),
      (err: unknown) => this.#completeFailed(ctx, err),
    );
  }

  /** Marks `ctx` settling and sends the worker's `complete` of it (may throw synchronously: callers catch). */
  #sendComplete(ctx: Context, result: unknown): Promise<{ readonly status: TaskStatus }> {
    const host = this.#host;
    ctx.beginSettle();
    // The result is encoded once, by the store: a result it cannot encode rejects with SerializationError before
    // anything is written (every store, conformance s38), and #completeFailed fails the task for good. Encoding it
    // here first as well cost a second JSON.stringify of every result.
    const input = { taskId: ctx.taskId, workerId: host.workerId, attempt: ctx.attempt, result };
    // The whole row is not needed here, only how the task ended (succeeded, or canceled): a store that can say
    // just that spares the database and the driver most of the settlement's per-row work.
    const store = host.store;
    return store.capabilities.completeRef === true ? (store as RefCompleteTaskStore).completeRef(input) : store.complete(input);
  }

  /** {@link CallRunner.#finalComplete} of a call's only task, ending the call from the write's own reaction (no promise of its own). */
  #completeAndEnd(call: Call, ctx: Context, result: unknown, ended: CallEnded): void {
    let written: Promise<{ readonly status: TaskStatus }>;
    try {
      written = this.#sendComplete(ctx, result);
    } catch (err) {
      this.#endAfter(call, this.#completeFailed(ctx, err), ended);
      return;
    }
    const host = this.#host;
    written.then(
      ({ status }) => {
        try {
          host.contexts.settled(ctx, status, null, false);
        } catch (err) {
          ended.callEnded(call, err);
          return;
        }
        ended.callEnded(call, undefined);
      },
      (err: unknown) => this.#endAfter(call, this.#completeFailed(ctx, err), ended),
    );
  }

  /** Ends `call` once `settling` (a fallback write, or nothing) is over. */
  #endAfter(call: Call, settling: Promise<void> | undefined, ended: CallEnded): void {
    if (settling === undefined) ended.callEnded(call, undefined);
    else settling.then(() => ended.callEnded(call, undefined), (err: unknown) => ended.callEnded(call, err));
  }

  /** What a failed `complete` of the worker's leads to: a permanent fail (unserializable result), a lost context, or a report. */
  #completeFailed(ctx: Context, err: unknown): Promise<void> | undefined {
    if (err instanceof SerializationError) return this.#finalFail(ctx, unserializableResultEnvelope(err), false, 0);
    if (err instanceof LostLease) ctx.markLost("write");
    else this.#host.reporter.report(err, { phase: "execute", taskId: ctx.taskId }, ctx);
    return undefined;
  }

  /**
   * The worker's own `fail`, straight to the store. `LostLease` marks the context lost (`lease:lost`, reason
   * `write`, as a `complete` does: a handler that threw or ran past `maxRunMs` may have lost its lease as well);
   * nothing more is written.
   */
  async #finalFail(ctx: Context, thrownEnvelope: unknown, retryable: boolean, delayMs: number): Promise<void> {
    const host = this.#host;
    ctx.beginSettle();
    // Made storable before the write (sanitised text, the representable part of details), so the failure is recorded.
    const envelope = storableEnvelope(thrownEnvelope, retryable);
    try {
      const { row, error } = await writeFailure(host.store, { taskId: ctx.taskId, workerId: host.workerId, attempt: ctx.attempt, error: envelope, retryable, delayMs });
      host.contexts.settled(ctx, row.status, { envelope: error, retryable, delayMs }, false);
    } catch (err) {
      if (err instanceof LostLease) ctx.markLost("write");
      else host.reporter.report(err, { phase: "execute", taskId: ctx.taskId }, ctx);
    }
  }
}

/**
 * The envelope of {@link CallRunner.failUnprepared}: not retryable, because the worker would claim the same
 * row and fail to read it the same way; an operator fixes the row (or the worker) and retries the task.
 */
function unpreparedEnvelope(taskId: string, err: unknown): unknown {
  const reason = err instanceof Error ? err.message : String(err);
  return storableEnvelope(
    {
      type: "TaskUnreadable",
      code: "task_unreadable",
      message: `the worker could not prepare task ${taskId} for its handler (${reason}), so the handler did not run; fix the row or the worker and retry the task`,
      retryable: false,
      details: {},
    },
    false,
  );
}

const ABANDONED: Outcome = Object.freeze({ kind: "abandoned" });
const TIMED_OUT: Outcome = Object.freeze({ kind: "timeout" });
const PARKED: Outcome = Object.freeze({ kind: "parked" });
/** The outcomes of a handler that returned nothing: shared, not an object per call. */
const RETURNED_NULL: Outcome = Object.freeze({ kind: "returned", value: null });
const RETURNED_UNDEFINED: Outcome = Object.freeze({ kind: "returned", value: undefined });

/** Told once when a call's life in the runner is over; `error` is an unexpected failure of its settlement path. @internal */
export interface CallEnded {
  callEnded(call: Call, error: unknown): void;
}

/**
 * One handler call's wait, from its invocation to its outcome: what the call's abandonment, its task's
 * park, its `maxRunMs` timer and the handler's own end all report to, so the first of them decides. One
 * object per call in place of a promise, its resolving functions and a closure per way to end.
 */
class Invocation {
  timer: TimerHandle | undefined = undefined;
  #over = false;

  constructor(
    readonly call: Call,
    readonly registration: Registration,
    readonly span: CallSpan | null,
    readonly ended: CallEnded,
    private readonly onEnd: (invocation: Invocation, outcome: Outcome) => void,
  ) {}

  /** The outcome, unless another already ended the wait. */
  end(outcome: Outcome): void {
    if (this.#over) return;
    this.#over = true;
    this.timer?.clear();
    this.call.onAbandon(null);
    this.onEnd(this, outcome);
  }

  returned(value: unknown): void {
    this.end(value === null ? RETURNED_NULL : value === undefined ? RETURNED_UNDEFINED : { kind: "returned", value });
  }

  threw(error: unknown): void {
    this.end({ kind: "threw", error });
  }

  /** The stop deadline let go of the call (see `Call.abandon`). */
  abandoned(): void {
    this.end(ABANDONED);
  }

  /** The task parked (`steps.ts`): its row is written already. */
  parked(): void {
    this.end(PARKED);
  }
}

/** Invokes the registration's handler with the call's contexts (a batch handler gets a copy of the list). */
function callHandler(registration: Registration, contexts: readonly Context[]): unknown {
  if (registration.batch !== null) {
    // A copy: a handler that sorts or trims its list must not change which tasks the call settles.
    return (registration.handler as (ctxs: TaskContext[]) => unknown)([...contexts]);
  }
  const ctx = contexts[0] as Context;
  return (registration.handler as (ctx: TaskContext, payload: unknown) => unknown)(ctx, ctx.payload);
}

/**
 * Ends a handler call with what it returned: a promise's settlement, any other thenable's (as `await`
 * would adopt it), or the value itself at once. A thenable whose `then` getter throws is a throw.
 */
function settleWith(returned: unknown, invocation: Invocation): void {
  if (returned instanceof Promise) {
    returned.then(
      (value: unknown) => invocation.returned(value),
      (error: unknown) => invocation.threw(error),
    );
    return;
  }
  if (returned === null || returned === undefined) {
    invocation.returned(returned);
    return;
  }
  let then: unknown;
  try {
    then = typeof returned === "object" || typeof returned === "function" ? (returned as { then?: unknown }).then : undefined;
  } catch (error) {
    invocation.threw(error);
    return;
  }
  if (typeof then === "function") {
    Promise.resolve(returned).then(
      (value: unknown) => invocation.returned(value),
      (error: unknown) => invocation.threw(error),
    );
  } else {
    invocation.returned(returned);
  }
}

/** A batch call's result for one task: read from an object or Map by id; anything else (or a missing id) is `null`. */
function resultById(value: unknown, taskId: string): unknown {
  if (value instanceof Map) return value.has(taskId) ? (value.get(taskId) as unknown) : null;
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, taskId)) {
    return (value as Record<string, unknown>)[taskId];
  }
  return null;
}

/** `err instanceof LostLease` that cannot throw: a thrown Proxy's traps may throw on any read. */
function isLostLease(err: unknown): boolean {
  try {
    return err instanceof LostLease;
  } catch {
    return false;
  }
}
