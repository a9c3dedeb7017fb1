// The integration tier's two lanes in `pnpm test` (scripts/test.mjs, docs/testing.md).
//
// Most integration suites time leases, heartbeats and page updates against the
// clock and share the 2 cores badly, so they run one package at a time. A few
// of cairnq's suites spend nearly all of their time waiting — for connections
// gone dark, a restarted server, a process to exit — and use a few seconds of
// CPU over a minute: those run in a lane of their own beside the rest, where
// their bounds (seconds to tens of seconds) leave room for a busy core.
//
// A file listed here runs in the `waits` lane only; every other file of
// cairnq's test/integration/ runs in the `rest` lane (the package's vitest
// config leaves these out when CAIRNQ_INTEGRATION_LANE=rest). A developer's
// `pnpm --filter cairnq test:integration` runs them all.

/** Files of packages/cairnq that run in the waits lane, relative to that package. */
export const WAIT_BOUND_FILES = [
  "test/integration/postgres-half-open.test.ts",
  "test/integration/postgres-restart.test.ts",
];

/** The environment variable that tells cairnq's vitest config which lane it runs. */
export const LANE_ENV = "CAIRNQ_INTEGRATION_LANE";
