/**
 * Connections of the store killed on the server (MariaDB `KILL <id>` from
 * an admin connection, on the ids `information_schema.processlist` lists for
 * the test's database) while the store uses them: a statement in flight
 * fails with a `MySQLConnectionLost` (outcome unknown, the driver's error as
 * `cause`, transient); a connection found lost before anything was sent
 * takes no call down — the checkout's first statement moves to a fresh
 * connection, and a transaction's `ROLLBACK` does not hide the error that
 * broke it behind mysql2's "Can't add new command when connection is in
 * closed state". Needs `CAIRNQ_TEST_MYSQL_DSN`; without it the tests fail.
 */
import { CairnQError, isFatalError } from "@cairnq/protocol";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { CompiledQuery } from "kysely";
import { createConnection } from "mysql2/promise";
import type { Connection } from "mysql2/promise";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
let database = "";
let control: Connection;
const stores: MySQLStore[] = [];
const others: Connection[] = [];

beforeAll(async () => {
  dsn = await admin.createDatabase("connection_lost");
  database = decodeURIComponent(new URL(dsn).pathname.slice(1));
  control = await createConnection({ uri: mysqlDsn() });
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await Promise.all(others.splice(0).map((c) => c.end().catch(() => {})));
});
afterAll(async () => {
  await control.end();
  await admin.dropDatabase("connection_lost");
  await admin.close();
});

function open(options: { max?: number; combine?: false } = {}): MySQLStore {
  const store = new MySQLStore(dsn, options);
  stores.push(store);
  return store;
}

/** Another session on the test database (a lock holder), ended after the test. */
async function session(): Promise<Connection> {
  const c = await createConnection({ uri: dsn });
  others.push(c);
  return c;
}

/** The server ids of the connections on the test database, except `except`'s. */
async function connectionsOf(except: readonly number[] = []): Promise<{ id: number; info: string | null }[]> {
  const [rows] = await control.query("SELECT id, info FROM information_schema.processlist WHERE db = ? AND command <> 'Killed'", [database]);
  return (rows as { id: number; info: string | null }[]).filter((r) => !except.includes(Number(r.id)));
}

async function kill(id: number): Promise<void> {
  await control.query(`KILL ${Number(id)}`);
}

/** Polls `check` every 10 ms until it holds or 5 s pass. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Kills the store's one connection (a pool of `max: 1`) and waits until the server has dropped it and this process has read its end. */
async function killTheOne(except: readonly number[] = []): Promise<void> {
  const [only, ...more] = await connectionsOf(except);
  expect(only).toBeDefined();
  expect(more).toEqual([]);
  await kill(Number(only?.id));
  await until(async () => (await connectionsOf(except)).length === 0);
  await new Promise((resolve) => setTimeout(resolve, 100));
}

it("a statement in flight on a killed connection fails with MySQLConnectionLost: outcome unknown, cause kept, transient", async () => {
  const store = open({ combine: false });
  const task = await store.submit({ name: "lost.inflight" });
  const [claimed] = await store.claim({ queues: ["default"], workerId: "w" });
  expect(claimed?.id).toBe(task.id);
  const holder = await session();
  const [idRows] = await holder.query("SELECT CONNECTION_ID() AS id");
  const holderId = Number((idRows as { id: number }[])[0]?.id);
  await holder.query("START TRANSACTION");
  await holder.query("SELECT id FROM cairnq_tasks WHERE id = ? FOR UPDATE", [task.id]);
  const completing = store.complete({ taskId: task.id, workerId: "w", result: 1 }).then(
    () => null,
    (error: unknown) => error,
  );
  let waiting: { id: number; info: string | null } | undefined;
  await until(async () => (waiting = (await connectionsOf([holderId])).find((r) => r.info !== null && /UPDATE/i.test(r.info))) !== undefined);
  await kill(Number(waiting?.id));
  const error = (await completing) as Error & { code?: unknown };
  await holder.query("ROLLBACK");
  expect(error).toBeInstanceOf(Error);
  expect(error.name).toBe("MySQLConnectionLost");
  expect(error.message).toMatch(/^the connection to MySQL ended while a statement was in flight \(.+\): the server may or may not have applied it/);
  expect(error.cause).toBeInstanceOf(Error);
  expect(error).not.toBeInstanceOf(CairnQError);
  expect(isFatalError(error)).toBe(false);
  // The store goes on, on a fresh connection.
  expect((await store.get(task.id))?.status).toBe("running");
});

it("a connection killed after it was handed out and before its first statement: the statement runs on a fresh connection", async () => {
  const store = open({ max: 1 });
  await store.submit({ name: "lost.first" });
  const answer = await store.db.connection().execute(async (conn) => {
    await killTheOne();
    return conn.executeQuery<{ one: number }>(CompiledQuery.raw("SELECT 1 AS one"));
  });
  expect(answer.rows).toEqual([{ one: 1 }]);
  expect((await store.submit({ name: "lost.first.after" })).status).toBe("queued");
});

it("a transaction whose connection is killed between statements fails with MySQLConnectionLost saying the statement was not sent, not mysql2's closed-state error", async () => {
  const store = open({ max: 1 });
  await store.submit({ name: "lost.between" });
  const failure = await store.db
    .transaction()
    .execute(async (trx) => {
      await trx.executeQuery(CompiledQuery.raw("SELECT 1"));
      await killTheOne();
      await trx.executeQuery(CompiledQuery.raw("SELECT 2"));
    })
    .then(
      () => null,
      (error: unknown) => error as Error,
    );
  expect(failure?.name).toBe("MySQLConnectionLost");
  expect(failure?.message).toMatch(/was lost before this statement was sent .*: it was not sent/);
  expect(failure?.message).not.toMatch(/Can't add new command/);
  expect(isFatalError(failure)).toBe(false);
  expect((await store.submit({ name: "lost.between.after" })).status).toBe("queued");
});
