/**
 * An existing database's group tables (one walk index over every state, as
 * stores before the partial indexes created it) upgraded by a store's first
 * group use while a claim is between its read of the group rows and its
 * update of them. The DDL runs in one transaction: it must take its strongest
 * lock (the DROP INDEX's ACCESS EXCLUSIVE on the table) before the SHARE lock
 * of a CREATE INDEX, or the two wait for each other and Postgres aborts one
 * of them as a deadlock.
 */
import { expect, it } from "vitest";
import { client, openStore, pgDsn, q, schemaName, until } from "../helpers.js";

/** Backends waiting for a lock that backend `pid` holds. */
async function blockedBy(pid: number): Promise<number> {
  const [row] = await q<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [pid]);
  return Number(row?.n ?? 0);
}

it("the group tables' index upgrade does not deadlock with a transaction that read the group rows and then updates them", async () => {
  const schema = schemaName("cq_group_upgrade");
  const first = openStore(pgDsn(), { schema });
  await first.connect();
  const task = await first.submit({ name: "g", group: "a" });
  await first.close();
  // What the stores before the partial indexes left beside the table.
  await q(`DROP INDEX "${schema}".cairnq_ext_task_groups_queued_idx`);
  await q(`DROP INDEX "${schema}".cairnq_ext_task_groups_requeued_idx`);
  await q(`CREATE INDEX cairnq_ext_task_groups_walk_idx ON "${schema}".cairnq_ext_task_groups (name, state, group_key, priority DESC, task_id)`);

  // A claim (of a store of either version) that has read the group rows and will update one.
  const claim = await client();
  const [claimPid] = (await claim.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows;
  await claim.query("BEGIN");
  await claim.query(`SELECT task_id FROM "${schema}".cairnq_ext_task_groups WHERE name = 'g'`);

  // A store's first group use (a grouped submit; reads run no DDL) runs the group DDL: it waits for the claim's read to end.
  const upgraded = openStore(pgDsn(), { schema });
  await upgraded.connect();
  const submitted = upgraded.submit({ name: "g", group: "b" });
  const settled = submitted.then(
    () => "ok",
    (err: unknown) => String(err),
  );
  expect(await until(async () => (await blockedBy(claimPid?.pid ?? -1)) >= 1)).toBe(true);

  // The claim updates the row it read, and commits.
  const update = claim.query(`UPDATE "${schema}".cairnq_ext_task_groups SET state = 'claimed' WHERE task_id = $1`, [task.id]).then(
    () => "ok",
    (err: unknown) => String(err),
  );
  const updated = await update;
  await claim.query(updated === "ok" ? "COMMIT" : "ROLLBACK");
  expect({ updated, submitted: await settled }).toEqual({ updated: "ok", submitted: "ok" });
  const indexes = await q<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'cairnq_ext_task_groups' ORDER BY indexname", [schema]);
  expect(indexes.map((row) => row.indexname)).toEqual(["cairnq_ext_task_groups_pkey", "cairnq_ext_task_groups_queued_idx", "cairnq_ext_task_groups_requeued_idx"]);
});
