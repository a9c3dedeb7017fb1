/**
 * A store's first use of an extension feature on a database that already
 * has the feature's tables and indexes: a catalog read, and no write
 * transaction (`StoreExtensions.ensure`). Only a database missing one of
 * them gets the DDL.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openStore, tempFile } from "./helpers.js";
import { settledWithin } from "@cairnq/test-support";

/** The names of the group tables' indexes in `file`. */
function groupIndexes(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'cairnq_ext_%group%' AND sql IS NOT NULL ORDER BY name").all() as { name: string }[];
    return rows.map((row) => row.name);
  } finally {
    db.close();
  }
}

/** A database whose group tables a store created (its first grouped submit), closed again. */
async function groupedDatabase(): Promise<string> {
  const file = tempFile();
  const first = openStore(file);
  await first.connect();
  await first.submit({ name: "g", group: "a" });
  await first.close();
  return file;
}

describe("extension tables on SQLite (extension-tables.ts, extension-catalog.ts)", () => {
  it("a fresh store's first group read takes no write lock when the group tables are all there: it completes while another connection holds BEGIN IMMEDIATE", async () => {
    const file = await groupedDatabase();
    // A store that asked for the write lock would wait out its busy budget and fail (before the catalog check it did).
    const store = openStore(file, { busyTimeoutMs: 3_000 });
    await store.connect();
    const writer = new Database(file);
    try {
      writer.exec("BEGIN IMMEDIATE");
      expect(await settledWithin(store.groupStats("g"), 10_000)).toBe("ok");
      expect(await store.groupStats("g")).toEqual([{ group: "a", queued: 1, running: 0 }]);
    } finally {
      writer.exec("ROLLBACK");
      writer.close();
    }
  });

  it("a database missing one of the group indexes gets it back on a fresh store's first group use", async () => {
    const file = await groupedDatabase();
    const before = groupIndexes(file);
    expect(before).toContain("cairnq_ext_groups_served_idx");
    const db = new Database(file);
    db.exec("DROP INDEX cairnq_ext_groups_served_idx");
    db.close();
    expect(groupIndexes(file)).not.toContain("cairnq_ext_groups_served_idx");

    const store = openStore(file);
    await store.connect();
    await store.submit({ name: "g", group: "c" }); // a group write: reads run no DDL
    expect(groupIndexes(file)).toEqual(before);
  });

  it("a database that still has the old walk index gets it dropped on a fresh store's first group use", async () => {
    const file = await groupedDatabase();
    const before = groupIndexes(file);
    const db = new Database(file);
    db.exec("CREATE INDEX cairnq_ext_task_groups_walk_idx ON cairnq_ext_task_groups (name, state, group_key, priority DESC, task_id)");
    db.close();

    const store = openStore(file);
    await store.connect();
    await store.submit({ name: "g", group: "c" }); // a group write: reads run no DDL
    expect(groupIndexes(file)).toEqual(before);
  });

  it("a database whose rate-claims and group tables an earlier release created (no cairnq_ext_rate_limits): reads answer null and create nothing; the next rate-limited claims add the table and record their limits", async () => {
    const file = await groupedDatabase();
    const earlier = openStore(file);
    await earlier.connect();
    await earlier.submit({ name: "rl" });
    const flowControl = { rl: { rateLimit: { max: 1, perMs: 3_600_000 } }, g: { groupRateLimit: { max: 1, perMs: 3_600_000 } } };
    expect(await earlier.claim({ queues: ["default"], names: ["rl", "g"], limit: 10, workerId: "w", leaseMs: 60_000, flowControl })).toHaveLength(2);
    await earlier.close();
    const db = new Database(file);
    db.exec("DROP TABLE cairnq_ext_rate_limits");
    db.close();
    const tables = (): string[] => {
      const reader = new Database(file, { readonly: true });
      try {
        return (reader.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cairnq_ext_rate%' ORDER BY name").all() as { name: string }[]).map((row) => row.name);
      } finally {
        reader.close();
      }
    };
    expect(tables()).toEqual(["cairnq_ext_rate_claims"]);

    const store = openStore(file);
    await store.connect();
    await store.submit({ name: "g", group: "a" });
    expect(await store.rateWindows("rl", null)).toEqual({ name: null, group: null });
    expect(await store.rateWindows("g", "a")).toEqual({ name: null, group: null });
    expect(tables()).toEqual(["cairnq_ext_rate_claims"]);
    await store.submit({ name: "rl" });
    await store.submit({ name: "g", group: "b" });
    expect(await store.claim({ queues: ["default"], names: ["rl", "g"], limit: 10, workerId: "w", leaseMs: 60_000, flowControl: { ...flowControl, rl: { rateLimit: { max: 2, perMs: 3_600_000 } } } })).toHaveLength(2);
    expect(tables()).toEqual(["cairnq_ext_rate_claims", "cairnq_ext_rate_limits"]);
    expect((await store.rateWindows("rl", null)).name).toMatchObject({ limit: { max: 2, perMs: 3_600_000 }, claims: 2 });
    expect((await store.rateWindows("g", "a")).group).toMatchObject({ limit: { max: 1, perMs: 3_600_000 }, claims: 1 });
    await store.close();
  });
});
