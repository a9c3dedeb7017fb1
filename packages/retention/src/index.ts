/**
 * `@cairnq/retention` — deletes finished CairnQ tasks on a schedule, in
 * bounded batches, through any `TaskStore`'s `purge` (protocol v1 §5.9).
 *
 * @example
 * ```ts
 * import { RetentionSweeper } from "@cairnq/retention";
 *
 * const sweeper = new RetentionSweeper(store, { olderThanMs: 7 * 24 * 3_600_000 });
 * sweeper.start();
 * // on shutdown, before store.close():
 * await sweeper.stop();
 * ```
 *
 * @packageDocumentation
 */
export type { RetentionPolicy, RetentionRule, RetentionStatusMap } from "./retention-rules.js";
export type { RetentionErrorInfo, RetentionOptions, RetentionStore, RetentionSweeperOptions } from "./retention-sweeper.js";
export { RetentionSweeper } from "./retention-sweeper.js";
// The structural logger type of the sweeper's options, under its @cairnq/protocol name.
export type { Logger, LogLevel } from "@cairnq/protocol";
