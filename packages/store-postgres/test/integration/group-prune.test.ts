/**
 * A group claim deletes its name's idle group rows once the store's clock has
 * passed the prune interval, keeps those of groups with running or waiting
 * tasks, and recreates a pruned group's row when a retried task wakes it (the
 * scenario: `runGroupPrune` in test-support). The interval is read on the
 * process clock (`Date.now`), which the test moves; leases keep the database's.
 */
import { GROUP_PRUNE_EXPECTED, prunedSummary, runGroupPrune } from "@cairnq/test-support";
import type { GroupRow } from "@cairnq/test-support";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openStore, pgDsn, q, schemaName } from "../helpers.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the prune of idle group rows on Postgres", () => {
  it("deletes the idle rows past the interval, keeps the held ones, and a retried task of a pruned group runs under its limit", async () => {
    const schema = schemaName();
    const store = openStore(pgDsn(), { schema });
    const realNow = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + offset);
    const groupRows = (name: string): Promise<GroupRow[]> =>
      q<GroupRow>(`SELECT group_key AS "group", active FROM "${schema}".cairnq_ext_groups WHERE name = $1 ORDER BY group_key`, [name]);
    const report = await runGroupPrune(store, { groupRows, advance: (ms) => (offset += ms) });
    expect(prunedSummary(report)).toEqual(GROUP_PRUNE_EXPECTED);
  }, 60_000);
});
