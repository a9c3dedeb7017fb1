/**
 * The extension tables through a `withTransaction` view on MariaDB, whose DDL
 * commits the open transaction: the first grouped or debounced submit or send
 * on a fresh database has the store create its tables on its own connections,
 * so the caller's transaction stays whole (a rollback leaves no task, message
 * or row of the app's); and a retry or retryable fail through a view marks a
 * grouped task's row `requeued` with the transition, so a group claim takes it
 * back in its group's turn (test-support's scenario, shared with SQLite and
 * Postgres). Needs `CAIRNQ_TEST_MYSQL_DSN`.
 */
import type { TaskStepStore, TaskStore } from "@cairnq/protocol";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { countRows, groupState, runViewRequeueMarks } from "@cairnq/test-support/transaction-view-extensions";
import { Kysely, MysqlDialect, sql } from "kysely";
import type { Transaction } from "kysely";
import { createPool } from "mysql2";
import { afterAll, afterEach, describe, expect, it } from "vitest";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's tables are created by the test.
type AnyDb = Kysely<any>;

const admin = new MySQLAdmin(mysqlDsn());
const databases: string[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  for (const id of databases) await admin.dropDatabase(id);
  await admin.close();
});

/** A fresh database (no extension table yet), a store on it and the app's own Kysely instance on it. */
async function fresh(id: string): Promise<{ dsn: string; store: MySQLStore; app: AnyDb }> {
  databases.push(id);
  const dsn = await admin.createDatabase(id);
  const store = new MySQLStore(dsn);
  const app: AnyDb = new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: dsn, connectionLimit: 2 }) }) });
  closers.push(() => store.close(), () => app.destroy());
  await store.connect();
  return { dsn, store, app };
}

const DECLINED = new Error("payment declined");

/** Runs `fn` in the app's transaction between two inserts of its own, then rolls it back. */
async function rolledBack(app: AnyDb, fn: (trx: Transaction<unknown>) => Promise<unknown>): Promise<void> {
  await expect(
    app.transaction().execute(async (trx) => {
      await sql`INSERT INTO orders (id) VALUES (1)`.execute(trx);
      await fn(trx);
      await sql`INSERT INTO orders (id) VALUES (2)`.execute(trx);
      throw DECLINED;
    }),
  ).rejects.toBe(DECLINED);
}

describe("withTransaction on a fresh MariaDB database: the extension tables never commit the caller's transaction", () => {
  it("a rollback after the first grouped submit (in ctx.succeedIn's transaction too), debounced submit and send leaves no task, message or app row; a commit keeps them", async () => {
    const { store, app } = await fresh("trxext_ddl");
    await sql`CREATE TABLE orders (id INTEGER PRIMARY KEY)`.execute(app);
    const target = await store.submit({ name: "target" });
    const book = await store.submit({ name: "book" });
    const [claimed] = await store.claim({ queues: ["default"], names: ["book"], workerId: "w1" });
    expect(claimed?.id).toBe(book.id);

    // completeIn: the group tables' first use inside the settlement's transaction (ctx.succeedIn).
    await expect(
      store.completeIn({ taskId: book.id, workerId: "w1" }, async (trx) => {
        await sql`INSERT INTO orders (id) VALUES (7)`.execute(trx);
        await store.withTransaction(trx).submit({ name: "notify", group: "tenant-1" });
        throw DECLINED;
      }),
    ).rejects.toBe(DECLINED);
    expect([await countRows(app, "orders"), await store.list({ name: "notify" }), (await store.get(book.id))?.status]).toEqual([0, [], "running"]);

    await rolledBack(app, (trx) => store.withTransaction(trx).submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } }));
    expect([await countRows(app, "orders"), await store.list({ name: "ship" }), await store.getByKey("ship:1")]).toEqual([0, [], null]);

    await rolledBack(app, (trx) => (store.withTransaction(trx) as TaskStore & TaskStepStore).send({ taskId: target.id, name: "go", payload: { x: 1 } }));
    expect([await countRows(app, "orders"), await countRows(app, "cairnq_ext_messages")]).toEqual([0, 0]);
    expect((await store.list()).map((t) => t.name).sort()).toEqual(["book", "target"]);

    // The same writes, committed: the view uses the tables the store created.
    await app.transaction().execute(async (trx) => {
      const view = store.withTransaction(trx) as TaskStore & TaskStepStore;
      await sql`INSERT INTO orders (id) VALUES (3)`.execute(trx);
      await view.submit({ name: "notify", group: "tenant-1" });
      await view.submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } });
      await view.send({ taskId: target.id, name: "go", payload: { x: 1 } });
    });
    expect([await countRows(app, "orders"), (await store.list({ name: "notify" })).length, (await store.getByKey("ship:1"))?.name, await countRows(app, "cairnq_ext_messages")]).toEqual([
      1,
      1,
      "ship",
      1,
    ]);
  });
});

describe("withTransaction on a fresh MariaDB database after the caller wrote cairnq_tasks", () => {
  it("the store's own CREATE TABLE … REFERENCES cairnq_tasks does not wait for the caller, who inserted a task first (a wait would never end: the caller waits for it); the first use creates every feature's tables, so a later first use in the same transaction reads one created before its snapshot", async () => {
    const { store, app } = await fresh("trxext_fk");
    const target = await store.submit({ name: "target" });
    await app.transaction().execute(async (trx) => {
      const view = store.withTransaction(trx) as TaskStore & TaskStepStore;
      await view.submit({ name: "plain" });
      // The debounce's read begins the transaction's snapshot; the messages table must exist before it.
      await view.submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } });
      await view.send({ taskId: target.id, name: "go", payload: { x: 1 } });
      await view.submit({ name: "notify", group: "tenant-1" });
    });
    expect((await store.list()).map((t) => t.name).sort()).toEqual(["notify", "plain", "ship", "target"]);
    expect(await countRows(app, "cairnq_ext_messages")).toBe(1);
  }, 30_000);
});

describe("withTransaction on MariaDB: a retry or retryable fail marks a grouped task's row requeued with the transition", () => {
  it("retry, retryBatch and fail through a view of a store that never used groups: requeued when the caller commits, untouched when it rolls back; a group claim takes the task in its group's turn", async () => {
    const { dsn, store, app } = await fresh("trxext_requeue");
    // A second store on the database, which never used groups: its views learn that the group tables exist.
    const other = (): MySQLStore => {
      const opened = new MySQLStore(dsn);
      closers.push(() => opened.close());
      return opened;
    };
    await runViewRequeueMarks({
      store,
      app,
      inTransaction: (_store, fn) => app.transaction().execute(fn),
      other,
      afterFailed: async ({ y, z, v }) => {
        expect([await groupState(app, y.id), await groupState(app, z.id), await groupState(app, v.id)]).toEqual(["claimed", "claimed", "claimed"]);
      },
    });
  });
});
