/**
 * `@cairnq/protocol` — CairnQ protocol v1 as a pure library: statuses, the
 * task row, the state machine as data, key-conflict resolution, ids, the JSON
 * boundary, error envelopes and classes, retry backoff, the `TaskStore`
 * contract, and the SDK rules every package shares: the §7 wait loop, the
 * §5.6 backpressure gate, the §8.1 worker defaults, submit options and the
 * structural logger. Nothing here performs I/O of its own or starts a timer:
 * the wait loop and the gate run over a store and a sleep they are given.
 *
 * @packageDocumentation
 */
export * from "./backoff.js";
export * from "./backpressure-gate.js";
export * from "./bulk.js";
export * from "./conflict.js";
export * from "./decide.js";
export * from "./envelope.js";
export * from "./errors.js";
export * from "./expr.js";
export * from "./ids.js";
export * from "./inputs.js";
export * from "./json.js";
export * from "./logger.js";
export * from "./rules.js";
export * from "./statuses.js";
export * from "./store.js";
export * from "./submit-options.js";
export * from "./task-def.js";
export * from "./task.js";
export * from "./version.js";
export * from "./wait.js";
export * from "./worker-defaults.js";
