/**
 * `explain` and per-group stats on a database without the group tables
 * (and the rate-window read, without cairnq_ext_rate_limits) answer as for
 * empty tables and create none of them (only a grouped submit
 * or claim does).
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { GROUP_TABLE_NAMES, READ_TABLE_NAMES, MySQLAdmin, mysqlDsn, runGroupReadsWithoutTables } from "@cairnq/test-support";
import { CompiledQuery } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("groupreads");
});
afterAll(async () => {
  await admin.dropDatabase("groupreads");
  await admin.close();
});

describe("group reads on a MySQL database without the group tables", () => {
  it("answer as for empty tables, create nothing, and see the rows once a grouped submit created the tables", async () => {
    const reader = new MySQLStore(dsn, { max: 2 });
    const writer = new MySQLStore(dsn, { max: 2 });
    try {
      const names = READ_TABLE_NAMES.map((name) => `'${name}'`).join(", ");
      const tables = async (): Promise<string[]> =>
        (await reader.db.executeQuery<{ name: string }>(CompiledQuery.raw(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (${names})`))).rows.map((row) => String(row.name));
      const report = await runGroupReadsWithoutTables(reader, writer, tables);
      expect(report.before).toEqual({ taskGroup: null, groupStats: [], rateWindows: { name: null, group: null }, tables: [] });
      expect(report.after).toEqual({ taskGroup: { group: "g1", running: 0, queued: 1, groupConcurrency: null }, groupStats: [{ group: "g1", queued: 1, running: 0 }], rateWindows: { name: null, group: null }, tables: [...GROUP_TABLE_NAMES].sort() });
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});
