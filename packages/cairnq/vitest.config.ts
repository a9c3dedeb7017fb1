import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import { LANE_ENV, laneExclusions } from "../../scripts/integration-lanes.mjs";
import { sharedConfig } from "../../vitest.shared.ts";

// `pnpm test` runs the wait-bound integration files in a lane of their own
// (scripts/integration-lanes.mjs), and the CPU-bound fleet alone after the lanes: in
// the other lane, CAIRNQ_INTEGRATION_LANE=rest leaves both out. Unset, every file runs.
const excluded = laneExclusions("cairnq", process.env[LANE_ENV]);

export default mergeConfig(sharedConfig, defineConfig(excluded.length > 0 ? { test: { exclude: [...configDefaults.exclude, ...excluded] } } : {}));
