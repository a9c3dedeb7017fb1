/**
 * A store's first use of an extension feature on a database that already
 * has the feature's tables and indexes, on MariaDB: a catalog read
 * (`information_schema`), no DDL — each DDL statement commits implicitly and
 * takes metadata locks, so `CREATE TABLE/INDEX IF NOT EXISTS` of a table
 * present waits for a `LOCK TABLES … WRITE` (or a backup's global read lock)
 * held on it. Only a database missing one of the objects gets the DDL.
 * Needs `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn, settledWithin } from "@cairnq/test-support";
import type { Connection } from "mysql2/promise";
import { createConnection } from "mysql2/promise";
import { afterAll, afterEach, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
const stores: MySQLStore[] = [];
const connections: Connection[] = [];
const databases: string[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const conn of connections.splice(0)) await conn.end();
});
afterAll(async () => {
  for (const id of databases) await admin.dropDatabase(id);
  await admin.close();
});

function openStore(dsn: string): MySQLStore {
  const store = new MySQLStore(dsn);
  stores.push(store);
  return store;
}

async function connection(dsn: string): Promise<Connection> {
  const conn = await createConnection({ uri: dsn });
  connections.push(conn);
  return conn;
}

/** A database whose group tables a store created (its first grouped submit); its DSN. */
async function groupedDatabase(id: string): Promise<string> {
  databases.push(id);
  const dsn = await admin.createDatabase(id);
  const first = openStore(dsn);
  await first.connect();
  await first.submit({ name: "g", group: "a" });
  await first.close();
  return dsn;
}

/** The indexes of the group tables, other than their keys. */
async function groupIndexes(dsn: string): Promise<string[]> {
  const conn = await connection(dsn);
  const [rows] = (await conn.query(
    "SELECT DISTINCT INDEX_NAME AS name FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'cairnq\\_ext\\_%group%' AND INDEX_NAME <> 'PRIMARY' ORDER BY name",
  )) as unknown as [{ name: string }[]];
  return rows.map((row) => row.name);
}

it("a fresh store's first grouped submit and group read complete while another connection holds LOCK TABLES … WRITE on a group table they do not use", async () => {
  const dsn = await groupedDatabase("ext_ddl_locked");
  const store = openStore(dsn);
  await store.connect();
  // The group rate claims: the group DDL creates the table and its indexes (and waits on this lock), a submit and
  // a group read never touch it.
  const holder = await connection(dsn);
  await holder.query("LOCK TABLES cairnq_ext_group_rate_claims WRITE");
  try {
    expect(await settledWithin(store.submit({ name: "g", group: "b" }), 10_000)).toBe("ok");
    expect(await settledWithin(store.groupStats("g"), 10_000)).toBe("ok");
    expect(await store.groupStats("g")).toEqual([
      { group: "a", queued: 1, running: 0 },
      { group: "b", queued: 1, running: 0 },
    ]);
  } finally {
    await holder.query("UNLOCK TABLES");
  }
});

it("a database missing one of the group indexes gets it back on a fresh store's first group use", async () => {
  const dsn = await groupedDatabase("ext_ddl_missing");
  const before = await groupIndexes(dsn);
  expect(before).toContain("cairnq_ext_groups_served_idx");
  const conn = await connection(dsn);
  await conn.query("DROP INDEX cairnq_ext_groups_served_idx ON cairnq_ext_groups");
  expect(await groupIndexes(dsn)).not.toContain("cairnq_ext_groups_served_idx");

  const store = openStore(dsn);
  await store.connect();
  await store.submit({ name: "g", group: "c" }); // a group write: reads run no DDL
  expect(await groupIndexes(dsn)).toEqual(before);
});
