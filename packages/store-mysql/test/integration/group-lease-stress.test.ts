import { MySQLStore } from "@cairnq/store-mysql";
import { eachSeedOnStores, groupLeaseStressSeeds, MySQLAdmin, mysqlDsn, runGroupLeaseStress } from "@cairnq/test-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** The seeds run by default; `CAIRNQ_TEST_GROUP_LEASE_SEEDS=1-50` explores. */
const SEEDS = [1, 2];
const seeds = groupLeaseStressSeeds(SEEDS);
/** Store instances claiming at once: 3, or `CAIRNQ_TEST_GROUP_STRESS_STORES`. */
const STORES = Number(process.env.CAIRNQ_TEST_GROUP_STRESS_STORES ?? 3);
const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("glease");
});
afterAll(async () => {
  await admin.dropDatabase("glease");
  await admin.close();
});

describe("concurrent group claims from three MySQL stores, with leases that run out and claims without group limits", () => {
  it("recover abandoned tasks, refuse their holders' late settlements, free their groups' slots, and keep groupConcurrency counting the unlimited claims' tasks", async () => {
    await eachSeedOnStores(seeds, () => Array.from({ length: STORES }, () => new MySQLStore(dsn, { max: 4 })), async (stores, seed) => {
      const report = await runGroupLeaseStress(stores, seed);
      expect(report.recovered + report.recoveredFailed).toBeGreaterThan(0);
      expect(report.unlimitedClaims).toBeGreaterThan(0);
      expect(report.peakRunning).toBeLessThanOrEqual(report.limits.groupConcurrency ?? Number.POSITIVE_INFINITY);
    });
  }, 60_000 * seeds.length);
});
