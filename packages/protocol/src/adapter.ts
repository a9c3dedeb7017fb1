/**
 * `@cairnq/protocol/adapter` — what a store adapter or a test kit needs from
 * protocol v1: the rules as data (one declarative transition per operation),
 * the expression language they are written in, the in-memory evaluator
 * (`decideRow`, `selectRows`, `buildInsert`), the input normalizers and
 * parameter builders every store calls before it touches the database, the
 * column list, ids, key-conflict resolution and the JSON boundary.
 *
 * Applications do not need this entry point: `@cairnq/protocol` holds the
 * statuses, the `Task` row, errors and the `TaskStore` contract.
 *
 * @example
 * ```ts
 * import { CANCEL, decideRow } from "@cairnq/protocol/adapter";
 *
 * const outcome = decideRow(CANCEL, task, { id: task.id }, nowMs);
 * ```
 *
 * @packageDocumentation
 */
export {
  CANCEL,
  CANCELABLE,
  CLAIMABLE,
  COMPLETE,
  DRAW,
  EXPIRED,
  FAIL,
  FLAG,
  flattenAssignments,
  HEARTBEAT,
  HEARTBEAT_BATCH,
  OWNER,
  PARAMS,
  PROBE,
  PARENT_WAITING,
  PROGRESS,
  PURGE,
  RECOVER,
  RETRY,
  RETRYABLE,
  ROW_TRANSITIONS,
  SUBMIT,
  SUCCEED,
} from "./rules.js";
export type { Assignments, Branch, Clock, DeleteRule, InsertRule, Miss, RowTransition, Selection, SetTransition } from "./rules.js";
export { CANCEL_BATCH, cancelBatchParams, LIST_FILTER, RETRY_BATCH, retryBatchParams } from "./bulk.js";
export { evaluate, holds, paramsOf, x } from "./expr.js";
export type {
  AndExpr,
  ArithExpr,
  CaseExpr,
  CoalesceExpr,
  ColumnExpr,
  CompareExpr,
  CompareOp,
  EvalScope,
  Expr,
  InExpr,
  InListExpr,
  IsNullExpr,
  LiteralExpr,
  NotExpr,
  NowExpr,
  OptionalEqExpr,
  OrExpr,
  ParamExpr,
  ParamType,
  ParentExpr,
  Value,
} from "./expr.js";
export { applyBranches, buildInsert, decideRow, selectRows } from "./decide.js";
export type { Decision, Params } from "./decide.js";
export {
  answerReprobe,
  completeParams,
  DEFAULT_LEASE_MS,
  DEFAULT_LIST_LIMIT,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_PRIORITY,
  DEFAULT_PURGE_LIMIT,
  DEFAULT_QUEUE,
  drawParams,
  failParams,
  heartbeatBatchParams,
  heartbeatBatchResult,
  heartbeatParams,
  normalizeClaim,
  normalizeList,
  normalizeSubmit,
  probeParams,
  progressParams,
  purgeParams,
  queueDepthArgs,
  requireCutoffMs,
  requireInt,
  requireKey,
  requireLimitedText,
  requireName,
  requireTerminalStatus,
  retryParams,
  succeedParams,
  TEXT_LIMITS,
  utf8Length,
} from "./inputs.js";
export type { LimitedTextField, NormalizedClaim, NormalizedList, NormalizedSubmit } from "./inputs.js";
export { describe, isPlainObject } from "./describe.js";
export { requireDelayMs } from "./delay.js";
export { JSON_COLUMNS, TASK_COLUMNS } from "./task.js";
export type { TaskColumn } from "./task.js";
export { CONFLICTS, isConflict, resolveKeyConflict } from "./conflict.js";
export type { KeyDecision } from "./conflict.js";
export { isTaskId, newTaskId, newWorkerId, TASK_ID_PATTERN, taskIdTime } from "./ids.js";
export { decodeJson, encodeJson, MAX_JSON_DEPTH, sanitizeText, toMs, unstorableText } from "./json.js";
export { LEASE_EXPIRED_ENVELOPE } from "./envelope.js";
export {
  claimFlowControl,
  FLOW_LOCK_PREFIX,
  FLOW_NAME,
  flowAllowance,
  flowLimitedDraws,
  flowLockKey,
  hasGroupLimits,
  inRateWindow,
  MAX_RATE_WINDOW_MS,
  normalizeFlowControl,
  rateWindowStartMs,
  RUNNING_OF_NAME,
} from "./flow-control.js";
export type { DrawPlanner, NormalizedFlowControl } from "./flow-control.js";
export { RATE_LIMIT_REFRESH_MS, rateLimitRowDue, rateWindowAt, rateWindowFull, rateWindowOf } from "./rate-windows.js";
export { DEBOUNCE, DEBOUNCE_CAPPED, debounceConflict, debounceReadsJournal, debounceUpdate, normalizeDebounce, resolveDebounce } from "./debounce.js";
export type { DebounceDecision, DebounceKeyTask, NormalizedDebounce } from "./debounce.js";
export {
  compareGroupWalk,
  GROUP_DRAW,
  GROUP_HEAD_ROWS,
  GROUP_TASK_IDS,
  GROUP_TASK_STATES,
  groupAllowance,
  groupClaimsInWindow,
  groupReadDepth,
  rotateGroups,
  sortGroupCounts,
  countsAsGroupRunning,
  GROUP_REQUEUE_PATHS,
  GROUP_RUNNING,
  wakeGroupTask,
  headGroupRowAction,
  GROUP_PRUNE_BATCH,
  GROUP_PRUNE_INTERVAL_MS,
  groupPruneDue,
} from "./groups.js";
export type { GroupCandidates, GroupLimits, GroupRotation, GroupTaskState, GroupWalkTask } from "./groups.js";
export { normalizeScheduleSlots, requireScheduleName, RUN_AT_MS, SCHEDULED_SUBMIT, scheduleLockKey, slotsToSubmit } from "./schedule.js";
export { brandErrorClass } from "./errors.js";
export { LIST_BEFORE_ID, LIST_ROWS, QUEUE_DEPTH_ROWS, READ_PARAMS, STATS_ROWS } from "./reads.js";
export { FLAGGABLE_STATUSES } from "./statuses.js";
export {
  decodeStepRow,
  hasMessageParams,
  holdsJoin,
  joinParentsToWake,
  PARK,
  PARK_PARAMS,
  parkStepParams,
  recordStepParams,
  refusedSpawnOption,
  requireMessageName,
  requireReplayKind,
  requireSendTarget,
  requireSpawnChild,
  requireStepName,
  requireWakeAtMs,
  sendParams,
} from "./steps.js";
export type { SpawnRefusedOption } from "./steps.js";
