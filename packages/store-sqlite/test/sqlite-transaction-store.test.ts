/**
 * Transactions on SQLite: `completeIn` on the store's writer, the
 * `withTransaction` view over the caller's own connection, and
 * `transaction(db, fn)`, which begins it without stalling the store's own
 * writes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { InvalidArgument, LostLease } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { countRows, runViewExtensionsRollback, runViewRequeueMarks } from "@cairnq/test-support/transaction-view-extensions";
import { CompiledQuery, Kysely, sql, SqliteDialect } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's tables are created by the test.
type AnyDb = Kysely<any>;

let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-sqlite-txn-"));
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(dir, { recursive: true, force: true });
});

function open(file = join(dir, "app.db")): { store: SQLiteStore; app: AnyDb } {
  const store = new SQLiteStore(file);
  const app: AnyDb = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) });
  closers.push(() => store.close(), () => app.destroy());
  return { store, app };
}

describe("completeIn on SQLite", () => {
  it("commits the handler's write with the settlement, and rolls it back on LostLease", async () => {
    const { store, app } = open();
    await sql`CREATE TABLE invoices (task_id text NOT NULL)`.execute(app);
    const w = newWorkerId();
    const a = await store.submit({ name: "bill" });
    await store.claim({ queues: ["default"], workerId: w });
    const out = await store.completeIn({ taskId: a.id, workerId: w, attempt: 1 }, async (trx) => {
      await sql`INSERT INTO invoices (task_id) VALUES (${a.id})`.execute(trx);
      return { billed: true };
    });
    expect(out).toMatchObject({ result: { billed: true }, task: { status: "succeeded", result: { billed: true } } });
    expect(await countRows(app, "invoices")).toBe(1);

    const b = await store.submit({ name: "bill" });
    await store.claim({ queues: ["default"], workerId: w });
    await expect(
      store.completeIn({ taskId: b.id, workerId: w, attempt: 2 }, async (trx) => {
        await sql`INSERT INTO invoices (task_id) VALUES (${b.id})`.execute(trx);
        return null;
      }),
    ).rejects.toBeInstanceOf(LostLease);
    expect(await countRows(app, "invoices")).toBe(1);
    expect((await store.get(b.id))?.status).toBe("running");
  });

  it("a child submitted through withTransaction(trx) inside it commits with the settlement", async () => {
    const { store } = open();
    const w = newWorkerId();
    const parent = await store.submit({ name: "parent" });
    await store.claim({ queues: ["default"], workerId: w });
    const { result } = await store.completeIn({ taskId: parent.id, workerId: w }, async (trx) => {
      const child = await store.withTransaction(trx).submit({ name: "child", parentId: parent.id, rootId: parent.id });
      return { child: child.id };
    });
    expect(await store.get(result.child)).toMatchObject({ status: "queued", parent_id: parent.id });
  });
});

describe("withTransaction and transaction(db, fn)", () => {
  it("write tasks in the caller's transaction: rollback leaves none, commit keeps them, while the store's own writes keep flowing", async () => {
    const { store, app } = open();
    await store.connect();
    await sql`CREATE TABLE orders (id integer PRIMARY KEY)`.execute(app);
    // Concurrent writes through the store itself while app transactions run: none may deadlock or fail busy.
    const background = Promise.all(Array.from({ length: 40 }, (_, i) => store.submit({ name: "background", payload: { i } })));
    await expect(
      store.transaction(app, async (trx) => {
        await trx.insertInto("orders").values({ id: 1 }).execute();
        await store.withTransaction(trx).submit({ name: "ship", key: "ship:1" });
        throw new Error("rollback");
      }),
    ).rejects.toThrow("rollback");
    expect([await countRows(app, "orders"), (await store.list({ name: "ship" })).length, await store.getByKey("ship:1")]).toEqual([0, 0, null]);

    const shipped = await store.transaction(app, async (trx) => {
      await trx.insertInto("orders").values({ id: 2 }).execute();
      const view = store.withTransaction(trx);
      const task = await view.submit({ name: "ship", key: "ship:2" });
      expect(await view.getByKey("ship:2")).toMatchObject({ id: task.id });
      expect((await view.submitOutcome({ name: "ship", key: "ship:2" })).created).toBe(false);
      return task;
    });
    await background;
    expect([await countRows(app, "orders"), (await store.list({ name: "ship" })).map((t) => t.id)]).toEqual([1, [shipped.id]]);
    expect((await store.list({ name: "background", limit: 100 })).length).toBe(40);
  });

  it("a view's task-done wait reads the task as its copied capabilities say (taskDoneWakeReads): a task already terminal ends it at once, with its row", async () => {
    const { store, app } = open();
    await store.connect();
    const task = await store.submit({ name: "done-before" });
    const [claimed] = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, limit: 1 });
    expect(claimed?.id).toBe(task.id);
    await store.complete({ taskId: task.id, workerId: "w1", result: { ok: true } });
    const woke = await store.transaction(app, async (trx) => {
      const view = store.withTransaction(trx);
      expect(view.capabilities.taskDoneWakeReads).toBe(true);
      // A plain sleep would resolve with nothing, after the whole timeout.
      return view.taskDoneWake(task.id, 5_000);
    });
    expect(woke).toEqual(await store.get(task.id));
  });

  it("once the transaction has rolled back or committed, its trx refuses every statement (Kysely's, raw, and withTransaction's) and writes nothing", async () => {
    const { store, app } = open();
    await sql`CREATE TABLE orders (id integer PRIMARY KEY)`.execute(app);
    const ended: { trx: AnyDb; how: string }[] = [];
    await expect(
      store.transaction(app, async (trx) => {
        ended.push({ trx, how: "rolled back" });
        throw new Error("payment declined");
      }),
    ).rejects.toThrow("payment declined");
    await store.transaction(app, async (trx) => {
      ended.push({ trx, how: "committed" });
    });
    for (const [i, { trx, how }] of ended.entries()) {
      const refused = new RegExp(`already ${how}, so this statement was not run`);
      await expect(trx.insertInto("orders").values({ id: i }).execute()).rejects.toThrow(refused);
      await expect(sql`INSERT INTO orders (id) VALUES (${i})`.execute(trx)).rejects.toThrow(refused);
      await expect(trx.executeQuery(CompiledQuery.raw("INSERT INTO orders (id) VALUES (?)", [i]))).rejects.toThrow(refused);
      await expect(store.withTransaction(trx).submit({ name: "late" })).rejects.toThrow(refused);
      await expect(trx.transaction().execute(() => Promise.resolve())).rejects.toThrow(/nested transaction/);
    }
    // A statement fn scheduled without awaiting it, reaching trx after the COMMIT, is refused too (not run in autocommit).
    let late: Promise<unknown> = Promise.resolve();
    await store.transaction(app, async (trx) => {
      await trx.insertInto("orders").values({ id: 10 }).execute();
      late = new Promise((resolve) => setImmediate(resolve)).then(() => trx.insertInto("orders").values({ id: 11 }).execute());
    });
    await expect(late).rejects.toThrow(/already committed/);
    expect([(await app.selectFrom("orders").select("id").execute()).map((r) => r.id), await store.list({ name: "late" })]).toEqual([[10], []]);
    // The app's connection is free again for its own statements.
    await app.insertInto("orders").values({ id: 12 }).execute();
    expect(await countRows(app, "orders")).toBe(2);
  });

  it("checks that the transaction is on the store's file, and refuses bad arguments", async () => {
    const { store } = open();
    const { app: other } = open(join(dir, "other.db"));
    await sql`CREATE TABLE t (x integer)`.execute(other);
    await expect(store.transaction(other, (trx) => store.withTransaction(trx).submit({ name: "lost" }))).rejects.toThrow(/not on this store's file/);
    expect(await store.list()).toEqual([]);
    expect(() => store.withTransaction(null as never)).toThrow(InvalidArgument);
    await expect(store.transaction(null as never, () => Promise.resolve())).rejects.toBeInstanceOf(InvalidArgument);
    await expect(store.transaction(other, null as never)).rejects.toBeInstanceOf(InvalidArgument);

    const memory = new SQLiteStore(":memory:");
    closers.push(() => memory.close());
    await expect(memory.transaction(other, (trx) => memory.withTransaction(trx).submit({ name: "x" }))).rejects.toThrow(/in memory/);
  });
});

describe("withTransaction and the extension tables", () => {
  it("a rollback after the first grouped submit (in completeIn's transaction too), debounced submit and send on a fresh file leaves no task, message or app row; a commit keeps them", async () => {
    const { store, app } = open();
    await runViewExtensionsRollback({ store, app, inTransaction: (s, fn) => s.transaction(app, fn) });
  });

  it("retry, retryBatch and fail through a view of a store that never used groups mark the grouped task's row requeued when the caller commits (untouched on rollback); a group claim takes it in its group's turn", async () => {
    const { store, app } = open();
    await runViewRequeueMarks({ store, app, inTransaction: (s, fn) => s.transaction(app, fn), other: () => open(join(dir, "app.db")).store });
  });
});
