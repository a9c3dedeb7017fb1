/**
 * A group claim deletes its name's idle group rows once the store's clock has
 * passed the prune interval, keeps those of groups with running or waiting
 * tasks, and recreates a pruned group's row when a retried task wakes it (the
 * scenario: `runGroupPrune` in test-support). The interval is read on the
 * process clock (`Date.now`), which the test moves; leases keep the database's.
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { GROUP_PRUNE_EXPECTED, MySQLAdmin, mysqlDsn, prunedSummary, runGroupPrune } from "@cairnq/test-support";
import type { GroupRow } from "@cairnq/test-support";
import { CompiledQuery } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("groupprune");
});
afterAll(async () => {
  await admin.dropDatabase("groupprune");
  await admin.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("the prune of idle group rows on MySQL", () => {
  it("deletes the idle rows past the interval, keeps the held ones, and a retried task of a pruned group runs under its limit", async () => {
    const store = new MySQLStore(dsn, { max: 2 });
    try {
      const realNow = Date.now.bind(Date);
      let offset = 0;
      vi.spyOn(Date, "now").mockImplementation(() => realNow() + offset);
      const groupRows = async (name: string): Promise<GroupRow[]> =>
        (await store.db.executeQuery<GroupRow>(CompiledQuery.raw("SELECT group_key AS `group`, active FROM cairnq_ext_groups WHERE name = ? ORDER BY group_key", [name]))).rows;
      const report = await runGroupPrune(store, { groupRows, advance: (ms) => (offset += ms) });
      expect(prunedSummary(report)).toEqual(GROUP_PRUNE_EXPECTED);
    } finally {
      await store.close();
    }
  }, 60_000);
});
