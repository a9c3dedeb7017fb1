/**
 * `explain` and per-group stats on a database without the group tables
 * (and the rate-window read, without cairnq_ext_rate_limits) answer as for
 * empty tables and create none of them (only a grouped submit
 * or claim does).
 */
import { GROUP_TABLE_NAMES, READ_TABLE_NAMES, runGroupReadsWithoutTables } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";
import { openStore, pgDsn, q, schemaName } from "../helpers.js";

describe("group reads on a Postgres database without the group tables", () => {
  it("answer as for empty tables, create nothing, and see the rows once a grouped submit created the tables", async () => {
    const schema = schemaName();
    const reader = openStore(pgDsn(), { schema });
    const writer = openStore(pgDsn(), { schema });
    const tables = async (): Promise<string[]> =>
      (await q<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename = ANY($2)", [schema, [...READ_TABLE_NAMES]])).map((row) => row.name);
    const report = await runGroupReadsWithoutTables(reader, writer, tables);
    expect(report.before).toEqual({ taskGroup: null, groupStats: [], rateWindows: { name: null, group: null }, tables: [] });
    expect(report.after).toEqual({ taskGroup: { group: "g1", running: 0, queued: 1, groupConcurrency: null }, groupStats: [{ group: "g1", queued: 1, running: 0 }], rateWindows: { name: null, group: null }, tables: [...GROUP_TABLE_NAMES].sort() });
  });
});
