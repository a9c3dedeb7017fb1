/**
 * `client.withTransaction(trx)`: a client bound to the caller's transaction
 * (SQLite here; both backends in the umbrella's transactions test).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "@cairnq/conformance";
import { CairnQError, MAX_DELAY_MS, UnsupportedBackend } from "@cairnq/protocol";
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

it("refuses withTransaction on a client already bound to a transaction, saying so, not that the store has no transactions", async () => {
  const store = new SQLiteStore(join(dir, "cairnq.db"));
  const client = new CairnQ(store);
  await store.transaction(store.db, async (trx) => {
    const bound = client.withTransaction(trx);
    const nested = ((): unknown => {
      try {
        bound.withTransaction(trx);
        return null;
      } catch (err) {
        return err;
      }
    })();
    expect(nested).toBeInstanceOf(CairnQError);
    expect(nested).not.toBeInstanceOf(UnsupportedBackend);
    expect((nested as Error).message).toBe(
      "withTransaction cannot run on a client already bound to a transaction (this client came from withTransaction): " +
        "use it directly, its writes already run in that transaction; to bind another transaction, call withTransaction on the unbound client",
    );
    // The bound client still works.
    await bound.submit("job", {});
  });
  expect((await client.list()).map((task) => task.name)).toEqual(["job"]);
  await client.close();
});

it("throws UnsupportedBackend on a store without transactions, naming every store that has them", () => {
  const client = new CairnQ(new MemoryStore());
  expect(() => client.withTransaction({})).toThrow(UnsupportedBackend);
  expect(() => client.withTransaction({})).toThrow(
    "withTransaction needs a store that writes in your transaction (capabilities.transactionalComplete: SQLiteStore, PostgresStore, MySQLStore); this MemoryStore has none",
  );
});

it("refuses a runAtDelayMs or debounce delay past MAX_DELAY_MS, from the client and from a transaction, writing nothing", async () => {
  const store = new SQLiteStore(join(dir, "cairnq.db"));
  const client = new CairnQ(store);
  const far = MAX_DELAY_MS + 1;
  await expect(client.submit("job", {}, { runAtDelayMs: far })).rejects.toMatchObject({ name: "InvalidArgument", argument: "runAtDelayMs" });
  await expect(client.submit("job", {}, { key: "d", debounce: { delayMs: far } })).rejects.toMatchObject({ name: "InvalidArgument", argument: "debounce.delayMs" });
  await store.transaction(store.db, async (trx) => {
    const bound = client.withTransaction(trx);
    await expect(bound.submit("job", {}, { runAtDelayMs: Number.MAX_SAFE_INTEGER })).rejects.toThrow(/^runAtDelayMs asks for a delay of 9007199254740991 ms, over MAX_DELAY_MS/);
    await bound.submit("kept", {});
  });
  expect((await client.list()).map((task) => task.name)).toEqual(["kept"]);
  const atBound = await client.submit("job", {}, { runAtDelayMs: MAX_DELAY_MS });
  expect(atBound.run_at_ms - atBound.created_at_ms).toBe(MAX_DELAY_MS);
  await client.close();
});
