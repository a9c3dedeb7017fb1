/**
 * Transactions on both backends: an app table and a task written
 * in one transaction through `client.withTransaction(trx)` — rolled back,
 * neither exists; committed, both do — and a real worker process SIGKILLed
 * inside `ctx.succeedIn`, between the app's write and the settlement: the
 * app's row is never visible without the settlement, and the task, recovered
 * by lease expiry, runs again in another process.
 *
 * The counts are printed (`[txn] …` lines) for the closing note.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { CairnQ } from "cairnq";
import type { PostgresStore, SQLiteStore } from "cairnq";
import type { TaskStepStore } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { Kysely, sql, SqliteDialect } from "kysely";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { closeAdmin, dropSchema, fixtureArg, freshSchemaName, pgDsn } from "../support/postgres.ts";
import { Children } from "../support/processes.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's tables are created by the test; no table types needed.
type AnyDb = Kysely<any>;

/** One fresh database: the client, the app's own Kysely instance, and how to run an app transaction on it. */
interface TxnBackend {
  label: string;
  fixtureArg: string;
  client: CairnQ;
  app: AnyDb;
  /** Runs `fn` in one app transaction, the way that backend's README says to. */
  transaction<T>(fn: (trx: AnyDb) => Promise<T>): Promise<T>;
  dispose(): Promise<void>;
}

const backends: { label: string; fresh(): Promise<TxnBackend> }[] = [
  {
    label: "sqlite",
    async fresh() {
      const dir = await mkdtemp(join(tmpdir(), "cairnq-txn-"));
      const file = join(dir, "app.db");
      const client = CairnQ.sqlite(file);
      await client.connect();
      // The app's own connection to the same file, as an application has.
      const app: AnyDb = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) });
      const store = client.store as SQLiteStore;
      return {
        label: "sqlite",
        fixtureArg: `sqlite:${file}`,
        client,
        app,
        transaction: (fn) => store.transaction(app, fn),
        dispose: async () => {
          await app.destroy();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    label: "postgres",
    async fresh() {
      const schema = await freshSchemaName("cq_txn");
      const client = CairnQ.postgres(pgDsn(), { schema });
      await client.connect();
      // The store's own Kysely (its pool, search_path = the schema): what the README suggests with a DSN.
      const app = (client.store as PostgresStore).db as AnyDb;
      return {
        label: "postgres",
        fixtureArg: fixtureArg(schema),
        client,
        app,
        transaction: (fn) => app.transaction().execute(fn),
        dispose: () => dropSchema(schema),
      };
    },
  },
];

const children = new Children();
let opened: TxnBackend[] = [];

afterEach(async () => {
  await children.reap();
  for (const db of opened) {
    await db.client.close();
    await db.dispose();
  }
  opened = [];
});

afterAll(closeAdmin);

async function count(db: AnyDb, table: string): Promise<number> {
  const row = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db);
  return Number(row.rows[0]?.n ?? 0);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of backends) {
  describe(`transactions on ${backend.label}`, () => {
    it("cairnq.send inside a transaction: rolled back, the parked waiter stays parked and gets no message; committed, it is due and gets it", async () => {
      const db = await backend.fresh();
      opened.push(db);
      const store = db.client.store as TaskStepStore;
      const task = await db.client.submit("approve", {});
      const workerId = newWorkerId();
      const [claimed] = await store.claim({ queues: ["default"], workerId, leaseMs: 30_000 });
      const wait = { taskId: task.id, workerId, name: "go", kind: "wait" as const, seq: 1, message: "go", untilMs: PARK_FOREVER_AT_MS };
      expect(await store.parkStep({ ...wait, attempt: claimed?.attempt ?? 1 })).toEqual({ kind: "parked", status: "queued" });

      const failure = new Error("rolled back");
      await expect(
        db.transaction(async (trx) => {
          expect((await db.client.withTransaction(trx).send(task.id, "go", { n: 1 })).woke).toBe(true);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect((await db.client.get(task.id))?.run_at_ms).toBe(PARK_FOREVER_AT_MS);

      await db.transaction(async (trx) => {
        expect((await db.client.withTransaction(trx).send(task.id, "go", { n: 2 })).woke).toBe(true);
      });
      expect((await db.client.get(task.id))?.run_at_ms).toBeLessThanOrEqual(Date.now());
      const [resumed] = await store.claim({ queues: ["default"], workerId, leaseMs: 30_000 });
      expect(resumed?.id).toBe(task.id);
      // Only the committed message exists: the wait takes { n: 2 }.
      expect(await store.parkStep({ ...wait, attempt: resumed?.attempt ?? 1 })).toEqual({ kind: "ready", result: { n: 2 } });
    });

    it("an app row and a task in one transaction: rolled back, neither exists; committed, both do", async () => {
      const db = await backend.fresh();
      opened.push(db);
      await sql`CREATE TABLE app_orders (id integer PRIMARY KEY, item text NOT NULL)`.execute(db.app);
      const tasks = async (): Promise<number> => (await db.client.list({ name: "ship-order", limit: 1000 })).length;

      const failure = new Error("the app changed its mind");
      let submittedInRollback = "";
      await expect(
        db.transaction(async (trx) => {
          await trx.insertInto("app_orders").values({ id: 1, item: "kettle" }).execute();
          const task = await db.client.withTransaction(trx).submit("ship-order", { orderId: 1 }, { key: "ship:1" });
          submittedInRollback = task.id;
          // Inside the transaction the bound client sees its own task.
          expect(await db.client.withTransaction(trx).get(task.id)).toMatchObject({ status: "queued" });
          throw failure;
        }),
      ).rejects.toBe(failure);
      const afterRollback = { orders: await count(db.app, "app_orders"), tasks: await tasks() };
      expect(afterRollback).toEqual({ orders: 0, tasks: 0 });
      expect(await db.client.get(submittedInRollback)).toBeNull();
      expect(await db.client.getByKey("ship:1")).toBeNull();

      const committed = await db.transaction(async (trx) => {
        await trx.insertInto("app_orders").values({ id: 2, item: "teapot" }).execute();
        const bound = db.client.withTransaction(trx);
        const outcome = await bound.submitOutcome("ship-order", { orderId: 2 }, { key: "ship:2" });
        expect(outcome.created).toBe(true);
        await expect(bound.wait(outcome.task.id)).rejects.toThrow(/cannot run on a client bound to a transaction/);
        return outcome.task;
      });
      const afterCommit = { orders: await count(db.app, "app_orders"), tasks: await tasks() };
      expect(afterCommit).toEqual({ orders: 1, tasks: 1 });
      expect(await db.client.getByKey("ship:2")).toMatchObject({ id: committed.id, status: "queued", payload: { orderId: 2 } });

      // cancel through the transaction rolls back too.
      await expect(
        db.transaction(async (trx) => {
          expect(await db.client.withTransaction(trx).cancel(committed.id)).toMatchObject({ status: "canceled" });
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect((await db.client.get(committed.id))?.status).toBe("queued");

      console.log(
        `[txn] ${backend.label}: after rollback app_orders=${afterRollback.orders} tasks=${afterRollback.tasks}; ` +
          `after commit app_orders=${afterCommit.orders} tasks=${afterCommit.tasks}`,
      );
    });

    it("a worker SIGKILLed inside succeedIn, after the app's write: no app row without the settlement; recovered by lease expiry, the task runs again", async () => {
      const db = await backend.fresh();
      opened.push(db);
      await sql`CREATE TABLE app_bookings (order_id integer NOT NULL, attempt integer NOT NULL)`.execute(db.app);
      const options = { leaseMs: 600, heartbeatIntervalMs: 150, pollIntervalMs: 50 };

      const first = children.spawn(`${backend.label} worker 1`, "txn-worker.mjs", [db.fixtureArg, JSON.stringify({ ...options, hang: true })]);
      await first.next("ready");
      const task = await db.client.submit("book", { orderId: 7 });
      const written = await first.next("app-written");
      expect(written).toMatchObject({ taskId: task.id, attempt: 1 });
      first.proc.kill("SIGKILL");
      expect((await first.exitWithin(10_000)).signal).toBe("SIGKILL");

      const bookingsAfterKill = await count(db.app, "app_bookings");
      const rowAfterKill = await db.client.get(task.id);
      expect(bookingsAfterKill).toBe(0);
      expect(rowAfterKill).toMatchObject({ status: "running", attempt: 1, result: null });

      const second = children.spawn(`${backend.label} worker 2`, "txn-worker.mjs", [db.fixtureArg, JSON.stringify(options)]);
      await second.next("ready");
      const done = await db.client.wait(task.id, { timeoutMs: 20_000 });
      expect(done).toMatchObject({ status: "succeeded", attempt: 2, result: { orderId: 7, attempt: 2 } });
      expect(await second.next("app-written")).toMatchObject({ taskId: task.id, attempt: 2 });
      // Give a late duplicate (there must be none) a moment to show up before counting.
      await sleep(50);
      const bookings = (await sql<{ order_id: number; attempt: number }>`SELECT order_id, attempt FROM app_bookings`.execute(db.app)).rows;
      expect(bookings.map((b) => [Number(b.order_id), Number(b.attempt)])).toEqual([[7, 2]]);
      await children.stop(second);

      console.log(
        `[txn] ${backend.label} SIGKILL inside succeedIn: app_bookings=${bookingsAfterKill} task=${String(rowAfterKill?.status)} after the kill; ` +
          `after recovery app_bookings=${bookings.length} (attempt ${Number(bookings[0]?.attempt)}) task=${done.status} attempt=${done.attempt}`,
      );
    });
  });
}
