/**
 * Two MariaDB spellings checked on the server: `MySQLSyntax.topRowsJoin`
 * (each outer row's top rows, walked one row at a time up to
 * `TOP_ROWS_WALKED`, aggregated above) gives the rows the subquery selects,
 * in its order, and reads only as many index entries as it returns rows; and
 * a bound list (`inList`, expanded by the statement plan into one value per
 * element) selects what the list holds, is false when empty, and lets a
 * single-table `UPDATE` read its rows by key instead of walking the table
 * (counted with the session's `Handler_read_*` counters). Needs
 * `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { createConnection } from "mysql2/promise";
import type { Connection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { planStatement, queriesOf } from "../../src/mysql-statement-plan.ts";
import { MySQLSyntax } from "../../src/mysql-syntax.ts";
import { TOP_ROWS_WALKED } from "../../src/mysql-top-rows.ts";

const admin = new MySQLAdmin(mysqlDsn());
let conn: Connection;
beforeAll(async () => {
  conn = await createConnection({ uri: await admin.createDatabase("sql_forms"), charset: "UTF8MB4_BIN" });
  await conn.query(
    "CREATE TABLE cq_rows (id VARBINARY(255) PRIMARY KEY, gk VARBINARY(255) NOT NULL, p INT NOT NULL, ok INT NOT NULL, KEY cq_rows_walk (gk, p DESC, id)) ENGINE=InnoDB",
  );
  await conn.query("CREATE TABLE cq_groups (gk VARBINARY(255) PRIMARY KEY) ENGINE=InnoDB");
  await conn.query("INSERT INTO cq_groups (gk) VALUES ('big'), ('few'), ('none'), ('skipped')");
  const rows: [string, string, number, number][] = [];
  // `big`: 1,000 rows over three priorities, every seventh not selected by the subquery's condition.
  for (let i = 0; i < 1000; i++) rows.push([`big-${String(i).padStart(4, "0")}`, "big", i % 3, i % 7 === 0 ? 0 : 1]);
  rows.push(["few-a", "few", 0, 1], ["few-b", "few", 5, 1], ["few-c", "few", 0, 0]);
  for (let i = 0; i < 50; i++) rows.push([`skipped-${i}`, "skipped", 1, 0]);
  await conn.query("INSERT INTO cq_rows (id, gk, p, ok) VALUES ?", [rows]);
});
afterAll(async () => {
  await conn.end();
  await admin.dropDatabase("sql_forms");
  await admin.close();
});

/** Runs the core-style `sql` (numbered placeholders) through the store's statement plan. */
async function run(sql: string, parameters: unknown[]): Promise<Record<string, string | number | null>[]> {
  let rows: unknown = [];
  for (const query of queriesOf(planStatement(sql), parameters)) [rows] = await conn.query(query.sql, [...query.parameters]);
  // Binary columns come back as Buffers: read them as UTF-8, as the store does. A write answers no rows.
  if (!Array.isArray(rows)) return [];
  return (rows as Record<string, unknown>[]).map((row) =>
    Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString("utf8") : (v as string | number | null)])),
  );
}

/** The session's `Handler_read_*` counters while `fn` runs. */
async function handlerReads(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  await conn.query("FLUSH STATUS");
  await fn();
  const [status] = await conn.query("SHOW SESSION STATUS LIKE 'Handler_read%'");
  return Object.fromEntries((status as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, Number(r.Value)]));
}

const syntax = new MySQLSyntax();
const TOP =
  "SELECT g.gk AS gk, b.id AS id FROM cq_groups g " +
  syntax.topRowsJoin("cq_rows", "b", "id", "SELECT t.id AS id FROM cq_rows t WHERE t.gk = g.gk AND t.ok = 1 ORDER BY t.p DESC, t.id ASC LIMIT ?1") +
  " ORDER BY g.gk ASC, b.p DESC, b.id ASC";

describe("topRowsJoin on MariaDB", () => {
  it("gives each outer row its top n rows in the subquery's order (one row of nulls for none), walked and aggregated alike", async () => {
    const [all] = await conn.query("SELECT id, gk FROM cq_rows WHERE ok = 1 ORDER BY gk, p DESC, id");
    const byGroup = new Map<string, string[]>();
    for (const r of all as { id: Buffer; gk: Buffer }[]) byGroup.set(String(r.gk), [...(byGroup.get(String(r.gk)) ?? []), String(r.id)]);
    for (const n of [1, 2, 3, TOP_ROWS_WALKED, TOP_ROWS_WALKED + 1, 20]) {
      const rows = (await run(TOP, [n])).map((r) => [r.gk, r.id]);
      const expected = ["big", "few", "none", "skipped"].flatMap((g) => {
        const top = (byGroup.get(g) ?? []).slice(0, n);
        return top.length === 0 ? [[g, null]] : top.map((id) => [g, id]);
      });
      expect(rows, `LIMIT ${n}`).toEqual(expected);
    }
  });

  it("reads index entries for the rows it returns, not a group's backlog", async () => {
    const reads = await handlerReads(() => run(TOP.replace("FROM cq_groups g", "FROM (SELECT gk FROM cq_groups WHERE gk = 'big') g"), [3]));
    // Level i reads i + 1 entries of `big` (1 + 2 + 3, and `big-0000`, not selected, once more each): far from its 1,000 rows.
    expect(reads.Handler_read_next).toBeLessThan(20);
    expect(reads.Handler_read_rnd_next).toBeLessThan(20);
  });
});

describe("bound lists on MariaDB", () => {
  const LIST = `SELECT id FROM cq_rows WHERE ${syntax.inList("id", "?1")} ORDER BY id`;
  const NOT_LIST = `SELECT count(*) AS n FROM cq_rows WHERE NOT (${syntax.inList("gk", "?1")})`;

  it("selects the rows the list holds, none for an empty list, whose negation holds everywhere", async () => {
    expect((await run(LIST, [JSON.stringify(["few-b", "big-0001", "absent"])])).map((r) => String(r.id))).toEqual(["big-0001", "few-b"]);
    expect(await run(LIST, ["[]"])).toEqual([]);
    expect((await run(NOT_LIST, ["[]"]))[0]?.n).toBe(1053);
    expect((await run(NOT_LIST, [JSON.stringify(["big", "skipped"])]))[0]?.n).toBe(3);
  });

  it("binds each element as a value: quotes, backslashes and non-ASCII text match exactly", async () => {
    const odd = ["it's", "back\\slash", "ünïcode ✓", "?1", "a,b"];
    await conn.query("INSERT INTO cq_rows (id, gk, p, ok) VALUES ?", [odd.map((id) => [id, "odd", 0, 1])]);
    try {
      expect((await run(LIST, [JSON.stringify([...odd, "it"])])).map((r) => String(r.id)).sort()).toEqual([...odd].sort());
    } finally {
      await conn.query("DELETE FROM cq_rows WHERE gk = 'odd'");
    }
  });

  it("lets a single-table UPDATE read the listed rows by key instead of walking the table", async () => {
    const update = `UPDATE cq_rows SET p = p WHERE ${syntax.inList("id", "?1")}`;
    const reads = await handlerReads(() => run(update, [JSON.stringify(["big-0001", "big-0002", "few-a"])]));
    expect(reads.Handler_read_rnd_next).toBe(0);
    expect(reads.Handler_read_key).toBeLessThanOrEqual(4);
  });
});
