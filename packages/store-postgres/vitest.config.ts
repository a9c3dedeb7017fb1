import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import { LANE_ENV, laneExclusions } from "../../scripts/integration-lanes.mjs";
import { sharedConfig } from "../../vitest.shared.ts";

// `pnpm test` runs the LISTEN-setup and cut-connection files and the conformance kits, which mostly wait, in the wait-bound lane
// (scripts/integration-lanes.mjs): in the package's own lane, CAIRNQ_INTEGRATION_LANE=rest leaves them out.
// Unset, every file runs.
const excluded = laneExclusions("@cairnq/store-postgres", process.env[LANE_ENV]);

export default mergeConfig(sharedConfig, defineConfig(excluded.length > 0 ? { test: { exclude: [...configDefaults.exclude, ...excluded] } } : {}));
