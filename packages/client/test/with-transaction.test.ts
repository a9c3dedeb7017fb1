/**
 * `client.withTransaction(trx)`: a client bound to the caller's transaction
 * (SQLite here; both backends in the umbrella's transactions test).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "@cairnq/conformance";
import { UnsupportedBackend } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterEach, beforeEach, expect, it } from "vitest";
import { CairnQ } from "../src/index.js";

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-client-txn-"));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

it("binds submit, cancel and retry to the transaction and refuses wait, call and watch", async () => {
  const store = new SQLiteStore(join(dir, "cairnq.db"));
  const client = new CairnQ(store);
  const id = await store.transaction(store.db, async (trx) => {
    const bound = client.withTransaction(trx);
    const task = await bound.submit("job", { n: 1 });
    expect(await bound.cancel(task.id)).toMatchObject({ status: "canceled" });
    expect(await bound.retry(task.id)).toMatchObject({ status: "queued" });
    await expect(bound.call("job")).rejects.toThrow(/call cannot run on a client bound to a transaction/);
    await expect(bound.waitByKey("k")).rejects.toThrow(/waitByKey cannot run/);
    expect(() => bound.watch({}, () => {})).toThrow(/watch cannot run/);
    await bound.close(); // closes only the binding
    return task.id;
  });
  expect(await client.get(id)).toMatchObject({ status: "queued" });
  await client.close();
});

it("throws UnsupportedBackend on a store without transactions", () => {
  const client = new CairnQ(new MemoryStore());
  expect(() => client.withTransaction({})).toThrow(UnsupportedBackend);
  expect(() => client.withTransaction({})).toThrow(/withTransaction needs a store that writes in your transaction/);
});
