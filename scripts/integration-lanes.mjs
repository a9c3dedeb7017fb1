// The integration tier's two lanes in `pnpm test` (scripts/test.mjs, docs/testing.md).
//
// Most integration suites time leases, heartbeats and page updates against the
// clock and share the 2 cores badly, so they run one package at a time. A few
// of cairnq's suites spend nearly all of their time waiting — for connections
// gone dark, a restarted server, a process to exit — and use a few seconds of
// CPU over a minute: those run in a lane of their own beside the rest, where
// their bounds (seconds to tens of seconds) leave room for a busy core.
//
// The opposite kind runs alone, after the lanes: a suite that keeps both cores
// busy for a minute and holds a bound on latency, which the other lanes would
// break (the PgBouncer fleet: 21 processes; its idle pickup by polling must
// stay within two poll intervals, and beside the other lanes its p99 reached
// 1.8 s against 1 s), or that takes nearly its whole timeout even alone (the
// durable-steps kill test on Postgres: ~20 s of its file's 20-22 s against a
// 20 s test timeout; beside the other lanes it timed out once in four runs).
//
// A file listed here runs in the `waits` lane or alone only; every other file
// of its package's test/integration/ runs in the package's lane (the package's
// vitest config leaves these out when CAIRNQ_INTEGRATION_LANE=rest). A
// developer's `pnpm --filter <package> test:integration` runs them all.

/**
 * The packages of the first of the two lanes of one package at a time (`pnpm test` runs every other
 * package's test:integration in the second, beside it, on databases of its own): cairnq, and enough
 * small packages that the lanes take about as long as each other. Measured in a gate at 2f50dc8 (load 17,
 * helpers working): cairnq 4m46s, store-mysql 40 s and example-express 9 s against the second lane's 7m20s
 * (store-postgres 4m15s — the kit twice, direct and through PgBouncer —, the dashboard 1m29s, worker 28 s,
 * retention 27 s, store-sqlite 21 s, the rest 19 s). With worker and retention here too, the next gate
 * (fdcd51f) ended the first lane at 14:27 and the second at 13:10 (cairnq 5m22s this time): worker alone
 * moved, the two end within seconds of each other. With the conformance kits in the wait-bound lane
 * (WAIT_BOUND_FILES: 3.5 minutes out of store-postgres, 1 out of store-mysql), worker and example-express
 * went back to the second lane: by the gate at 944eb1e, cairnq 6m22s and store-mysql without its kit
 * about 1m10s, against the second lane's 6m27s without the kits plus worker 36 s and example-express 16 s.
 * By the gates of session 25 (f8a796b, 13m51s–14m14s quiet) the first lane held the tier's end: cairnq 6m22s and
 * store-mysql 1m10s against the second lane's 6 minutes and the wait-bound lane's 4.5. Store-mysql's whole
 * integration tier went to the wait-bound lane then (WAITS_LANE_PACKAGES), and with it three of cairnq's MariaDB process suites
 * (WAIT_BOUND_FILES), once the Postgres kits no longer paid a JIT compile for every claim over two queues.
 */
export const FIRST_LANE = ["cairnq"];

/**
 * Files that run in the waits lane, by package, relative to that package; the lane runs the packages one
 * after another, on databases of its own (`pnpm test` makes `<the run's database>_waits` on both servers;
 * without them, the run's own), each file in schemas or databases of its own.
 * store-postgres's first three are the LISTEN connection's setup bounds and the connections cut under
 * a store: measured alone, 17.8 s of wall time for 2.2 s of CPU (listen-setup), 6.1 for 1.6 (listen-check), 8.8
 * for 1.8 (postgres-connection); in the second lane they held its end — and the suites that run alone — back
 * by about half a minute. The conformance kits wait out leases, delays and rate windows case after case: on
 * Postgres, 55 s of wall time for 13.6 s of CPU (user and sys) measured alone, and 115 s direct and 97 s through
 * PgBouncer in the second lane of a gate at 944eb1e, where together they were more than half of store-postgres's
 * 6 minutes; MySQL's took 56 s of store-mysql's 2m08s in the first lane (store-mysql's whole tier now runs in this lane:
 * WAITS_LANE_PACKAGES). Here they leave the two package lanes about 3.5 minutes shorter.
 */
export const WAIT_BOUND_FILES = {
  cairnq: [
    "test/integration/postgres-half-open.test.ts",
    "test/integration/postgres-restart.test.ts",
    "test/integration/processes-mysql.test.ts",
    "test/integration/steps-fuzz-mysql.test.ts",
    "test/integration/statement-limits-mysql.test.ts",
  ],
  "@cairnq/store-postgres": [
    "test/integration/listen-setup.test.ts",
    "test/integration/listen-check.test.ts",
    "test/integration/postgres-connection.test.ts",
    "test/integration/conformance.test.ts",
    "test/integration/pgbouncer-conformance.test.ts",
  ],
};

/**
 * Packages whose whole integration tier runs in the waits lane (after WAIT_BOUND_FILES's), and in neither package
 * lane: store-mysql, whose suites wait on MariaDB's statements and locks far more than they compute (its kit alone
 * was 56 s of its 2m08s).
 */
export const WAITS_LANE_PACKAGES = ["@cairnq/store-mysql"];

/**
 * The exclusions of a package's vitest config for `CAIRNQ_INTEGRATION_LANE` (throws on any value but "rest"):
 * in the `rest` lane, the package's wait-bound files and (cairnq) the ones that run alone; unset, none.
 * @param {string} pkg - The package's name.
 * @param {string | undefined} lane - The variable's value.
 * @returns {string[]}
 */
export function laneExclusions(pkg, lane) {
  if (lane === undefined) return [];
  if (lane !== "rest") throw new Error(`${LANE_ENV}=${lane}: the only lane a package's config selects is "rest"`);
  return [...(WAIT_BOUND_FILES[pkg] ?? []), ...(pkg === "cairnq" ? ALONE_FILES : [])];
}

/** Files of packages/cairnq that run alone once the lanes are done, relative to that package. */
export const ALONE_FILES = ["test/integration/pgbouncer-fleet.test.ts", "test/integration/steps-processes-postgres.test.ts"];

/** The environment variable that tells cairnq's vitest config which lane it runs. */
export const LANE_ENV = "CAIRNQ_INTEGRATION_LANE";
