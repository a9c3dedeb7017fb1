/**
 * What the worker tells the outside: its lifecycle events (to listeners),
 * how each task ended and which leases were lost (to listeners and the
 * logger), and the errors it survives (to `onError` and the logger). Events
 * are built only when someone takes them: a settlement nobody listens to or
 * logs costs no object.
 */
import type { Logger, TaskStatus } from "@cairnq/protocol";
import { EventLoopBlocked } from "@cairnq/protocol";
import { catchRejection, logSafely } from "@cairnq/protocol/sdk";
import type { RuntimeClock } from "@cairnq/runtime";
import type { TaskEvent, WorkerEventListener, WorkerEventName, WorkerEvents } from "./events.js";
import { TypedEmitter } from "./events.js";
import type { ResolvedWorkerOptions, WorkerErrorInfo } from "./options.js";
import type { Context, LostReason } from "./task-context.js";

/** The log fields that tie a record to the span of the call it is about. @internal */
export interface TraceFields {
  readonly trace_id: string;
  readonly span_id: string;
}

/** The worker's events, settlement and lease-loss logging, and `onError` handling. @internal */
export class Reporter {
  readonly #workerId: string;
  readonly #logger: Logger | undefined;
  readonly #onError: ResolvedWorkerOptions["onError"];
  readonly #clock: RuntimeClock;
  readonly #events = new TypedEmitter<WorkerEvents>();

  /** Extra log fields for a task's records (`trace_id`, `span_id` of its call's span), when tracing is on. */
  traceFields: ((ctx: Context) => TraceFields | undefined) | null = null;

  constructor(workerId: string, options: Pick<ResolvedWorkerOptions, "logger" | "onError" | "clock">) {
    this.#workerId = workerId;
    this.#logger = options.logger;
    this.#onError = options.onError;
    this.#clock = options.clock;
  }

  /** Subscribes a listener (see `Worker.on`). */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void {
    this.#events.on(event, listener);
  }

  /** Unsubscribes a listener (see `Worker.off`). */
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void {
    this.#events.off(event, listener);
  }

  /** Emits `event`; a throwing listener, or an async one that rejects, is logged and ignored. */
  emit<E extends WorkerEventName>(event: E, payload: WorkerEvents[E]): void {
    this.#events.emit(event, payload, (err) =>
      logSafely(this.#logger, "error", "a worker event listener threw; ignored", { workerId: this.#workerId, event, error: err }),
    );
  }

  /** `task:claimed` for each of a claim's tasks, when someone listens; `claimMs` is how long the claim cycle took. */
  claimed(contexts: readonly Context[], claimMs: number): void {
    if (!this.#events.has("task:claimed")) return;
    for (const ctx of contexts) this.emit("task:claimed", this.#taskEvent(ctx, claimMs));
  }

  /** A settlement or park was written (`ContextHost.settled`): its event and log line, built only when a listener or the logger takes them. */
  settled(ctx: Context, status: TaskStatus, failure: { envelope: unknown; retryable: boolean; delayMs: number } | null, parked: boolean): void {
    const name = status === "succeeded" ? "task:succeeded" : status === "canceled" ? "task:canceled" : parked ? "task:parked" : "task:failed";
    const level = status === "succeeded" || parked ? "debug" : "info";
    const logger = this.#logger !== undefined && typeof this.#logger[level] === "function" ? this.#logger : undefined;
    if (logger === undefined && !this.#events.has(name)) return;
    const event = this.#taskEvent(ctx, this.#clock.now() - ctx.startedAtMs);
    const trace = logger === undefined ? undefined : this.traceFields?.(ctx);
    if (status === "succeeded") {
      this.emit("task:succeeded", event);
      if (logger !== undefined) logSafely(logger, "debug", "task succeeded", { ...event, status, ...trace });
    } else if (status === "canceled") {
      this.emit("task:canceled", event);
      if (logger !== undefined) logSafely(logger, "info", "task canceled", { ...event, status, ...trace });
    } else if (parked) {
      this.emit("task:parked", event);
      if (logger !== undefined) logSafely(logger, "debug", "task parked", { ...event, status, ...trace });
    } else if (failure !== null) {
      const willRetry = status === "queued";
      this.emit("task:failed", { ...event, error: failure.envelope, retryable: failure.retryable, willRetry, delayMs: failure.delayMs });
      if (logger !== undefined) {
        logSafely(logger, "info", willRetry ? "task failed; will retry" : "task failed", { ...event, status, error: failure.envelope, ...trace });
      }
    }
  }

  /** A context just became lost: `lease:lost` and a warning for a real lease loss (not the worker letting go). */
  lost(ctx: Context, reason: LostReason): void {
    const event = this.#taskEvent(ctx, this.#clock.now() - ctx.startedAtMs);
    if (reason === "heartbeat" || reason === "write" || reason === "reclaimed") {
      this.emit("lease:lost", { ...event, reason });
      logSafely(this.#logger, "warn", "lease lost; the handler's signal was aborted", { ...event, reason, ...this.traceFields?.(ctx) });
    }
  }

  /**
   * Hands an error the worker survives to `onError` (whose own exceptions are swallowed) and the logger.
   * `ctx`, the task concerned (`info.taskId`'s), adds its call span's `traceId`/`spanId` to `info` and
   * `trace_id`/`span_id` to the log record when the task was traced.
   */
  report(err: unknown, info: WorkerErrorInfo, ctx?: Context): void {
    const level = err instanceof EventLoopBlocked ? "warn" : "error";
    const trace = ctx === undefined ? undefined : this.traceFields?.(ctx);
    logSafely(this.#logger, level, err instanceof Error ? err.message : "worker error", {
      workerId: this.#workerId,
      phase: info.phase,
      taskId: info.taskId,
      error: err,
      ...trace,
    });
    const onError = this.#onError;
    if (onError === null) return;
    try {
      const returned = onError(err, trace === undefined ? info : { ...info, traceId: trace.trace_id, spanId: trace.span_id }) as unknown;
      catchRejection(returned);
    } catch {
      // onError's exceptions are swallowed (§8.1): reporting must not stop the worker.
    }
  }

  #taskEvent(ctx: Context, durationMs: number): TaskEvent {
    return { taskId: ctx.taskId, workerId: this.#workerId, name: ctx.name, queue: ctx.queue, attempt: ctx.attempt, durationMs };
  }
}
