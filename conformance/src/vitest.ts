/**
 * `@cairnq/conformance/vitest`: the suite pre-bound to vitest's
 * `describe`/`it`/`expect`. vitest is an optional peer dependency: only this
 * entry imports it.
 *
 * @packageDocumentation
 */
import type { TaskStore } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import type { ConformanceSuite, ConformanceSuiteOptions } from "./suite.js";
import { defineConformanceSuite } from "./suite.js";

/** {@link ConformanceSuiteOptions} without the runner, which this entry supplies. */
export type RunConformanceOptions<S extends TaskStore = TaskStore> = Omit<ConformanceSuiteOptions<S>, "runner">;

/**
 * Registers the conformance suite with vitest. Call it at the top level of a
 * test file.
 *
 * @example
 * ```ts
 * import { runConformance } from "@cairnq/conformance/vitest";
 * import { MyStore } from "../src/index.js";
 *
 * runConformance({ name: "MyStore", createStore: (ctx) => new MyStore(`${ctx.tempDir}/q.db`) });
 * ```
 */
export function runConformance<S extends TaskStore>(options: RunConformanceOptions<S>): ConformanceSuite {
  return defineConformanceSuite({ ...options, runner: { describe, it, expect } });
}

export type { ConformanceContext, ConformanceSuite, ConformanceSuiteOptions, SkippedCase } from "./suite.js";
