import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import { LANE_ENV, laneExclusions } from "../../scripts/integration-lanes.mjs";
import { sharedConfig } from "../../vitest.shared.ts";

// `pnpm test` runs the conformance kit, which mostly waits, in the wait-bound lane (scripts/integration-lanes.mjs):
// in the package's own lane, CAIRNQ_INTEGRATION_LANE=rest leaves it out. Unset, every file runs.
const excluded = laneExclusions("@cairnq/store-mysql", process.env[LANE_ENV]);

export default mergeConfig(sharedConfig, defineConfig(excluded.length > 0 ? { test: { exclude: [...configDefaults.exclude, ...excluded] } } : {}));
