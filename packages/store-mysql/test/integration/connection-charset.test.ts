/**
 * A mysql2 pool the caller passes keeps its own connection character set (the store sets
 * `utf8mb4_bin` only on a pool it builds). The statements that capture a returning update's
 * values in a session variable must not depend on it: on a `latin1` connection a claim,
 * a complete and a cancel still return their rows. `CAIRNQ_TEST_MYSQL_DSN` names the server;
 * without it the tests fail.
 */
import { createRequire } from "node:module";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { afterAll, beforeAll, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const mysql2 = require("mysql2") as {
  createPool(options: Record<string, unknown>): { on(event: string, fn: (c: { query(sql: string): void }) => void): void; end(cb?: () => void): void };
};

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("charset");
});
afterAll(async () => {
  await admin.dropDatabase("charset");
  await admin.close();
});

it("on a passed pool whose connections use latin1, claim, complete and cancel return their rows", async () => {
  const pool = mysql2.createPool({ uri: dsn, connectionLimit: 2, charset: "LATIN1_SWEDISH_CI", decimalNumbers: true, supportBigNumbers: true });
  pool.on("connection", (c) => {
    c.query("SET SESSION time_zone = '+00:00'");
    c.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  });
  const store = new MySQLStore(pool as never);
  try {
    await store.connect();
    const a = await store.submit({ name: "job", payload: { n: 1 } });
    const b = await store.submit({ name: "job", payload: { n: 2 } });
    const claimed = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 1 });
    expect(claimed.map((t) => t.id)).toEqual([a.id]);
    const done = await store.complete({ taskId: a.id, workerId: "w1", attempt: claimed[0]?.attempt ?? 0, result: { ok: true } });
    expect(done).toMatchObject({ id: a.id, status: "succeeded", result: { ok: true } });
    const canceled = await store.cancel(b.id);
    expect(canceled).toMatchObject({ id: b.id, status: "canceled" });
  } finally {
    await store.close();
    await new Promise<void>((resolve) => pool.end(() => resolve()));
  }
});
