/**
 * A store's first use of an extension feature on a database that already
 * has the feature's tables and indexes: a catalog read (`pg_catalog`, in the
 * store's schema), no DDL — so no SHARE lock of a `CREATE INDEX IF NOT
 * EXISTS` queued behind every open transaction that wrote the table. Only a
 * schema missing one of them gets the DDL.
 */
import type { Task } from "@cairnq/protocol";
import { expect, it } from "vitest";
import type { PostgresStore } from "../../src/index.js";
import { client, openStore, pgDsn, q, schemaName } from "../helpers.js";
import { settledWithin } from "@cairnq/test-support";

/** A schema whose group tables a store created (its first grouped submit). */
async function groupedSchema(): Promise<string> {
  const schema = schemaName("cq_ext_ddl");
  const first = openStore(pgDsn(), { schema });
  await first.connect();
  await first.submit({ name: "g", group: "a" });
  await first.close();
  return schema;
}

/** The indexes of the group tables in `schema`. */
async function groupIndexes(schema: string): Promise<string[]> {
  const rows = await q<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename LIKE 'cairnq_ext_%group%' ORDER BY indexname", [schema]);
  return rows.map((row) => row.indexname);
}

function groupClaim(store: PostgresStore): Promise<Task[]> {
  return store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["g"], limit: 1, probe: false, flowControl: { g: { groupConcurrency: 1 } } });
}

it("a fresh store's first grouped submit and first group claim complete while another transaction holds ROW EXCLUSIVE on the group table", async () => {
  const schema = await groupedSchema();
  // What any uncommitted group write holds; a CREATE INDEX (even IF NOT EXISTS, the index there) waits for it.
  const writer = await client();
  await writer.query("BEGIN");
  await writer.query(`LOCK TABLE "${schema}".cairnq_ext_task_groups IN ROW EXCLUSIVE MODE`);
  try {
    const submitter = openStore(pgDsn(), { schema });
    await submitter.connect();
    expect(await settledWithin(submitter.submit({ name: "g", group: "b" }), 10_000)).toBe("ok");
    const claimer = openStore(pgDsn(), { schema });
    await claimer.connect();
    const claimed = groupClaim(claimer);
    expect(await settledWithin(claimed, 10_000)).toBe("ok");
    expect((await claimed).map((task) => task.name)).toEqual(["g"]);
  } finally {
    await writer.query("ROLLBACK");
  }
});

it("a schema missing one of the group indexes gets it back on a fresh store's first group use", async () => {
  const schema = await groupedSchema();
  const before = await groupIndexes(schema);
  expect(before).toContain("cairnq_ext_groups_served_idx");
  await q(`DROP INDEX "${schema}".cairnq_ext_groups_served_idx`);

  const store = openStore(pgDsn(), { schema });
  await store.connect();
  await store.submit({ name: "g", group: "c" }); // a group write: reads run no DDL
  expect(await groupIndexes(schema)).toEqual(before);
});
