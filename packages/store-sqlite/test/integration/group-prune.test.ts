/**
 * A group claim deletes its name's idle group rows once the store's clock has
 * passed the prune interval, keeps those of groups with running or waiting
 * tasks, and recreates a pruned group's row when a retried task wakes it (the
 * scenario: `runGroupPrune` in test-support).
 */
import Database from "better-sqlite3";
import { GROUP_PRUNE_EXPECTED, prunedSummary, runGroupPrune } from "@cairnq/test-support";
import type { GroupRow } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { openStore, tempFile } from "../helpers.js";

describe("the prune of idle group rows on SQLite", () => {
  it("deletes the idle rows past the interval, keeps the held ones, and a retried task of a pruned group runs under its limit", async () => {
    const file = tempFile();
    let offset = 0;
    const store = openStore(file, { clock: () => Date.now() + offset });
    const groupRows = (name: string): Promise<GroupRow[]> => {
      const db = new Database(file, { readonly: true });
      try {
        return Promise.resolve(db.prepare("SELECT group_key AS \"group\", active FROM cairnq_ext_groups WHERE name = ? ORDER BY group_key").all(name) as GroupRow[]);
      } finally {
        db.close();
      }
    };
    const report = await runGroupPrune(store, { groupRows, advance: (ms) => (offset += ms) });
    expect(prunedSummary(report)).toEqual(GROUP_PRUNE_EXPECTED);
  });
});
