/**
 * Write combining on MariaDB: concurrent submits and completes reach the
 * server as multi-row statements (counted through Kysely's query log on a
 * Kysely instance the test owns), and every caller still gets its own row or
 * its own error. `CAIRNQ_TEST_MYSQL_DSN` names the server; without it the
 * tests fail.
 */
import { createRequire } from "node:module";
import { LostLease } from "@cairnq/protocol";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { Kysely, MysqlDialect } from "kysely";
import type { MysqlPool } from "kysely";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const mysql2 = require("mysql2") as { createPool(options: Record<string, unknown>): MysqlPool & { on(event: string, fn: (c: { query(sql: string): void }) => void): void } };

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("combining");
});
afterAll(async () => {
  await admin.dropDatabase("combining");
  await admin.close();
});

const open: { db: Kysely<unknown>; store: MySQLStore }[] = [];
afterEach(async () => {
  for (const { db, store } of open.splice(0)) {
    await store.close();
    await db.destroy();
  }
  await admin.emptyDatabase("combining");
});

/** A store on a Kysely instance whose every statement text is recorded. */
function loggedStore(options: ConstructorParameters<typeof MySQLStore>[1] = {}): { store: MySQLStore; statements: string[] } {
  const statements: string[] = [];
  const pool = mysql2.createPool({ uri: dsn, connectionLimit: 8, charset: "UTF8MB4_BIN", decimalNumbers: true, supportBigNumbers: true });
  pool.on("connection", (c) => {
    c.query("SET SESSION time_zone = '+00:00'");
    c.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  });
  const db = new Kysely<unknown>({ dialect: new MysqlDialect({ pool }), log: (event) => void statements.push(event.query.sql) });
  const store = new MySQLStore(db, options);
  open.push({ db, store });
  return { store, statements };
}

const count = (statements: readonly string[], pattern: RegExp): number => statements.filter((sql) => pattern.test(sql)).length;
const INSERTS = /^INSERT INTO cairnq_tasks\b/;
const COMPLETES = /^UPDATE (JSON_TABLE|cairnq_tasks)\b.*'succeeded'/;

it("64 concurrent submits go as a few multi-row INSERTs, each caller getting its own task; 64 concurrent completes as a few UPDATEs", async () => {
  const { store, statements } = loggedStore();
  await store.connect();
  statements.length = 0;
  const tasks = await Promise.all(Array.from({ length: 64 }, (_, i) => store.submit({ name: "job", payload: { i, text: `ünïcode ${i}` } })));
  expect(tasks.map((t) => t.payload)).toEqual(Array.from({ length: 64 }, (_, i) => ({ i, text: `ünïcode ${i}` })));
  expect(new Set(tasks.map((t) => t.id)).size).toBe(64);
  const inserts = count(statements, INSERTS);
  expect(inserts).toBeGreaterThanOrEqual(1);
  expect(inserts).toBeLessThanOrEqual(4);

  const claimed = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 64 });
  expect(claimed).toHaveLength(64);
  statements.length = 0;
  const done = await Promise.all(claimed.map((t) => store.complete({ taskId: t.id, workerId: "w1", attempt: t.attempt, result: { of: t.id } })));
  for (const [i, task] of done.entries()) expect(task).toMatchObject({ id: claimed[i]?.id, status: "succeeded", result: { of: claimed[i]?.id } });
  const updates = count(statements, COMPLETES);
  expect(updates).toBeGreaterThanOrEqual(1);
  expect(updates).toBeLessThanOrEqual(4);
  expect(count(statements, /^UPDATE JSON_TABLE\(/)).toBeGreaterThanOrEqual(1);
});

it("a combined complete checks each row's own guard: the non-owner's write is LostLease, the others succeed", async () => {
  const { store } = loggedStore();
  const tasks = await Promise.all(Array.from({ length: 8 }, (_, i) => store.submit({ name: "job", payload: { i } })));
  const claimed = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 8 });
  expect(claimed).toHaveLength(tasks.length);
  const outcomes = await Promise.allSettled(
    claimed.map((t, i) => store.complete({ taskId: t.id, workerId: i === 3 ? "intruder" : "w1", attempt: t.attempt, result: { i } })),
  );
  expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(7);
  const rejected = outcomes[3];
  expect(rejected?.status).toBe("rejected");
  expect((rejected as PromiseRejectedResult).reason).toBeInstanceOf(LostLease);
  expect((await store.get(claimed[3]?.id as string))?.status).toBe("running");
});

it("with combine: false every submit is its own INSERT", async () => {
  const { store, statements } = loggedStore({ combine: false });
  await store.connect();
  statements.length = 0;
  await Promise.all(Array.from({ length: 16 }, (_, i) => store.submit({ name: "job", payload: { i } })));
  expect(count(statements, INSERTS)).toBe(16);
});
