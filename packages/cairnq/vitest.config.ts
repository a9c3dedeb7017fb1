import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import { ALONE_FILES, LANE_ENV, WAIT_BOUND_FILES } from "../../scripts/integration-lanes.mjs";
import { sharedConfig } from "../../vitest.shared.ts";

// `pnpm test` runs the wait-bound integration files in a lane of their own
// (scripts/integration-lanes.mjs), and the CPU-bound fleet alone after the lanes: in
// the other lane, CAIRNQ_INTEGRATION_LANE=rest leaves both out. Unset, every file runs.
const lane = process.env[LANE_ENV];
if (lane !== undefined && lane !== "rest") throw new Error(`${LANE_ENV}=${lane}: the only lane this config selects is "rest"`);

export default mergeConfig(sharedConfig, defineConfig(lane === "rest" ? { test: { exclude: [...configDefaults.exclude, ...WAIT_BOUND_FILES, ...ALONE_FILES] } } : {}));
