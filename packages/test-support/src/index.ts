/**
 * Test helpers shared by the CairnQ packages and examples. Private: never
 * published, never versioned; packages list it as a `workspace:*`
 * devDependency.
 */
export { CHROMIUM, CHROMIUM_ARGS, chromiumLaunchOptions, ensureChromium } from "./chromium.js";
export type { AdminOptions } from "./postgres.js";
export { PG_DSN_VARIABLE, PgAdmin, connectAdmin, pgDsn, randomSchemaName } from "./postgres.js";
export { MySQLAdmin, mysqlDsn, withDatabase } from "./mysql.js";
export type { PgBouncer, PgBouncerOptions } from "./pgbouncer.js";
export { PGBOUNCER_VARIABLE, findPgBouncer, startPgBouncer } from "./pgbouncer.js";
export type { ChildEnv, SpawnFixtureOptions, Started } from "./processes.js";
export { REGISTER_SOURCES, exited, fixtureSpawner, killChildren, nextLine, onGo, spawnFixture, startNode } from "./processes.js";
export type { TimerTracker } from "./timers.js";
export { settledWithin, trackTimers } from "./timers.js";
export type { PrometheusSamples } from "./prometheus.js";
export { parsePrometheus } from "./prometheus.js";
export type { GroupLeaseReport } from "./group-stress-leases.js";
export { groupLeaseStressSeeds, runGroupLeaseStress } from "./group-stress-leases.js";
export { eachSeedOnStores } from "./seeded.js";
export { KIT_CASE_TIMEOUT_MS } from "./kit.js";
export type { KeyedIssueOrderReport } from "./keyed-issue-order.js";
export { runKeyedIssueOrder } from "./keyed-issue-order.js";
export type { StoreWithKysely, ViewBesideWaitingReport } from "./view-beside-waiting.js";
export { runViewBesideWaitingSubmit } from "./view-beside-waiting.js";
export type { GroupReadsReport } from "./group-reads-no-ddl.js";
export { GROUP_TABLE_NAMES, RATE_LIMITS_TABLE_NAME, READ_TABLE_NAMES, runGroupReadsWithoutTables } from "./group-reads-no-ddl.js";
export { firstSubmitFailure } from "./first-submit-failure.js";
export type { GroupPruneHooks, GroupPruneReport, GroupRow } from "./group-prune.js";
export { GROUP_PRUNE_EXPECTED, IDLE_GROUPS, PRUNE_NAME, prunedSummary, runGroupPrune } from "./group-prune.js";
