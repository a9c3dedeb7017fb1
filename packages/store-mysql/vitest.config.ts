import { sharedConfig } from "../../vitest.shared.ts";

// `pnpm test` runs this package's whole integration tier in the wait-bound lane (WAITS_LANE_PACKAGES in
// scripts/integration-lanes.mjs), and leaves it out of both package lanes: nothing to exclude here.
export default sharedConfig;
