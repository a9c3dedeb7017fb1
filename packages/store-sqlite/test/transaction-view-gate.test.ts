/**
 * The backpressure gate inside a caller's transaction (`withTransaction`):
 * it checks the queue's depth once and never waits, since waiting would hold
 * the transaction — on SQLite, the database's write lock — open while
 * workers try to drain the queue.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { runTransactionViewGate, TRANSACTION_VIEW_GATES } from "@cairnq/test-support/transaction-view-gate";
import { Kysely, SqliteDialect } from "kysely";
import { afterEach, beforeEach, describe, it } from "vitest";

let dir: string;
const closers: (() => Promise<void>)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-sqlite-gate-"));
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the backpressure gate inside withTransaction on SQLite", () => {
  it.each(TRANSACTION_VIEW_GATES)("%s: a full queue rejects at once with QueueFull saying why, counting the transaction's own submits; nothing is written", async (_label, wrap) => {
    const file = join(dir, "gate.db");
    const store = new SQLiteStore(file);
    const app = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) });
    closers.push(() => store.close(), () => app.destroy());
    await runTransactionViewGate(store, wrap, (fn) => store.transaction(app, (trx) => fn(store.withTransaction(trx))));
  });
});
