/**
 * `@cairnq/protocol/sdk` — what a client or worker layer needs from protocol
 * v1 besides the store contract: the §7 wait loop (`waitForTask`) and its
 * defaults, the §5.6 backpressure gate core over injected timers, the §12
 * error envelopes a worker records, §8 retry backoff and worker defaults,
 * submit options, and the never-throwing logger call. `@cairnq/client` and
 * `@cairnq/worker` are built from these; nothing here starts a timer.
 *
 * Applications do not need this entry point: use `@cairnq/client` and
 * `@cairnq/worker` (or the `cairnq` umbrella).
 *
 * @example
 * ```ts
 * import { waitForTask } from "@cairnq/protocol/sdk";
 *
 * const task = await waitForTask(store, { id }, { timeoutMs: 5_000 }, { sleep });
 * ```
 *
 * @packageDocumentation
 */
export {
  DEFAULT_MAX_POLL_MS,
  DEFAULT_POLL_MS,
  DEFAULT_WAIT_TIMEOUT_MS,
  describeTimeout,
  nextPollInterval,
  resolveWaitOptions,
  WAIT_DEFAULTS,
  WAIT_OPTION_KEYS,
  waitForTask,
} from "./wait.js";
export type { ResolvedWaitOptions, TimeoutContext, WaitDeps, WaitTarget } from "./wait.js";
export {
  BackpressureGateCore,
  DEFAULT_MAX_QUEUE_WAIT_MS,
  DEFAULT_QUEUE_POLL_INTERVAL_MS,
  MAX_GRANT,
  MAX_QUEUE_POLL_INTERVAL_MS,
  normalizeMaxQueueDepth,
  requireRoomNow,
  resolveGateTiming,
} from "./backpressure-gate.js";
export type { BackpressureGateDeps } from "./backpressure-gate.js";
export {
  envelopeForCtxFail,
  envelopeFromThrown,
  fallbackEnvelope,
  handlerTimeoutEnvelope,
  noHandlerEnvelope,
  unserializableResultEnvelope,
} from "./envelope.js";
export type { Failure } from "./envelope.js";
export { RETRY_BACKOFF_DEFAULTS, retryDelayMs } from "./backoff.js";
export { MAX_RETRY_DELAY_MS, normalizeRetryPolicy, policyRetryDelayMs, requireCapNotBelowBase } from "./retry-policy.js";
export type { GivenBackoff, NamedDuration, NormalizedRetryPolicy, PolicyDelay } from "./retry-policy.js";
export { defaultHeartbeatIntervalMs, WORKER_DEFAULTS } from "./worker-defaults.js";
export type { WorkerDefaults } from "./worker-defaults.js";
export { childLineage, requireGroupSupport, SUBMIT_OPTION_KEYS, submitInputOf } from "./submit-options.js";
export { typedSubmitRow } from "./key-conflict.js";
export type { ParentRow } from "./submit-options.js";
export { catchRejection, logSafely } from "./logger.js";
export { DEFAULT_BULK_LIMIT, nextBatchCursor } from "./bulk.js";
export { PURGE_OPTION_KEYS, requireRetryable, RETRY_OPTION_KEYS } from "./inputs.js";
export {
  formatTraceparent,
  parseTraceparent,
  requireTraceableMetadata,
  TRACE_CONTEXT_METADATA_KEY,
  traceCarrierOf,
  withoutTraceCarrier,
  withTraceCarrier,
} from "./trace-context.js";
export type { ReadTraceCarrier, TraceCarrier, TraceParent } from "./trace-context.js";
export { messageArrived, parkedOn } from "./steps.js";
/** The claim order as a comparator: a worker buffering a claim's rows (`prefetch`) runs them in it. */
export { compareClaimOrder } from "./rules.js";
