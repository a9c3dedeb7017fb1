import { groupStressSeeds, runGroupStress } from "@cairnq/test-support/group-stress";
import { describe, expect, it } from "vitest";
import { openStore, pgDsn, schemaName } from "../helpers.js";

/** The seeds run by default; `CAIRNQ_TEST_GROUP_STRESS_SEEDS=1-50` explores. */
const SEEDS = [1, 4];
const seeds = groupStressSeeds(SEEDS);
/** Store instances claiming at once: 4, or `CAIRNQ_TEST_GROUP_STRESS_STORES`. */
const STORES = Number(process.env.CAIRNQ_TEST_GROUP_STRESS_STORES ?? 4);

describe("concurrent group claims from four Postgres stores", () => {
  it("keep groupConcurrency and groupRateLimit exactly while settlements and submits interleave, and every task succeeds once", async () => {
    for (const seed of seeds) {
      const schema = schemaName("cq_gstress");
      const stores = Array.from({ length: STORES }, () => openStore(pgDsn(), { schema, max: 4 }));
      try {
        for (const store of stores) await store.connect();
        const report = await runGroupStress(stores, seed);
        expect(report.claims).toBeGreaterThanOrEqual(report.tasks);
        expect(report.peakRunning).toBeLessThanOrEqual(report.limits.groupConcurrency ?? Number.POSITIVE_INFINITY);
      } finally {
        // Closed per seed (the helpers close them again after the test), so many seeds never pile up connections.
        for (const store of stores) await store.close();
      }
    }
  }, 60_000 * seeds.length);
});
