/**
 * `@cairnq/conformance` — the behavioral suite every CairnQ `TaskStore`
 * passes: protocol v1 §14's scenarios plus the rest of the store contract,
 * run against a fresh store per case with the §4 invariants checked on every
 * row read. Runner-agnostic; `@cairnq/conformance/vitest` is pre-bound to
 * vitest.
 *
 * @packageDocumentation
 */
export { defineConformanceSuite, DEFAULT_STORE_CAPABILITIES } from "./suite.js";
export type { ConformanceContext, ConformanceSuite, ConformanceSuiteOptions, SkippedCase } from "./suite.js";
export type { ConformanceRunner, Expect, Matchers } from "./runner.js";
export { CONFORMANCE_CASES } from "./cases/index.js";
export type { ConformanceCase } from "./case.js";
export { CaseContext, ConformanceFailure } from "./case.js";
export { assertInvariants, assertTaskRef, InvariantViolation, CLOCK_SLACK_MS } from "./invariants.js";
export { CheckedStore } from "./checked-store.js";
export type { Observations } from "./checked-store.js";
export { MemoryStore } from "./memory-store.js";
