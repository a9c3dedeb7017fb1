/**
 * `@cairnq/worker` — claims CairnQ tasks under a lease and runs their
 * handlers (protocol v1 §8). Depends only on the `TaskStore` contract of
 * `@cairnq/protocol`: pass it any store.
 *
 * @packageDocumentation
 */
export { Worker } from "./worker.js";
export type { Awaitable, BatchHandler, BatchResults, TaskHandler, TaskOptions } from "./task-registry.js";
export { MIN_LEASE_MS } from "./options.js";
export type { ResolvedWorkerOptions, WorkerErrorInfo, WorkerOptions } from "./options.js";
export type { ChildSubmitOptions, FailOptions, TaskContext } from "./task-context.js";
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
export { CLAIM_ERROR_MAX_SLEEP_MS, CLAIM_ERROR_SLEEP_MS, DEFAULT_CONCURRENCY, DEFAULT_POLL_INTERVAL_MS, DEFAULT_STOP_TIMEOUT_MS } from "./defaults.js";
// Rules shared with the client live once in @cairnq/protocol; the worker keeps their public names.
export { defaultHeartbeatIntervalMs, nextPollInterval as nextPollMs, WAIT_DEFAULTS } from "@cairnq/protocol";
export type { Logger as WorkerLogger, LogLevel, WaitOptions } from "@cairnq/protocol";
