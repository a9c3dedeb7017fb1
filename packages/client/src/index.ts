/**
 * `@cairnq/client` — the CairnQ client: submit tasks into a `TaskStore`,
 * read them, wait for them or `call` them, cancel, retry and purge them, and
 * gate submits on queue depth. Depends only on the `TaskStore` contract of
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
export type { BulkOptions, CairnQOptions, CallOptions, PayloadArgs, PurgeOptions, RetentionHook, RetryManyOptions } from "./cairnq.js";
export { BackpressureGate } from "./backpressure-gate.js";
export { DEFAULT_WATCH_POLL_MS } from "./watch.js";
export type { StopWatching, WatchOptions, WatchSignal } from "./watch.js";
// Rules shared with the worker live once in @cairnq/protocol; the client keeps their public names.
export {
  DEFAULT_MAX_POLL_MS,
  DEFAULT_MAX_QUEUE_WAIT_MS,
  DEFAULT_POLL_MS,
  DEFAULT_QUEUE_POLL_INTERVAL_MS,
  DEFAULT_WAIT_TIMEOUT_MS,
  MAX_GRANT,
  MAX_QUEUE_POLL_INTERVAL_MS,
  nextPollInterval,
} from "@cairnq/protocol";
export type { BackpressureGateOptions, Logger, LogLevel, MaxQueueDepth, SubmitOptions, SubmitOutcome, TaskFilter, WaitOptions } from "@cairnq/protocol";
