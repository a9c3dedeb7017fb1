// Types of scripts/integration-lanes.mjs for cairnq's vitest config.

/** Files of packages/cairnq that run in the waits lane, relative to that package. */
export const WAIT_BOUND_FILES: readonly string[];
/** The environment variable that tells cairnq's vitest config which lane it runs. */
export const LANE_ENV: "CAIRNQ_INTEGRATION_LANE";
