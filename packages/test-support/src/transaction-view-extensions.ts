/**
 * The extension tables through a `withTransaction` view, shared by the
 * SQLite, Postgres and MySQL tests: where DDL is transactional (SQLite,
 * Postgres) the first grouped or debounced submit or send creates its tables
 * in the caller's transaction, so they and everything else roll back with it;
 * and on every store a retry or retryable fail through a view marks a grouped
 * task's row `requeued` with the transition, so a group claim takes it back
 * in its group's turn (docs/protocol.md, "Groups"). MariaDB's own cases (its
 * DDL commits the open transaction) stay in store-mysql's tests.
 */
import type { Task, TaskStepStore, TaskStore, TransactionalTaskStore } from "@cairnq/protocol";
import { sql } from "kysely";
import type { Kysely } from "kysely";
import { expect } from "vitest";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's tables are created by the test.
type AnyDb = Kysely<any>;

/** The error the app's handler throws to roll its transaction back. */
const DECLINED = new Error("payment declined");

/** The number of rows of `table`. */
export async function countRows(db: AnyDb, table: string): Promise<number> {
  return Number((await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db)).rows[0]?.n);
}

/** The state of the group row of `taskId` (`cairnq_ext_task_groups`), `undefined` when it has none. */
export async function groupState(db: AnyDb, taskId: string): Promise<string | undefined> {
  const rows = (await sql<{ state: unknown }>`SELECT state FROM cairnq_ext_task_groups WHERE task_id = ${taskId}`.execute(db)).rows;
  return rows[0] === undefined ? undefined : String(rows[0].state);
}

/** A store on a fresh database (no extension table yet), connected, and the app's own Kysely instance on it. */
export interface ViewExtensionsSetup<S extends TransactionalTaskStore<AnyDb>> {
  readonly store: S;
  readonly app: AnyDb;
  /**
   * Runs `fn` in one of the app's own transactions, opened as `store` needs it (SQLite: `store.transaction(app, fn)`;
   * elsewhere `app.transaction().execute(fn)`): commits when `fn` resolves, rolls back when it throws.
   */
  readonly inTransaction: <T>(store: S, fn: (trx: AnyDb) => Promise<T>) => Promise<T>;
}

/**
 * Asserts, on a store whose DDL is transactional, that a rollback after the first grouped submit (in `completeIn`'s
 * transaction too), debounced submit and send leaves no task, message or app row, and that a commit keeps them.
 * Creates the app's table `orders`.
 *
 * @example
 * it("…", async () => runViewExtensionsRollback({ store, app, inTransaction: (s, fn) => s.transaction(app, fn) }));
 */
export async function runViewExtensionsRollback<S extends TransactionalTaskStore<AnyDb>>({ store, app, inTransaction }: ViewExtensionsSetup<S>): Promise<void> {
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
  expect([await countRows(app, "orders"), await store.list({ name: "notify" }), (await store.get(book.id))?.status]).toEqual([0, [], "running"]);
  const rolledBack = (fn: (trx: AnyDb) => Promise<unknown>): Promise<unknown> =>
    inTransaction(store, async (trx) => {
      await sql`INSERT INTO orders (id) VALUES (1)`.execute(trx);
      await fn(trx);
      await sql`INSERT INTO orders (id) VALUES (2)`.execute(trx);
      throw DECLINED;
    });
  await expect(rolledBack((trx) => store.withTransaction(trx).submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } }))).rejects.toBe(DECLINED);
  await expect(rolledBack((trx) => (store.withTransaction(trx) as TaskStore & TaskStepStore).send({ taskId: target.id, name: "go", payload: { x: 1 } }))).rejects.toBe(DECLINED);
  expect([await countRows(app, "orders"), (await store.list()).map((t) => t.name).sort(), await store.getByKey("ship:1")]).toEqual([0, ["book", "target"], null]);

  await inTransaction(store, async (trx) => {
    const view = store.withTransaction(trx) as TaskStore & TaskStepStore;
    await view.submit({ name: "notify", group: "tenant-1" });
    await view.submit({ name: "ship", key: "ship:1", debounce: { delayMs: 1000 } });
    await view.send({ taskId: target.id, name: "go", payload: { x: 1 } });
  });
  expect([(await store.list({ name: "notify" })).length, (await store.getByKey("ship:1"))?.name, await countRows(app, "cairnq_ext_messages")]).toEqual([1, "ship", 1]);
}

/** The grouped tasks {@link runViewRequeueMarks} failed before its retries: `y` and `z` for good, `v` claimed with an attempt left. */
export interface FailedGroupTasks {
  readonly y: Task;
  readonly z: Task;
  readonly v: Task;
}

/** What {@link runViewRequeueMarks} needs beyond {@link ViewExtensionsSetup}. */
export interface ViewRequeueSetup<S extends TransactionalTaskStore<AnyDb>> extends ViewExtensionsSetup<S> {
  /** A second store on the same database, which never used groups (closed after the test by the caller). */
  readonly other: () => S;
  /** Checks of the caller's own, once `y` and `z` failed for good (before `X`'s backlog is submitted). */
  readonly afterFailed?: (tasks: FailedGroupTasks) => Promise<void>;
}

/**
 * Asserts that retry, retryBatch and fail through a view of a store that never used groups mark the grouped task's
 * row requeued when the caller commits (untouched on rollback), and that a group claim takes it in its group's turn.
 * Uses the name `g` and the groups `V`, `X`, `Y`, `Z`.
 *
 * @example
 * it("…", async () => runViewRequeueMarks({ store, app, inTransaction: (_s, fn) => app.transaction().execute(fn), other: () => openStore() }));
 */
export async function runViewRequeueMarks<S extends TransactionalTaskStore<AnyDb>>({ store, app, inTransaction, other: openOther, afterFailed }: ViewRequeueSetup<S>): Promise<void> {
  const flowControl = { g: { groupConcurrency: 1 } };
  const claimGrouped = (workerId: string, limit: number): Promise<Task[]> => store.claim({ queues: ["default"], names: ["g"], limit, workerId, flowControl });
  const y = await store.submit({ name: "g", group: "Y", maxAttempts: 1 });
  const z = await store.submit({ name: "g", group: "Z", maxAttempts: 1 });
  const v = await store.submit({ name: "g", group: "V", maxAttempts: 2 });
  expect((await claimGrouped("w1", 3)).map((t) => t.id).sort()).toEqual([y.id, z.id, v.id].sort());
  for (const id of [y.id, z.id]) await store.fail({ taskId: id, workerId: "w1", error: { code: "boom" }, retryable: false });
  await afterFailed?.({ y, z, v });
  // X's backlog, queued before the retries: without the mark the retried tasks wait behind all of it.
  for (let i = 0; i < 10; i++) await store.submit({ name: "g", group: "X" });

  // A second store on the database, which never used groups: its views learn that the group tables exist.
  const other = openOther();
  await expect(
    inTransaction(other, async (trx) => {
      await other.withTransaction(trx).retry(y.id);
      throw DECLINED;
    }),
  ).rejects.toBe(DECLINED);
  expect([(await store.get(y.id))?.status, await groupState(app, y.id)]).toEqual(["failed", "claimed"]);

  await inTransaction(other, async (trx) => {
    const view = other.withTransaction(trx);
    await view.retry(y.id);
    expect(await view.retryBatch({ status: "failed", name: "g" })).toEqual([z.id]);
    await view.fail({ taskId: v.id, workerId: "w1", error: { code: "again" }, retryable: true, delayMs: 0 });
  });
  expect([await groupState(app, y.id), await groupState(app, z.id), await groupState(app, v.id)]).toEqual(["requeued", "requeued", "requeued"]);
  // One task per group: X once, and each requeued task in its group's turn (the head holds only X's backlog).
  const next = await claimGrouped("w2", 4);
  expect(next.map((t) => t.id).filter((id) => [y.id, z.id, v.id].includes(id)).sort()).toEqual([y.id, z.id, v.id].sort());
}
