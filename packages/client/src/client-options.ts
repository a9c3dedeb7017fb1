/**
 * The option bags of `CairnQ`'s methods and the lists of their keys, which
 * the unknown-key checks read.
 */
import type { ListInput, Logger, MaxQueueDepth, PayloadFor, PurgeInput, ResultFor, RetryOptions, SubmitOptions, Task, TaskDef, TaskFilter, WaitOptions } from "@cairnq/protocol";
import { SUBMIT_OPTION_KEYS, WAIT_OPTION_KEYS } from "@cairnq/protocol/sdk";
import type { RetentionSweeperOptions } from "@cairnq/retention";
import type { MetricsOptions, RuntimeClock, TracingOptions } from "@cairnq/runtime";
import type { RetentionHook } from "./retention-hook.js";

/** Options of {@link CairnQ}. */
export interface CairnQOptions {
  /**
   * Backpressure (§5.6): the most `queued` tasks a queue may hold before a
   * submit waits for room — an integer ≥ 1 for every queue, or an object
   * `{ [queue]: limit }` gating only the named queues. The gate is installed
   * on `store.queueDepthGate`, so child submits from workers sharing this
   * store object are gated too. A soft limit: N producers may overshoot it by
   * (N − 1) × 64. @default undefined (no limit)
   */
  maxQueueDepth?: MaxQueueDepth | undefined;
  /**
   * How long a gated submit waits for room before it rejects with
   * `QueueFull` (nothing enqueued). Integer ≥ 0. @default 600000
   */
  maxQueueWaitMs?: number | undefined;
  /** First sleep between depth probes while a queue is full; doubles up to 5000 ms. Integer ≥ 1. @default 250 */
  queuePollIntervalMs?: number | undefined;
  /**
   * Retention owned by this client: the options of a `RetentionSweeper`
   * (`{ olderThanMs, intervalMs?, limit?, onError?, logger? }`, with
   * `olderThanMs` a number, a per-status map or a rule list), from which the
   * client builds the sweeper over its store — or a ready sweeper (any
   * object with `start()` and `stop()`). Started in the constructor and
   * stopped in `close()`, before the store closes.
   * @default undefined (nothing is purged automatically)
   * @example
   * ```ts
   * new CairnQ(store, { retention: { olderThanMs: 7 * 24 * 3600_000 } });
   * ```
   */
  retention?: RetentionSweeperOptions | RetentionHook | null | undefined;
  /**
   * Structural logger (`console`, pino, …); `null` silences the client, as
   * it silences the worker, the stores and the dashboard (so one options
   * bag, such as `CairnQ.postgres`'s, can say `logger: null` to all).
   * @default undefined (silent)
   */
  logger?: Logger | null | undefined;
  /**
   * The clock the client reads the time from and sleeps on: `wait`, `call`
   * and `waitByKey` deadlines and poll sleeps, the `maxQueueDepth` gate's
   * sleeps and deadline, `explain`'s "now". For tests: `@cairnq/testing`
   * passes a virtual clock the test moves by hand, with a store on the same
   * clock. Rows are stamped by the store's clock, never this one.
   * @default the system clock (`Date.now()`, Node's timers)
   */
  clock?: RuntimeClock | undefined;
  /**
   * OpenTelemetry traces (needs `@opentelemetry/api`): each submit is a
   * PRODUCER span `send <queue>`, a child of the active span, and its
   * context is stored with the task (metadata key `cairnq.trace`, in the
   * same write) so the worker's `process <queue>` span links to it. `true`
   * uses the global tracer provider. See docs/telemetry.md.
   * @default false
   */
  tracing?: boolean | TracingOptions | undefined;
  /**
   * OpenTelemetry metrics (needs `@opentelemetry/api`): the
   * `messaging.client.sent.messages` counter. `true` uses the global meter
   * provider, looked up until one is registered. See docs/telemetry.md.
   * @default false
   */
  metrics?: boolean | MetricsOptions | undefined;
}

/** Options of {@link CairnQ.call}: submit options plus how to wait. */
export interface CallOptions extends SubmitOptions {
  /** Give up with `TaskTimeout` after this long (the task keeps running). Integer ≥ 0. @default 30000 */
  waitTimeoutMs?: number | undefined;
  /** First poll interval. @default 100 */
  pollMs?: number | undefined;
  /** Largest poll interval. @default 500 */
  maxPollMs?: number | undefined;
  /** Aborts the wait (not the task): rejects with `signal.reason`. @default undefined */
  signal?: AbortSignal | undefined;
}

/**
 * Options of {@link CairnQ.purge}. Unlike the store's input, `olderThanMs` is
 * required: `0` deletes every terminal task, which should be said explicitly.
 */
export interface PurgeOptions extends Omit<PurgeInput, "olderThanMs"> {
  /** Delete only rows completed more than this long ago; `0` = every terminal row. */
  olderThanMs: number;
}

/** Options of {@link CairnQ.cancelMany}: `list`'s filters and the batch size. */
export interface BulkOptions extends TaskFilter {
  /** Rows per statement (an integer ≥ 1). @default 1000 */
  batchSize?: number | undefined;
}

/** Options of {@link CairnQ.retryMany}: {@link BulkOptions} plus retry's `resetAttempt`. */
export interface RetryManyOptions extends BulkOptions, RetryOptions {}

/** The row type of a task of `D`: `Task<P, R>` from a {@link TaskDef}, `Task` without one. */
export type TaskFor<D> = Task<PayloadFor<D>, ResultFor<D>>;

/** {@link WaitOptions} plus the {@link TaskDef} that types the row (and is checked against its name). */
export interface TaskWaitOptions<D extends TaskDef = TaskDef> extends WaitOptions {
  /** Types the returned row from this definition; a task of another name fails with `InvalidArgument`. @default undefined (an untyped row) */
  task?: D | undefined;
}

/** {@link ListInput} plus a {@link TaskDef}: filters on its name and types the rows. */
export interface TaskListInput<D extends TaskDef = TaskDef> extends ListInput {
  /** Lists tasks of this definition (its `name`), typed; with `name` too, both must agree. @default undefined */
  task?: D | undefined;
}

export const SUBMIT_KEYS = SUBMIT_OPTION_KEYS;
export const CALL_KEYS = [...SUBMIT_KEYS, "waitTimeoutMs", "pollMs", "maxPollMs", "signal"] as const satisfies readonly (keyof CallOptions)[];
export const WAIT_KEYS = [...WAIT_OPTION_KEYS, "task"] as const satisfies readonly (keyof TaskWaitOptions)[];
/** Every key of {@link CairnQOptions}, for the unknown-key check (the umbrella's factories list them too). */
export const CLIENT_OPTION_KEYS = Object.freeze(["maxQueueDepth", "maxQueueWaitMs", "queuePollIntervalMs", "retention", "logger", "clock", "tracing", "metrics"] as const satisfies readonly (keyof CairnQOptions)[]);

export const BULK_KEYS = ["status", "queue", "name", "rootId", "correlationId", "batchSize"] as const satisfies readonly (keyof BulkOptions)[];
export const RETRY_MANY_KEYS = [...BULK_KEYS, "resetAttempt"] as const satisfies readonly (keyof RetryManyOptions)[];
/** `retry`'s and `purge`'s keys are protocol's (the stores refuse any other); the client checks them first for its "did you mean" hint. */
export { PURGE_OPTION_KEYS as PURGE_KEYS, RETRY_OPTION_KEYS as RETRY_KEYS } from "@cairnq/protocol/sdk";
