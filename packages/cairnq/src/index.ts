/**
 * `cairnq` — a durable task runtime for TypeScript services, on SQLite or
 * Postgres. Re-exports the public names of `@cairnq/protocol`,
 * `@cairnq/client`, `@cairnq/worker`, `@cairnq/retention` and both stores,
 * and adds factories: `CairnQ.sqlite(path)`, `Worker.sqlite(path)`,
 * `CairnQ.postgres(dsn)`, `Worker.postgres(dsn)`. A store's driver loads only
 * when its store opens.
 *
 * Every name is listed here by hand: this file is the package's public
 * surface. Building blocks for store adapters and SDK layers stay in their
 * packages (`@cairnq/protocol/adapter`, `@cairnq/protocol/sdk`,
 * `@cairnq/store-kysely`).
 *
 * @example
 * ```ts
 * import { CairnQ, Worker } from "cairnq";
 *
 * const worker = Worker.sqlite("cairnq.db");
 * worker.task("add", (_ctx, p: { a: number; b: number }) => p.a + p.b);
 * void worker.run();
 * const cairnq = CairnQ.sqlite("cairnq.db");
 * console.log(await cairnq.call("add", { a: 1, b: 2 })); // 3
 * ```
 *
 * @packageDocumentation
 */

// Factories: the client and worker classes with their store-building statics.
export { CairnQ, Worker } from "./factories.js";
export type {
  PostgresCairnQOptions,
  PostgresFactoryStoreOptions,
  PostgresWorkerOptions,
  SQLiteCairnQOptions,
  SQLiteWorkerOptions,
} from "./factories.js";

// @cairnq/protocol — statuses, the task row, task definitions, errors, the store contract.
export {
  AlreadyExists,
  CairnQError,
  CANCELABLE_STATUSES,
  cancelRequested,
  DatabaseUnusable,
  defineTask,
  EventLoopBlocked,
  InvalidArgument,
  isCanceled,
  isFailed,
  isFatalError,
  isQueued,
  isRunning,
  isSucceeded,
  isTaskStatus,
  isTerminal,
  isTerminalStatus,
  ListenUnavailable,
  LostLease,
  PROTOCOL_VERSION,
  ProtocolVersionMismatch,
  QueueFull,
  RETRYABLE_STATUSES,
  SCHEMA_VERSION,
  scheduleSlotKey,
  SchemaMismatch,
  SerializationError,
  STATUSES,
  TaskCanceled,
  TaskError,
  TaskFailed,
  TaskTimeout,
  TERMINAL_STATUSES,
  UnsupportedBackend,
} from "@cairnq/protocol";
export type {
  BackpressureGateOptions,
  BulkBatchInput,
  CairnQErrorInit,
  CairnQErrorOptions,
  ClaimDraw,
  ClaimInput,
  CompleteInput,
  Conflict,
  ErrorEnvelope,
  FailInput,
  FlowControl,
  HeartbeatBatchInput,
  HeartbeatInput,
  IfJson,
  JsonProblem,
  ListInput,
  ListOrder,
  Logger,
  LogLevel,
  MaxQueueDepth,
  OwnedInput,
  ProgressInput,
  PurgeInput,
  QueueDepthGate,
  QueueStats,
  RateLimit,
  RetryBatchInput,
  RetryOptions,
  SchemaMismatchFields,
  StoreCapabilities,
  StoreSignal,
  SubmitInput,
  SubmitOptions,
  SubmitOutcome,
  SucceedInput,
  Task,
  TaskDef,
  TaskDefOptions,
  TaskErrorOptions,
  TaskFilter,
  TaskPayload,
  TaskRef,
  TaskResult,
  TaskStatus,
  TaskStore,
  TerminalStatus,
  TransactionalTaskStore,
  WaitOptions,
} from "@cairnq/protocol";

// @cairnq/client
export { BackpressureGate } from "@cairnq/client";
export type {
  BulkOptions,
  CairnQOptions,
  CallOptions,
  PayloadArgs,
  PayloadFor,
  PurgeOptions,
  ResultFor,
  RetentionHook,
  RetryManyOptions,
  StopWatching,
  TaskFor,
  TaskListInput,
  TaskWaitOptions,
  WatchOptions,
  WatchSignal,
} from "@cairnq/client";

// @cairnq/worker
export type {
  Awaitable,
  BatchHandler,
  BatchHandlerFor,
  BatchResults,
  ChildSubmitOptions,
  FailOptions,
  HandlerFor,
  LeaseLostEvent,
  LeaseLostReason,
  ResolvedWorkerOptions,
  ScheduleOptions,
  ScheduleSpec,
  TaskContext,
  TaskEvent,
  TaskFailedEvent,
  TaskHandler,
  TaskOptions,
  WorkerErrorInfo,
  WorkerEventListener,
  WorkerEventName,
  WorkerEvents,
  WorkerOptions,
  WorkerStoppedEvent,
  WorkerStoppingEvent,
} from "@cairnq/worker";

// @cairnq/retention
export { RetentionSweeper } from "@cairnq/retention";
export type { RetentionErrorInfo, RetentionOptions, RetentionPolicy, RetentionRule, RetentionStatusMap, RetentionStore, RetentionSweeperOptions } from "@cairnq/retention";

// The stores (each loads its driver only when it opens).
export { DatabaseBusy, GroupRolledBack, SQLiteStore } from "@cairnq/store-sqlite";
export type { SQLiteStoreOptions, SQLiteTransactionStore } from "@cairnq/store-sqlite";
export { PostgresStore } from "@cairnq/store-postgres";
export type {
  PostgresErrorHook,
  PostgresErrorInfo,
  PostgresPool,
  PostgresStoreOptions,
  PostgresTarget,
  PostgresTimeouts,
  PostgresTransactionStore,
} from "@cairnq/store-postgres";
