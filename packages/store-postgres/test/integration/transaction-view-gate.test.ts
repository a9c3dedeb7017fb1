/**
 * The backpressure gate inside a caller's transaction (`withTransaction`):
 * it checks the queue's depth once and never waits, since waiting would hold
 * the caller's transaction open — the same rule as on SQLite and MySQL.
 */
import { runTransactionViewGate, TRANSACTION_VIEW_GATES } from "@cairnq/test-support/transaction-view-gate";
import { describe, it } from "vitest";
import { openStore } from "../helpers.js";

describe("the backpressure gate inside withTransaction on Postgres", () => {
  it.each(TRANSACTION_VIEW_GATES)("%s: a full queue rejects at once with QueueFull saying why, counting the transaction's own submits; nothing is written", async (_label, wrap) => {
    const store = openStore();
    await store.connect();
    await runTransactionViewGate(store, wrap, (fn) => store.db.transaction().execute((trx) => fn(store.withTransaction(trx))));
  });
});
