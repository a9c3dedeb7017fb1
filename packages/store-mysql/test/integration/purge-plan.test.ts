/**
 * A purge batch deletes its picked rows by primary key: every `DELETE` the
 * store runs for `purge` reads `cairnq_tasks` through PRIMARY (EXPLAIN
 * `eq_ref`, `range` or `const`), never walks the table (`ALL`, `index`).
 * MariaDB before 11.1 has no semi-join for a single-table `DELETE`, so
 * `DELETE … WHERE id IN (<derived picks>)` scanned every row for every
 * batch: 3.3 s per 1,000-row batch on a table of 966k tasks. Also checks
 * that the batch deletes and returns exactly the oldest `limit` eligible
 * rows. Needs `CAIRNQ_TEST_MYSQL_DSN`; without it the test fails.
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { Kysely, MysqlDialect } from "kysely";
import type { CompiledQuery } from "kysely";
import { createPool } from "mysql2";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("purge_plan");
});
afterAll(async () => {
  await admin.dropDatabase("purge_plan");
  await admin.close();
});

interface ExplainRow {
  id: number | null;
  select_type: string;
  table: string | null;
  type: string | null;
  key: string | null;
}

describe("purge on MariaDB", () => {
  it("deletes each batch's rows by primary key, not by walking the table, and returns the oldest eligible ids", async () => {
    const pool = createPool({ uri: dsn, charset: "UTF8MB4_BIN" });
    const ran: CompiledQuery[] = [];
    const db = new Kysely<Record<string, never>>({ dialect: new MysqlDialect({ pool }), log: (event) => void ran.push(event.query) });
    const store = new MySQLStore(db);
    const conn = await createConnection({ uri: dsn, charset: "UTF8MB4_BIN" });
    try {
      await store.stats(); // migrates
      // 2,000 finished tasks completed long ago, oldest first by number, and 50 queued ones purge never takes.
      const rows: unknown[][] = [];
      for (let i = 0; i < 2000; i++) {
        const id = `task_${String(i).padStart(6, "0")}`;
        rows.push([id, "job", "default", i % 3 === 0 ? "failed" : "succeeded", "{}", 1_000 + i, 1_000 + i, 1_000 + i, 1_000 + i]);
      }
      for (let i = 0; i < 50; i++) rows.push([`task_q${i}`, "job", "default", "queued", "{}", 1_000, 1_000, 1_000, null]);
      await conn.query("INSERT INTO cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms, completed_at_ms) VALUES ?", [rows]);
      await conn.query("ANALYZE TABLE cairnq_tasks");

      ran.length = 0;
      const purged = await store.purge({ olderThanMs: 0, limit: 100 });
      expect([...purged].sort()).toEqual(Array.from({ length: 100 }, (_, i) => `task_${String(i).padStart(6, "0")}`));
      const [left] = await conn.query("SELECT COUNT(*) AS n, MIN(id) AS first FROM cairnq_tasks WHERE status <> 'queued'");
      expect((left as { n: number; first: Buffer }[]).map((r) => [Number(r.n), String(r.first)])).toEqual([[1900, "task_000100"]]);

      const deletes = ran.filter((query) => /^DELETE\b/.test(query.sql));
      expect(deletes.length).toBeGreaterThan(0);
      for (const query of deletes) {
        const [plan] = await conn.query(`EXPLAIN ${query.sql}`, [...query.parameters]);
        // The rows of the statement itself (id 1): the table it deletes from is read by its primary key.
        const own = (plan as ExplainRow[]).filter((row) => row.id === 1 && row.table === "cairnq_tasks");
        expect(own, query.sql).toHaveLength(1);
        expect(own.map((row) => ({ type: row.type, key: row.key })), `${query.sql}\n${JSON.stringify(plan)}`).toEqual([
          { type: expect.stringMatching(/^(eq_ref|range|const)$/) as unknown, key: "PRIMARY" },
        ]);
      }
    } finally {
      await conn.end();
      await store.close();
      await db.destroy();
    }
  });
});
