/**
 * The extension tables through a `withTransaction` view on Postgres, whose DDL
 * is transactional: the first grouped or debounced submit or send creates its
 * tables in the caller's transaction, so they and everything else roll back
 * with it; and a retry or retryable fail through a view marks a grouped task's
 * row `requeued` with the transition, so a group claim takes it back in its
 * group's turn (docs/protocol.md, "Groups").
 */
import type { Task, TaskStepStore, TaskStore } from "@cairnq/protocol";
import { Kysely, PostgresDialect, sql } from "kysely";
import type { Transaction } from "kysely";
import { describe, expect, it } from "vitest";
import type { PostgresStore } from "../../src/index.js";
import { openStore, pgDsn, poolFor } from "../helpers.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's tables are created by the test.
type AnyDb = Kysely<any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above.
type AnyTrx = Transaction<any>;

const DECLINED = new Error("payment declined");

/** A store on a fresh schema and the app's own Kysely instance on it (closed after the test with the pool). */
async function fresh(): Promise<{ store: PostgresStore; app: AnyDb }> {
  const store = openStore();
  await store.connect();
  return { store, app: new Kysely({ dialect: new PostgresDialect({ pool: poolFor(store.schema as string) }) }) };
}

async function count(db: AnyDb, table: string): Promise<number> {
  return Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(db)).rows[0]?.n);
}

async function groupState(db: AnyDb, taskId: string): Promise<string | undefined> {
  return (await sql<{ state: string }>`SELECT state FROM cairnq_ext_task_groups WHERE task_id = ${taskId}`.execute(db)).rows[0]?.state;
}

describe("withTransaction and the extension tables on Postgres", () => {
  it("a rollback after the first grouped submit (in completeIn's transaction too), debounced submit and send on a fresh schema leaves no task, message or app row; a commit keeps them", async () => {
    const { store, app } = await fresh();
    await sql`CREATE TABLE orders (id integer PRIMARY KEY)`.execute(app);
    const target = await store.submit({ name: "target" });
    const book = await store.submit({ name: "book" });
    await store.claim({ queues: ["default"], names: ["book"], workerId: "w1" });
    await expect(
      store.completeIn({ taskId: book.id, workerId: "w1" }, async (trx) => {
        await sql`INSERT INTO orders (id) VALUES (7)`.execute(trx);
        await store.withTransaction(trx).submit({ name: "notify", group: "tenant-1" });
        throw DECLINED;
      }),
    ).rejects.toBe(DECLINED);
    expect([await count(app, "orders"), await store.list({ name: "notify" }), (await store.get(book.id))?.status]).toEqual([0, [], "running"]);
    const rolledBack = (fn: (trx: AnyTrx) => Promise<unknown>): Promise<unknown> =>
      app.transaction().execute(async (trx) => {
        await sql`INSERT INTO orders (id) VALUES (1)`.execute(trx);
        await fn(trx);
        await sql`INSERT INTO orders (id) VALUES (2)`.execute(trx);
        throw DECLINED;
      });
    await expect(rolledBack((trx) => store.withTransaction(trx).submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } }))).rejects.toBe(DECLINED);
    await expect(rolledBack((trx) => (store.withTransaction(trx) as TaskStore & TaskStepStore).send({ taskId: target.id, name: "go", payload: { x: 1 } }))).rejects.toBe(DECLINED);
    expect([await count(app, "orders"), (await store.list()).map((t) => t.name).sort(), await store.getByKey("ship:1")]).toEqual([0, ["book", "target"], null]);

    await app.transaction().execute(async (trx) => {
      const view = store.withTransaction(trx) as TaskStore & TaskStepStore;
      await view.submit({ name: "notify", group: "tenant-1" });
      await view.submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } });
      await view.send({ taskId: target.id, name: "go", payload: { x: 1 } });
    });
    expect([(await store.list({ name: "notify" })).length, (await store.getByKey("ship:1"))?.name, await count(app, "cairnq_ext_messages")]).toEqual([1, "ship", 1]);
  });

  it("retry, retryBatch and fail through a view of a store that never used groups mark the grouped task's row requeued when the caller commits (untouched on rollback); a group claim takes it in its group's turn", async () => {
    const { store, app } = await fresh();
    const flowControl = { g: { groupConcurrency: 1 } };
    const claimGrouped = (workerId: string, limit: number): Promise<Task[]> => store.claim({ queues: ["default"], names: ["g"], limit, workerId, flowControl });
    const y = await store.submit({ name: "g", group: "Y", maxAttempts: 1 });
    const z = await store.submit({ name: "g", group: "Z", maxAttempts: 1 });
    const v = await store.submit({ name: "g", group: "V", maxAttempts: 2 });
    expect((await claimGrouped("w1", 3)).map((t) => t.id).sort()).toEqual([y.id, z.id, v.id].sort());
    for (const id of [y.id, z.id]) await store.fail({ taskId: id, workerId: "w1", error: { code: "boom" }, retryable: false });
    // X's backlog, queued before the retries: without the mark the retried tasks wait behind all of it.
    for (let i = 0; i < 10; i++) await store.submit({ name: "g", group: "X" });

    // A second store on the schema, which never used groups: its views learn that the group tables exist.
    const other = openStore(pgDsn(), { schema: store.schema as string });
    await expect(
      app.transaction().execute(async (trx) => {
        await other.withTransaction(trx).retry(y.id);
        throw DECLINED;
      }),
    ).rejects.toBe(DECLINED);
    expect([(await store.get(y.id))?.status, await groupState(app, y.id)]).toEqual(["failed", "claimed"]);

    await app.transaction().execute(async (trx) => {
      const view = other.withTransaction(trx);
      await view.retry(y.id);
      expect(await view.retryBatch({ status: "failed", name: "g" })).toEqual([z.id]);
      await view.fail({ taskId: v.id, workerId: "w1", error: { code: "again" }, retryable: true, delayMs: 0 });
    });
    expect([await groupState(app, y.id), await groupState(app, z.id), await groupState(app, v.id)]).toEqual(["requeued", "requeued", "requeued"]);
    const next = await claimGrouped("w2", 4);
    expect(next.map((t) => t.id).filter((id) => [y.id, z.id, v.id].includes(id)).sort()).toEqual([y.id, z.id, v.id].sort());
  });
});
