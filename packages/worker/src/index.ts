/**
 * `@cairnq/worker` — claims CairnQ tasks under a lease and runs their
 * handlers (protocol v1 §8). Depends only on the `TaskStore` contract of
 * `@cairnq/protocol`: pass it any store.
 *
 * @packageDocumentation
 */
export { Worker } from "./worker.js";
export type { Awaitable, BatchHandler, BatchHandlerFor, BatchResults, HandlerFor, TaskHandler, TaskOptions } from "./task-registry.js";
export { MIN_LEASE_MS, WORKER_OPTION_KEYS } from "./options.js";
export type { ResolvedWorkerOptions, WorkerErrorInfo, WorkerOptions } from "./options.js";
export type { ChildSubmitOptions, FailOptions, SpawnOptions, TaskContext } from "./task-context.js";
export type { ScheduleOptions, ScheduleSpec } from "./scheduler.js";
export type { StepInfo, WaitForOptions } from "./steps.js";
export { JOIN_RECHECK_MS } from "./steps.js";
export { SCHEDULE_LEAD_MS, SCHEDULE_OPTION_KEYS } from "./scheduler.js";
export type {
  LeaseLostEvent,
  LeaseLostReason,
  TaskEvent,
  TaskFailedEvent,
  WorkerEventListener,
  WorkerEventName,
  WorkerEvents,
  WorkerStoppedEvent,
  WorkerStoppingEvent,
} from "./events.js";
// Types of the worker's own signatures that live in @cairnq/protocol and @cairnq/runtime, under the same names.
export type { Logger, LogLevel, WaitOptions } from "@cairnq/protocol";
export type { RuntimeClock } from "@cairnq/runtime";
export type { MeterProviderLike, MetricsOptions, TraceRelation, TracerProviderLike, TracingOptions } from "@cairnq/runtime";
