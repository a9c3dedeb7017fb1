/**
 * `explain` and per-group stats on a database without the group tables
 * (and the rate-window read, without cairnq_ext_rate_limits) answer as for
 * empty tables and create none of them (only a grouped submit
 * or claim does).
 */
import Database from "better-sqlite3";
import { GROUP_TABLE_NAMES, READ_TABLE_NAMES, runGroupReadsWithoutTables } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { openStore, tempFile } from "../helpers.js";

describe("group reads on a SQLite database without the group tables", () => {
  it("answer as for empty tables, create nothing, and see the rows once a grouped submit created the tables", async () => {
    const file = tempFile();
    const reader = openStore(file);
    const writer = openStore(file);
    const tables = (): Promise<string[]> => {
      const db = new Database(file, { readonly: true });
      try {
        const rows = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (${READ_TABLE_NAMES.map(() => "?").join(", ")})`).all(...READ_TABLE_NAMES) as { name: string }[];
        return Promise.resolve(rows.map((row) => row.name));
      } finally {
        db.close();
      }
    };
    const report = await runGroupReadsWithoutTables(reader, writer, tables);
    expect(report.before).toEqual({ taskGroup: null, groupStats: [], rateWindows: { name: null, group: null }, tables: [] });
    expect(report.after).toEqual({ taskGroup: { group: "g1", running: 0, queued: 1, groupConcurrency: null }, groupStats: [{ group: "g1", queued: 1, running: 0 }], rateWindows: { name: null, group: null }, tables: [...GROUP_TABLE_NAMES].sort() });
  });
});
