/**
 * `@cairnq/worker` — claims CairnQ tasks under a lease and runs their
 * handlers (protocol v1 §8). Depends only on the `TaskStore` contract of
 * `@cairnq/protocol`: pass it any store.
 *
 * @packageDocumentation
 */
export { Worker } from "./worker.js";
export type { Awaitable, BatchHandler, BatchResults, TaskHandler, TaskOptions } from "./worker.js";
export type { ResolvedWorkerOptions, WorkerErrorInfo, WorkerOptions } from "./options.js";
export type { ChildSubmitOptions, FailOptions, TaskContext } from "./task-context.js";
export type { WaitOptions } from "./wait.js";
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
export type { LogLevel, WorkerLogger } from "./logger.js";
export {
  CLAIM_ERROR_SLEEP_MS,
  DEFAULT_CONCURRENCY,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  defaultHeartbeatIntervalMs,
  nextPollMs,
  WAIT_DEFAULTS,
} from "./defaults.js";
