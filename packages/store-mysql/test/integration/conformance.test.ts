import { runConformance } from "@cairnq/conformance/vitest";
import { MySQLStore } from "@cairnq/store-mysql";
import { KIT_CASE_TIMEOUT_MS, MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { afterAll, beforeAll } from "vitest";

// The whole behavioral suite, through the kit's public entry, exactly as a
// third-party store would run it. One database for the file, migrated by the
// first case's store and emptied after every case (every CairnQ table but the
// ledger and the meta rows), so each case starts from an empty installation
// without paying for the migrations' DDL again.
const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("kit");
});
afterAll(async () => {
  await admin.dropDatabase("kit");
  await admin.close();
});

runConformance({
  name: "MySQLStore",
  caseTimeoutMs: KIT_CASE_TIMEOUT_MS,
  capabilities: { transactionalComplete: true, databaseClock: true, flowControl: true, schedules: true, completeRef: true, claimReprobe: true, claimWakeOnQueued: true, taskDoneWakeReads: true, durableSteps: true, queueHealth: true, groups: true },
  createStore: () => new MySQLStore(dsn, { max: 4 }),
  // A second store on the same database, for the cases that race two instances.
  createPeerStore: () => new MySQLStore(dsn, { max: 2 }),
  destroyStore: async (store) => {
    await store.close();
    await admin.emptyDatabase("kit");
  },
});
