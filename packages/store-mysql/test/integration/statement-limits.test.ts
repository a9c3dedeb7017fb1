/**
 * Statements over the server's `max_allowed_packet` (16 MiB on the test
 * server): the store refuses them before sending with `StatementTooLarge`
 * (a `SerializationError`), so nothing is written and the connection stays
 * good; and a connection the server refused a packet on anyway (a limit the
 * store misjudged) is destroyed, not handed to the next call. Needs
 * `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { createRequire } from "node:module";
import { SerializationError } from "@cairnq/protocol";
import { MySQLStore, StatementTooLarge } from "@cairnq/store-mysql";
import type { MySQLPool } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { createConnection } from "mysql2/promise";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const mysql2 = require("mysql2") as { createPool(options: Record<string, unknown>): MySQLPool & { end(cb?: (e: unknown) => void): void } };

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
let limit = 0;
/** Over the test server's limit: one statement carrying it cannot be sent. */
let big = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("limits");
  const conn = await createConnection({ uri: dsn });
  const [rows] = (await conn.query("SELECT @@max_allowed_packet AS m")) as unknown as [{ m: number }[]];
  await conn.end();
  limit = Number(rows[0]?.m);
  big = "y".repeat(limit + 1024);
});
afterAll(async () => {
  await admin.dropDatabase("limits");
  await admin.close();
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await admin.emptyDatabase("limits");
});

function store(target: string | MySQLPool = dsn, options: ConstructorParameters<typeof MySQLStore>[1] = {}): MySQLStore {
  const made = new MySQLStore(target, options);
  closers.push(() => made.close());
  return made;
}

async function count(s: MySQLStore, name: string): Promise<number> {
  return (await s.list({ name })).length;
}

it("a submit over max_allowed_packet fails alone with StatementTooLarge before it is sent; the next calls on the one connection succeed", async () => {
  // One connection: a broken one would be the next call's.
  const s = store(dsn, { max: 1 });
  await s.submit({ name: "warm", payload: {} });
  const error: unknown = await s.submit({ name: "big", payload: { s: big } }).then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(StatementTooLarge);
  expect(error).toBeInstanceOf(SerializationError);
  const tooLarge = error as StatementTooLarge;
  expect(tooLarge.maxAllowedPacket).toBe(limit);
  expect(tooLarge.statementBytes).toBeGreaterThan(limit);
  expect(tooLarge.message).toContain("max_allowed_packet");
  expect(tooLarge.message).toContain(String(tooLarge.statementBytes));
  for (let i = 0; i < 4; i++) await s.submit({ name: "small", payload: { i } });
  expect(await count(s, "small")).toBe(4);
  expect(await count(s, "big")).toBe(0);
});

it("a combined statement too large for the server is split: only the write over the limit fails", async () => {
  const s = store(dsn, { max: 2, combine: { maxBytes: 64 * 1024 * 1024, maxPendingBytes: 128 * 1024 * 1024 } });
  // Half the limit each: two of them combined exceed it, each alone fits.
  const half = "h".repeat(Math.floor(limit / 2) - 4096);
  const outcomes = await Promise.allSettled([
    s.submit({ name: "half", payload: { s: half } }),
    s.submit({ name: "half", payload: { s: half } }),
    s.submit({ name: "big", payload: { s: big } }),
    s.submit({ name: "small", payload: {} }),
  ]);
  expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect((outcomes[2] as PromiseRejectedResult).reason).toBeInstanceOf(StatementTooLarge);
  expect(await count(s, "half")).toBe(2);
});

it("a connection the server refused a packet on is destroyed, not handed to the next call", async () => {
  // A pool whose limit the store misjudges (as after an operator lowers max_allowed_packet): its read of
  // the limit answers 1 GiB, so the oversized statement reaches the server, which refuses it (errno 1153)
  // and closes that connection. One connection in the pool: without the guard the next call gets it.
  const pool = mysql2.createPool({ uri: dsn, connectionLimit: 1, multipleStatements: false, charset: "UTF8MB4_BIN" });
  closers.push(() => new Promise<void>((resolve) => pool.end(() => resolve())));
  const misjudging: MySQLPool = {
    getConnection: (callback) =>
      pool.getConnection((error, connection) => {
        if (error !== null && error !== undefined) return callback(error, connection);
        const patched = connection as typeof connection & { misjudged?: true };
        if (patched.misjudged !== true) {
          const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
          patched.query = ((sql: string, ...rest: unknown[]) => query(/max_allowed_packet/.test(sql) ? "SELECT 1073741824 AS m" : sql, ...rest));
          patched.misjudged = true;
        }
        callback(null, connection);
      }),
    end: (callback) => callback(null),
    on: () => misjudging,
  };
  const s = store(misjudging, { combine: false });
  await s.submit({ name: "warm", payload: {} });
  const error: unknown = await s.submit({ name: "big", payload: { s: big } }).then(() => null, (e: unknown) => e);
  expect((error as { errno?: unknown }).errno).toBe(1153);
  for (let i = 0; i < 3; i++) await s.submit({ name: "small", payload: { i } });
  expect(await count(s, "small")).toBe(3);
});

it("a completion too large for the server riding with the worker's next claim fails alone; the claim takes its task", async () => {
  const s = store(dsn, { max: 2 });
  await s.submit({ name: "first", payload: {} });
  await s.submit({ name: "second", payload: {} });
  const [first] = await s.claim({ queues: ["default"], workerId: "w", limit: 1, leaseMs: 30_000 });
  // Written in the turn the next claim (no probe: its transaction opens at once) starts in: the completion rides with it.
  const completing = s.complete({ taskId: first!.id, workerId: "w", result: big }).then(() => null, (e: unknown) => e);
  const claimed = await s.claim({ queues: ["default"], workerId: "w", limit: 1, leaseMs: 30_000, probe: false });
  expect(claimed.map((t) => t.name)).toEqual(["second"]);
  expect(await completing).toBeInstanceOf(StatementTooLarge);
  expect((await s.get(first!.id))?.status).toBe("running");
});
