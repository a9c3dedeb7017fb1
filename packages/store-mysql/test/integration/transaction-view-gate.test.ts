/**
 * The backpressure gate inside a caller's transaction (`withTransaction`):
 * it checks the queue's depth once and never waits — under the server's
 * default REPEATABLE READ the transaction's snapshot would never see the
 * room a worker makes, so a wait could only end in `QueueFull` after
 * `maxQueueWaitMs` with the transaction held open all along. Needs
 * `CAIRNQ_TEST_MYSQL_DSN`.
 */
import type { QueueDepthGate } from "@cairnq/protocol";
import { QueueFull } from "@cairnq/protocol";
import { BackpressureGateCore } from "@cairnq/protocol/sdk";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("viewgate");
});
afterAll(async () => {
  await admin.dropDatabase("viewgate");
  await admin.close();
});
const stores: MySQLStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await admin.emptyDatabase("viewgate");
});

/** A gate of limit 2 on queue `gated` whose every sleep fails the test: a submit in a transaction must never wait. */
function gateThatMustNotSleep(): BackpressureGateCore {
  return new BackpressureGateCore(
    { maxQueueDepth: { gated: 2 }, maxQueueWaitMs: 600_000 },
    { sleep: (ms) => Promise.reject(new Error(`the gate slept ${ms} ms while the caller's transaction stayed open`)) },
  );
}

const GATES: [string, (core: BackpressureGateCore) => QueueDepthGate][] = [
  ["the client's gate (BackpressureGateCore)", (core) => core],
  ["any other gate (here a wrapper without limitFor)", (core) => ({ acquire: (queue, store) => core.acquire(queue, store) })],
];

describe("the backpressure gate inside withTransaction on MySQL", () => {
  it.each(GATES)("%s: a full queue rejects at once with QueueFull saying why, counting the transaction's own submits; nothing is written", async (_label, wrap) => {
    const store = new MySQLStore(dsn);
    stores.push(store);
    await store.connect();
    store.queueDepthGate = wrap(gateThatMustNotSleep());
    await store.submit({ name: "outside", queue: "gated" });

    let inside: string | null = null;
    const failed = await store.db
      .transaction()
      .execute(async (trx) => {
        const view = store.withTransaction(trx);
        inside = (await view.submit({ name: "inside", queue: "gated" })).id; // room for one more
        await view.submit({ name: "inside", queue: "gated" }); // the first one, uncommitted, filled it
      })
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(QueueFull);
    expect(failed).toMatchObject({ queue: "gated", maxDepth: 2, waitedMs: 0 });
    expect((failed as Error).message).toMatch(/inside withTransaction a submit does not wait for room/);
    expect(inside).not.toBeNull();
    expect((await store.list({ queue: "gated" })).map((t) => t.name)).toEqual(["outside"]);

    const ok = await store.db.transaction().execute((trx) => store.withTransaction(trx).submit({ name: "inside", queue: "gated" }));
    const free = await store.db.transaction().execute((trx) => store.withTransaction(trx).submit({ name: "free", queue: "free" }));
    expect([(await store.get(ok.id))?.status, (await store.get(free.id))?.status]).toEqual(["queued", "queued"]);
  });
});
