/**
 * The call and settlement path (§8.4): runs one handler call under its
 * heartbeat, bounded by `maxRunMs` and by abandonment at the stop deadline,
 * then settles every task the handler did not settle itself.
 *
 * Terminology: a *call* is one handler invocation (one task, or a batch of
 * tasks of one name); *settling* a task is writing its outcome (`complete`
 * or `fail`); a call is *abandoned* when the worker lets go of it without
 * settling (the `stop()` deadline), leaving its tasks to lease expiry.
 */
import type { RefCompleteTaskStore, Task, TaskStore } from "@cairnq/protocol";
import { LostLease, SerializationError } from "@cairnq/protocol";
import { envelopeFromThrown, handlerTimeoutEnvelope, noHandlerEnvelope, unserializableResultEnvelope } from "@cairnq/protocol/sdk";
import type { Deferred, TimerHandle } from "@cairnq/runtime";
import { startTimer } from "@cairnq/runtime";
import { Heartbeat } from "./heartbeat.js";
import { storableEnvelope, unencodableResult } from "./storable-outcome.js";
import type { WorkerErrorInfo } from "./options.js";
import type { ContextHost, TaskContext } from "./task-context.js";
import type { Context } from "./task-context.js";
import type { Registration } from "./task-registry.js";

/** How a handler call ended. @internal */
export type Outcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "timeout" }
  | { readonly kind: "abandoned" };

/** One handler call in flight. @internal */
export interface Call {
  readonly name: string;
  readonly registration: Registration | undefined;
  /** Every task the call claimed. */
  readonly contexts: Context[];
  /** The contexts handed to the handler: those still live when the call started (empty until then). */
  handed: Context[];
  readonly bytes: number;
  /** When the handler started (for a buffered call: when it was claimed, until it starts). */
  startedAtMs: number;
  readonly abandon: Deferred<void>;
  /** For a call buffered at its claim: resolves `true` when it starts, `false` when it is dropped unstarted. */
  started: Deferred<boolean> | null;
  /** The call's heartbeat, from its claim (see {@link CallRunner.watch}); `null` for an unregistered name. */
  heartbeat: Heartbeat | null;
  /** Settlements written before the call started (a cancel seen while it was buffered). */
  readonly early: Promise<void>[];
  /**
   * `buffered` while it waits for a slot (`prefetch`), `running` until the handler's outcome is
   * known, then `settling`; a settling call is never abandoned.
   */
  phase: "buffered" | "running" | "settling";
  done: Promise<void>;
}

/** What a {@link CallRunner} needs from its worker. @internal */
export interface CallRunnerHost {
  readonly store: TaskStore;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly heartbeatIntervalMs: number;
  readonly maxRunMs: number | null;
  readonly contexts: ContextHost;
  report(err: unknown, info: WorkerErrorInfo): void;
  /** The call's handler ended and its settlement begins (the worker frees its slot). */
  settling(call: Call): void;
}

/** Runs calls and settles their tasks. @internal */
export class CallRunner {
  readonly #host: CallRunnerHost;

  constructor(host: CallRunnerHost) {
    this.#host = host;
  }

  /**
   * Starts the call's heartbeat (§8.5) when it is claimed, so the leases of a buffered call are
   * renewed while it waits exactly as a running call's are; `onBeat` runs after each beat.
   */
  watch(call: Call, onBeat?: () => void): Heartbeat {
    const host = this.#host;
    const heartbeat = new Heartbeat({
      store: host.store,
      workerId: host.workerId,
      leaseMs: host.leaseMs,
      intervalMs: host.heartbeatIntervalMs,
      contexts: call.contexts,
      report: (err, info) => host.report(err, info),
      ...(onBeat === undefined ? {} : { onBeat }),
    });
    call.heartbeat = heartbeat;
    heartbeat.start();
    return heartbeat;
  }

  /**
   * Settles a claimed task whose handler never started because a cancel was requested while it
   * waited in the buffer: `complete` with no result, which ends a flagged task `canceled` (T7,
   * cancel wins), as the call's end would have once the handler saw the cancel.
   */
  cancelWaiting(ctx: Context): Promise<void> {
    return this.#finalComplete(ctx, null);
  }

  /** Runs `call` to its end: handler, heartbeat, settlement. Never settles an abandoned call. */
  async execute(call: Call): Promise<void> {
    const registration = call.registration;
    if (registration === undefined) {
      // Handlers changed while the claim was in flight: fail for good, without a heartbeat.
      await Promise.all(call.contexts.map((ctx) => this.#finalFail(ctx, noHandlerEnvelope(ctx.name), false, 0)));
      return;
    }
    const host = this.#host;
    const heartbeat = call.heartbeat ?? this.watch(call);
    let outcome: Outcome;
    try {
      outcome = await this.#invoke(call, registration);
    } finally {
      heartbeat.stop();
    }
    if (outcome.kind === "abandoned") return;
    call.phase = "settling";
    host.settling(call);
    await this.#settle(call, outcome);
  }

  /** Runs the handler, bounded by `maxRunMs` and by abandonment at the stop deadline. */
  async #invoke(call: Call, registration: Registration): Promise<Outcome> {
    const contexts = call.handed;
    // The executor turns a synchronous throw into a rejection, like an async handler's.
    const handled = new Promise<unknown>((resolve) => {
      if (registration.batch !== null) {
        resolve((registration.handler as (ctxs: TaskContext[]) => unknown)(contexts));
      } else {
        const ctx = contexts[0] as Context;
        resolve((registration.handler as (ctx: TaskContext, payload: unknown) => unknown)(ctx, ctx.payload));
      }
    }).then(
      (value): Outcome => ({ kind: "returned", value }),
      (error: unknown): Outcome => ({ kind: "threw", error }),
    );
    const racers: Promise<Outcome>[] = [handled, call.abandon.promise.then((): Outcome => ({ kind: "abandoned" }))];
    let timer: TimerHandle | undefined;
    const maxRunMs = this.#host.maxRunMs;
    if (maxRunMs !== null) {
      racers.push(
        new Promise<Outcome>((resolve) => {
          // Chained past 2^31 ms: a 30-day maxRunMs must not fire after 1 ms.
          timer = startTimer(() => resolve({ kind: "timeout" }), maxRunMs, { unref: true });
        }),
      );
    }
    try {
      return await Promise.race(racers);
    } finally {
      timer?.clear();
    }
  }

  /** The settlement table (§8.4): tasks the handler did not settle are settled by how the call ended. */
  async #settle(call: Call, outcome: Exclude<Outcome, { kind: "abandoned" }>): Promise<void> {
    const failDelayMs = (ctx: Context, retryable: boolean): number => this.#host.contexts.failDelayMs(ctx.attempt, retryable);
    // Contexts already lost are left alone: this worker no longer holds them (and a write might land on a newer run).
    const leftovers = call.handed.filter((ctx) => ctx.live);
    switch (outcome.kind) {
      case "returned": {
        const batch = call.registration !== undefined && call.registration.batch !== null;
        await Promise.all(
          leftovers.map((ctx) => this.#finalComplete(ctx, batch ? resultById(outcome.value, ctx.taskId) : outcome.value)),
        );
        return;
      }
      case "threw": {
        if (isLostLease(outcome.error)) return;
        const { envelope, retryable } = envelopeFromThrown(outcome.error);
        await Promise.all(leftovers.map((ctx) => this.#finalFail(ctx, envelope, retryable, failDelayMs(ctx, retryable))));
        return;
      }
      case "timeout": {
        for (const ctx of call.handed) ctx.markLost("timeout");
        const envelope = handlerTimeoutEnvelope(this.#host.maxRunMs as number);
        await Promise.all(leftovers.map((ctx) => this.#finalFail(ctx, envelope, true, failDelayMs(ctx, true))));
        return;
      }
    }
  }

  /** The worker's own `complete`, straight to the store (the store's ownership check decides). */
  async #finalComplete(ctx: Context, result: unknown): Promise<void> {
    const host = this.#host;
    ctx.beginSettle();
    // Encoded before the write: a write that throws would leave the task to lease expiry and run the handler again.
    const unencodable = unencodableResult(result);
    if (unencodable !== null) {
      await this.#finalFail(ctx, unserializableResultEnvelope(unencodable), false, 0);
      return;
    }
    try {
      const input = { taskId: ctx.taskId, workerId: host.workerId, attempt: ctx.attempt, result };
      // The whole row is not needed here, only how the task ended (succeeded, or canceled): a store that can say
      // just that spares the database and the driver most of the settlement's per-row work.
      const store = host.store;
      const status =
        store.capabilities.completeRef === true ? (await (store as RefCompleteTaskStore).completeRef(input)).status : (await store.complete(input)).status;
      host.contexts.settled(ctx, status, null);
    } catch (err) {
      if (err instanceof SerializationError) {
        await this.#finalFail(ctx, unserializableResultEnvelope(err), false, 0);
      } else if (err instanceof LostLease) {
        ctx.markLost("write");
      } else {
        host.report(err, { phase: "execute", taskId: ctx.taskId });
      }
    }
  }

  /** The worker's own `fail`, straight to the store; `LostLease` is swallowed (nothing more to write). */
  async #finalFail(ctx: Context, thrownEnvelope: unknown, retryable: boolean, delayMs: number): Promise<void> {
    const host = this.#host;
    ctx.beginSettle();
    // Made storable before the write (sanitised text, the representable part of details), so the failure is recorded.
    const envelope = storableEnvelope(thrownEnvelope, retryable);
    try {
      const row: Task = await host.store.fail({
        taskId: ctx.taskId,
        workerId: host.workerId,
        attempt: ctx.attempt,
        error: envelope,
        retryable,
        delayMs,
      });
      host.contexts.settled(ctx, row.status, { envelope, retryable, delayMs });
    } catch (err) {
      if (!(err instanceof LostLease)) host.report(err, { phase: "execute", taskId: ctx.taskId });
    }
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
