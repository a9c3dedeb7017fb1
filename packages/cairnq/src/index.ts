/**
 * `cairnq` — a durable task runtime for TypeScript services, on SQLite or
 * Postgres. Re-exports the public names of `@cairnq/protocol`,
 * `@cairnq/client`, `@cairnq/worker`, `@cairnq/retention` and both stores,
 * and adds factories: `CairnQ.sqlite(path)`, `Worker.sqlite(path)`,
 * `CairnQ.postgres(dsn)`, `Worker.postgres(dsn)`. A store's driver loads only
 * when its store opens.
 *
 * Every name is listed here by hand: this file is the package's public
 * surface, the names an application writes. What only a store adapter or an
 * SDK layer writes stays in its package: the `TaskStore` contract's input
 * types and capabilities (`ClaimInput`, `SubmitInput`, `StoreSignal`, … in
 * `@cairnq/protocol`), the rules and normalizers (`@cairnq/protocol/adapter`),
 * the wait loop and gate core (`@cairnq/protocol/sdk`), the dialect kit
 * (`@cairnq/store-kysely`), and the client's `BackpressureGate`. The few
 * bounds an application checks its inputs against (`TEXT_LIMITS`,
 * `MAX_JSON_DEPTH`, `MAX_RETRY_DELAY_MS`, beside `MAX_DELAY_MS`) are
 * re-exported from those subpaths, as the README names them.
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
  MySQLCairnQOptions,
  MySQLWorkerOptions,
  PostgresCairnQOptions,
  PostgresFactoryStoreOptions,
  PostgresWorkerOptions,
  SQLiteCairnQOptions,
  SQLiteFactoryClock,
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
  KeyHeldByOtherTask,
  ListenUnavailable,
  LostLease,
  MAX_DELAY_MS,
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
  Conflict,
  ErrorEnvelope,
  JsonProblem,
  Logger,
  LogLevel,
  MaxQueueDepth,
  QueueDepthGate,
  QueueStats,
  RateLimit,
  RetryOptions,
  SendOutcome,
  StepKind,
  StepRecord,
  StepStatus,
  SubmitOptions,
  SubmitOutcome,
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
  WaitOptions,
} from "@cairnq/protocol";
// The bounds of what a task can hold (README "What a task can hold"); the rest of these subpaths is plumbing.
export { MAX_JSON_DEPTH, TEXT_LIMITS } from "@cairnq/protocol/adapter";
export { MAX_RETRY_DELAY_MS } from "@cairnq/protocol/sdk";

// @cairnq/client
export { listPage, WaitInterrupted } from "@cairnq/client";
export type {
  BulkOptions,
  CairnQOptions,
  CallOptions,
  ExplainOptions,
  ExplainState,
  Explanation,
  PayloadArgs,
  PayloadFor,
  PurgeOptions,
  QueueActivity,
  ResultFor,
  RetentionHook,
  RetryManyOptions,
  StopWatching,
  TaskFor,
  TaskListInput,
  TaskPage,
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
  RuntimeClock,
  FailOptions,
  HandlerFor,
  LeaseLostEvent,
  LeaseLostReason,
  MeterProviderLike,
  MetricsOptions,
  ResolvedWorkerOptions,
  ScheduleOptions,
  ScheduleSpec,
  SpawnOptions,
  StepInfo,
  TaskContext,
  TaskEvent,
  TaskFailedEvent,
  TaskHandler,
  TaskOptions,
  TraceRelation,
  TracerProviderLike,
  TracingOptions,
  WaitForOptions,
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
export type { RetentionErrorInfo, RetentionOptions, RetentionPolicy, RetentionRule, RetentionStatusMap, RetentionSweeperOptions } from "@cairnq/retention";

// The stores (each loads its driver only when it opens).
export { DatabaseBusy, GroupRolledBack, SQLiteStore } from "@cairnq/store-sqlite";
export type { SQLiteDriverName, SQLiteStoreOptions, SQLiteTransactionStore } from "@cairnq/store-sqlite";
export { MySQLStore } from "@cairnq/store-mysql";
export type { AnyMySQLTransaction, MySQLPool, MySQLStoreOptions, MySQLTarget } from "@cairnq/store-mysql";
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
