/**
 * `@cairnq/client` — the CairnQ client: submit tasks into a `TaskStore`,
 * read them, explain them, wait for them or `call` them, cancel, retry and
 * purge them, and gate submits on queue depth. Depends only on the `TaskStore` contract of
 * `@cairnq/protocol`, never on a concrete store.
 *
 * @example
 * ```ts
 * import { CairnQ } from "@cairnq/client";
 * import { SQLiteStore } from "@cairnq/store-sqlite";
 *
 * const client = new CairnQ(new SQLiteStore("cairnq.db"));
 * const task = await client.submit("email.send", { to: "a@example.com" });
 * ```
 *
 * @packageDocumentation
 */
export { CairnQ } from "./cairnq.js";
export { WaitInterrupted } from "./client-errors.js";
export { CLIENT_OPTION_KEYS } from "./client-options.js";
export type { BulkOptions, CairnQOptions, CallOptions, PurgeOptions, RetryManyOptions, TaskFor, TaskListInput, TaskWaitOptions } from "./client-options.js";
export type { RetentionHook } from "./retention-hook.js";
export { BackpressureGate } from "./backpressure-gate.js";
export type { ExplainOptions, ExplainState, Explanation } from "./explain.js";
export { describeStepWait, readParkedEvidence } from "./explain-steps.js";
export type { ParkedEvidence } from "./explain-steps.js";
export { listPage } from "./list-page.js";
export type { TaskPage } from "./list-page.js";
export type { QueueActivity } from "./queue-activity.js";
export type { StopWatching, WatchOptions, WatchSignal } from "./watch.js";
// Types of the client's own signatures that live in @cairnq/protocol and @cairnq/runtime, under the same names.
export type {
  BackpressureGateOptions,
  Logger,
  LogLevel,
  MaxQueueDepth,
  PayloadArgs,
  PayloadFor,
  ResultFor,
  SubmitOptions,
  SubmitOutcome,
  TaskFilter,
  WaitOptions,
} from "@cairnq/protocol";
export type { RuntimeClock } from "@cairnq/runtime";
// The shapes of the `tracing` and `metrics` options (shared with the worker).
export type { MeterProviderLike, MetricsOptions, TraceRelation, TracerProviderLike, TracingOptions } from "@cairnq/runtime";
