/**
 * The backpressure gate inside a caller's transaction (`withTransaction`):
 * it checks the queue's depth once and never waits — under the server's
 * default REPEATABLE READ the transaction's snapshot would never see the
 * room a worker makes, so a wait could only end in `QueueFull` after
 * `maxQueueWaitMs` with the transaction held open all along. Needs
 * `CAIRNQ_TEST_MYSQL_DSN`.
 */
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { runTransactionViewGate, TRANSACTION_VIEW_GATES } from "@cairnq/test-support/transaction-view-gate";
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";

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

describe("the backpressure gate inside withTransaction on MySQL", () => {
  it.each(TRANSACTION_VIEW_GATES)("%s: a full queue rejects at once with QueueFull saying why, counting the transaction's own submits; nothing is written", async (_label, wrap) => {
    const store = new MySQLStore(dsn);
    stores.push(store);
    await store.connect();
    await runTransactionViewGate(store, wrap, (fn) => store.db.transaction().execute((trx) => fn(store.withTransaction(trx))));
  });
});
