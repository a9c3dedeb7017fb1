/**
 * A purge or bulk batch with a `limit` above the dialect's `maxRowsPerWrite`
 * runs as several writes of at most that many rows and still changes, and
 * returns in order, every matching row: on the store's connections and
 * through a transaction view. A claim's draw takes at most that many rows. One statement gathered every changed id in a
 * session variable whose every append copies it whole (a purge of 39,000 rows
 * 4.35 s, of 10,000 306 ms), and past `max_allowed_packet` (about 490k ids)
 * it read `NULL`, so the purge deleted nothing and returned `[]`. Needs
 * `CAIRNQ_TEST_MYSQL_DSN`; without it the test fails.
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { Kysely, MysqlDialect } from "kysely";
import type { CompiledQuery } from "kysely";
import { createPool } from "mysql2";
import type { Connection } from "mysql2/promise";
import { createConnection } from "mysql2/promise";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("big_batches");
});
afterAll(async () => {
  await admin.dropDatabase("big_batches");
  await admin.close();
});
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await admin.emptyDatabase("big_batches");
});

/** Ids as the store makes them (`task_` and 26 characters), sorting by `n`. */
const id = (n: number): string => `task_${String(n).padStart(26, "0")}`;

/** A store on a pool whose statements are recorded as the server ran them, and a plain connection. */
async function open(): Promise<{ store: MySQLStore; db: Kysely<Record<string, never>>; conn: Connection; ran: CompiledQuery[]; cap: number }> {
  const ran: CompiledQuery[] = [];
  const db = new Kysely<Record<string, never>>({ dialect: new MysqlDialect({ pool: createPool({ uri: dsn, charset: "UTF8MB4_BIN" }) }), log: (event) => void ran.push(event.query) });
  const store = new MySQLStore(db);
  const conn = await createConnection({ uri: dsn, charset: "UTF8MB4_BIN" });
  closers.push(() => db.destroy(), () => store.close(), () => conn.end());
  await store.connect();
  const cap = store.dialect.capabilities.maxRowsPerWrite;
  if (cap === undefined) throw new Error("the MySQL dialect declares no maxRowsPerWrite");
  return { store, db, conn, ran, cap };
}

/** `count` rows of `status` (terminal ones completed long ago, in id order), inserted by the server. */
async function insert(conn: Connection, count: number, status: string, from = 0): Promise<void> {
  const completed = status === "queued" ? "NULL" : "1000 + seq";
  await conn.query(
    "INSERT INTO cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms, completed_at_ms) " +
      `SELECT CONCAT('task_', LPAD(seq, 26, '0')), 'job', 'default', ?, '{}', 1000 + seq, 1000 + seq, 1000 + seq, ${completed} FROM seq_${from}_to_${from + count - 1}`,
    [status],
  );
}

async function count(conn: Connection, status: string): Promise<number> {
  const [rows] = await conn.query("SELECT COUNT(*) AS n FROM cairnq_tasks WHERE status = ?", [status]);
  return Number((rows as { n: unknown }[])[0]?.n);
}

const deletes = (ran: readonly CompiledQuery[]): number => ran.filter((query) => /^DELETE\b/.test(query.sql)).length;

describe("purge and bulk batches above maxRowsPerWrite on MariaDB", () => {
  it("a purge whose limit is over twice the cap deletes and returns every matching row, oldest first, one write per cap's worth", async () => {
    const { store, conn, ran, cap } = await open();
    const eligible = 2 * cap + 2_000;
    await insert(conn, eligible, "succeeded");
    await insert(conn, 50, "queued", eligible);

    ran.length = 0;
    const purged = await store.purge({ olderThanMs: 0, limit: eligible - 500 });
    expect(purged).toEqual(Array.from({ length: eligible - 500 }, (_, n) => id(n)));
    expect(deletes(ran)).toBe(Math.ceil((eligible - 500) / cap));
    expect([await count(conn, "succeeded"), await count(conn, "queued")]).toEqual([500, 50]);

    // A limit above what is left: a write that finds fewer rows than it asked for is no end (it may have
    // skipped rows another transaction held); the one that finds none is.
    ran.length = 0;
    expect(await store.purge({ olderThanMs: 0, limit: 10 * cap })).toEqual(Array.from({ length: 500 }, (_, n) => id(eligible - 500 + n)));
    expect(deletes(ran)).toBe(2);
    expect(await count(conn, "succeeded")).toBe(0);
  });

  it("through a transaction view too, and a bulk cancel above the cap changes every row after the caller's cursor, in id order", async () => {
    const { store, db, conn, ran, cap } = await open();
    const rows = cap + 1_000;
    await insert(conn, rows, "failed");
    await insert(conn, rows, "queued", rows);

    ran.length = 0;
    const purged = await db.transaction().execute((trx) => store.withTransaction(trx).purge({ olderThanMs: 0, limit: rows }));
    expect(purged).toEqual(Array.from({ length: rows }, (_, n) => id(n)));
    expect(deletes(ran)).toBe(2);
    expect(await count(conn, "failed")).toBe(0);

    ran.length = 0;
    const canceled = await store.cancelBatch({ limit: rows, afterId: id(rows + 9) });
    expect(canceled).toEqual(Array.from({ length: rows - 10 }, (_, n) => id(rows + 10 + n)));
    expect(ran.filter((query) => /^UPDATE\b/.test(query.sql)).length).toBe(3);
    expect([await count(conn, "canceled"), await count(conn, "queued")]).toEqual([rows - 10, 10]);
  });

  it("a claim asking for more than the cap takes the cap's worth, and every row it leased is a row it returned", async () => {
    const { store, conn, cap } = await open();
    await insert(conn, cap + 500, "queued");

    const claimed = await store.claim({ queues: ["default"], workerId: "w", limit: cap + 500 });
    expect(claimed.map((task) => task.id)).toEqual(Array.from({ length: cap }, (_, n) => id(n)));
    expect([await count(conn, "running"), await count(conn, "queued")]).toEqual([cap, 500]);
    // The rest comes with the next claim.
    expect((await store.claim({ queues: ["default"], workerId: "w", limit: cap + 500 })).length).toBe(500);
  });
});
