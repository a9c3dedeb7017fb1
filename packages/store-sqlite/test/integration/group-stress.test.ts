import { eachSeedOnStores } from "@cairnq/test-support";
import { groupStressSeeds, runGroupStress } from "@cairnq/test-support/group-stress";
import { describe, expect, it } from "vitest";
import { openStore, tempFile } from "../helpers.js";

/** The seeds run by default; `CAIRNQ_TEST_GROUP_STRESS_SEEDS=1-50` explores. */
const SEEDS = [1, 4];
const seeds = groupStressSeeds(SEEDS);
/** Store instances claiming at once: 2, or `CAIRNQ_TEST_GROUP_STRESS_STORES`. */
const STORES = Number(process.env.CAIRNQ_TEST_GROUP_STRESS_STORES ?? 2);

describe("concurrent group claims from two stores on one file", () => {
  it("keep groupConcurrency and groupRateLimit exactly while settlements and submits interleave, and every task succeeds once", async () => {
    await eachSeedOnStores(seeds, () => {
      const file = tempFile();
      return Array.from({ length: STORES }, () => openStore(file));
    }, async (stores, seed) => {
      const report = await runGroupStress(stores, seed);
      expect(report.claims).toBeGreaterThanOrEqual(report.tasks);
      expect(report.peakRunning).toBeLessThanOrEqual(report.limits.groupConcurrency ?? Number.POSITIVE_INFINITY);
    });
  }, 60_000 * seeds.length);
});
