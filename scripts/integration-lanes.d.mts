// Types of scripts/integration-lanes.mjs for the packages' vitest configs.

/** The packages of the first lane of one package at a time; every other package runs in the second. */
export const FIRST_LANE: readonly string[];
/** Files that run in the waits lane, by package name, relative to that package. */
export const WAIT_BOUND_FILES: Readonly<Record<string, readonly string[]>>;
/** Packages whose whole integration tier runs in the waits lane, after WAIT_BOUND_FILES's. */
export const WAITS_LANE_PACKAGES: readonly string[];
/** The exclusions of a package's vitest config for the lane named by `CAIRNQ_INTEGRATION_LANE` (unset: none). */
export function laneExclusions(pkg: string, lane: string | undefined): string[];
/** Files of packages/cairnq that run alone once the lanes are done, relative to that package. */
export const ALONE_FILES: readonly string[];
/** The environment variable that tells a package's vitest config which lane it runs. */
export const LANE_ENV: "CAIRNQ_INTEGRATION_LANE";
