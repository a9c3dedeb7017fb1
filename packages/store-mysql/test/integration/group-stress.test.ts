import { MySQLStore } from "@cairnq/store-mysql";
import { eachSeedOnStores, MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { groupStressSeeds, runGroupStress } from "@cairnq/test-support/group-stress";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** The seeds run by default; `CAIRNQ_TEST_GROUP_STRESS_SEEDS=1-50` explores. */
const SEEDS = [1, 4];
const seeds = groupStressSeeds(SEEDS);
/** Store instances claiming at once: 4, or `CAIRNQ_TEST_GROUP_STRESS_STORES`. */
const STORES = Number(process.env.CAIRNQ_TEST_GROUP_STRESS_STORES ?? 4);
const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("gstress");
});
afterAll(async () => {
  await admin.dropDatabase("gstress");
  await admin.close();
});

describe("concurrent group claims from four MySQL stores", () => {
  it("keep groupConcurrency and groupRateLimit exactly while settlements and submits interleave, and every task succeeds once", async () => {
    await eachSeedOnStores(seeds, () => Array.from({ length: STORES }, () => new MySQLStore(dsn, { max: 4 })), async (stores, seed) => {
      const report = await runGroupStress(stores, seed);
      expect(report.claims).toBeGreaterThanOrEqual(report.tasks);
      expect(report.peakRunning).toBeLessThanOrEqual(report.limits.groupConcurrency ?? Number.POSITIVE_INFINITY);
    });
  }, 60_000 * seeds.length);
});
