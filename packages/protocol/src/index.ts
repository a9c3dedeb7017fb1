/**
 * `@cairnq/protocol` — the names an application uses with CairnQ protocol v1:
 * task statuses and their predicates, the `Task` row, `defineTask`, the error
 * classes, the `TaskStore` contract (types) and the protocol version.
 *
 * Two subpaths hold the rest, for people building CairnQ rather than using it:
 * `@cairnq/protocol/adapter` (the rules as data, the expression language,
 * `decide*`, input normalizers and parameter builders — what a store and a
 * test kit need) and `@cairnq/protocol/sdk` (the §7 wait loop, the §5.6 gate
 * core, error envelopes, retry backoff, worker defaults — what a client or
 * worker layer needs). Each name is exported from exactly one of the three.
 *
 * @example
 * ```ts
 * import { defineTask, isTerminal, TaskFailed } from "@cairnq/protocol";
 *
 * const resize = defineTask<{ url: string }, { width: number }>("image.resize");
 * ```
 *
 * @packageDocumentation
 */
export {
  CANCELABLE_STATUSES,
  cancelRequested,
  isCanceled,
  isFailed,
  isQueued,
  isRunning,
  isSucceeded,
  isTaskStatus,
  isTerminal,
  isTerminalStatus,
  RETRYABLE_STATUSES,
  STATUSES,
  TERMINAL_STATUSES,
} from "./statuses.js";
export type { TaskStatus, TerminalStatus } from "./statuses.js";
export type { Task, TaskRef } from "./task.js";
export { defineTask } from "./task-def.js";
export type { IfJson, PayloadArgs, PayloadFor, ResultFor, TaskDef, TaskDefOptions, TaskPayload, TaskResult } from "./task-def.js";
export type { JsonProblem } from "./json-type.js";
export type { Conflict } from "./conflict.js";
export {
  AlreadyExists,
  CairnQError,
  DatabaseUnusable,
  EventLoopBlocked,
  isFatalError,
  InvalidArgument,
  ListenUnavailable,
  LostLease,
  ProtocolVersionMismatch,
  QueueFull,
  SchemaMismatch,
  SerializationError,
  TaskCanceled,
  TaskError,
  TaskFailed,
  TaskTimeout,
  UnsupportedBackend,
} from "./errors.js";
export { KeyHeldByOtherTask } from "./key-conflict.js";
export type { CairnQErrorInit, CairnQErrorOptions, ErrorEnvelope, ProtocolVersionMismatchFields, SchemaMismatchFields, TaskErrorOptions } from "./errors.js";
export type {
  BulkBatchInput,
  ClaimDraw,
  ClaimInput,
  CompleteInput,
  FailInput,
  HeartbeatBatchInput,
  HeartbeatInput,
  ListInput,
  ListOrder,
  OwnedInput,
  ProgressInput,
  PurgeInput,
  QueueDepthGate,
  QueueStats,
  RefCompleteTaskStore,
  RetryBatchInput,
  RetryOptions,
  StoreCapabilities,
  StoreSignal,
  StoreSignalReason,
  SubmitInput,
  SubmitOutcome,
  SucceedInput,
  TaskFilter,
  ScheduleTaskStore,
  TaskStore,
  TransactionalTaskStore,
} from "./store.js";
export type { QueueHealth, QueueHealthGroup, QueueHealthTaskStore } from "./queue-health.js";
export { PROTOCOL_VERSION, SCHEMA_VERSION } from "./version.js";
export { MAX_DELAY_MS } from "./delay.js";
export type { SubmitOptions } from "./submit-options.js";
export type { WaitOptions } from "./wait.js";
export type { BackpressureGateOptions, MaxQueueDepth } from "./backpressure-gate.js";
export type { Logger, LogLevel } from "./logger.js";
export type { FlowControl, RateLimit } from "./flow-control.js";
export type { RetryPolicy } from "./retry-policy.js";
export type { DebounceOptions } from "./debounce.js";
export { hasGroupReads } from "./groups.js";
export type { GroupCounts, GroupReadStore, TaskGroupInfo } from "./groups.js";
export { hasFlowReads, holdingRateWindow, RATE_LIMIT_SCOPES } from "./rate-windows.js";
export type { FlowReadStore, HoldingRateWindow, RateLimitScope, RateWindow, RateWindows } from "./rate-windows.js";
export { SCHEDULE_KEY_PREFIX, scheduleSlotKey } from "./schedule.js";
export type { ScheduleSlotsInput, ScheduleSlotsResult, ScheduleTaskInput } from "./schedule.js";
export { PARK_FOREVER_AT_MS, STEP_KINDS, stepKey } from "./steps.js";
export type { ParkOutcome, ParkStepInput, RecordStepInput, SendInput, SendOutcome, SpawnStepInput, StepKind, StepRecord, StepStatus } from "./steps.js";
export type { TaskStepStore } from "./step-store.js";
