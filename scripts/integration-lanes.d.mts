// Types of scripts/integration-lanes.mjs for cairnq's vitest config.

/** The packages of the first lane of one package at a time; every other package runs in the second. */
export const FIRST_LANE: readonly string[];
/** Files of packages/cairnq that run in the waits lane, relative to that package. */
export const WAIT_BOUND_FILES: readonly string[];
/** Files of packages/cairnq that run alone once the lanes are done, relative to that package. */
export const ALONE_FILES: readonly string[];
/** The environment variable that tells cairnq's vitest config which lane it runs. */
export const LANE_ENV: "CAIRNQ_INTEGRATION_LANE";
