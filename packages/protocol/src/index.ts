/**
 * `@cairnq/protocol` — CairnQ protocol v1 as a pure library: statuses, the
 * task row, the state machine as data, key-conflict resolution, ids, the JSON
 * boundary, error envelopes and classes, retry backoff, and the `TaskStore`
 * contract. Nothing here performs I/O or starts a timer.
 *
 * @packageDocumentation
 */
export * from "./backoff.js";
export * from "./conflict.js";
export * from "./decide.js";
export * from "./envelope.js";
export * from "./errors.js";
export * from "./expr.js";
export * from "./ids.js";
export * from "./inputs.js";
export * from "./json.js";
export * from "./rules.js";
export * from "./statuses.js";
export * from "./store.js";
export * from "./task-def.js";
export * from "./task.js";
export * from "./version.js";
