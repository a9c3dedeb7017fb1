import { createRequire } from "node:module";
import { CairnQError, InvalidArgument } from "@cairnq/protocol";
import { Kysely, SqliteDialect } from "kysely";
import { describe, expect, it } from "vitest";
import { isBusyError } from "../../src/busy.js";
import type { BetterSqlite3Class } from "../../src/index.js";
import { betterSqlite3Driver, DatabaseBusy, loadSQLiteDriver, openSQLiteDatabase, SQLiteStore } from "../../src/index.js";
import { openStore, tempFile } from "../helpers.js";

// This file runs on Node 20 with better-sqlite3 installed (the fast tier), where neither node:sqlite nor
// bun:sqlite exists; under another runtime its missing-driver case fails rather than skipping. The same store
// on node:sqlite (Node 22, 24) and bun:sqlite (Bun) is checked by the runtimes phase (test/runtimes/run-kit.mjs).

describe("SQLite driver choice", () => {
  it("takes better-sqlite3 when it is installed and no driver is named", async () => {
    const store = openStore();
    expect(store.driver).toBeNull();
    await store.connect();
    expect(store.driver).toBe("better-sqlite3");
  });

  it("rejects an unknown driver name up front with the names it takes", () => {
    const err = (() => {
      try {
        return new SQLiteStore(tempFile(), { driver: "sqlite3" as never });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(InvalidArgument);
    expect((err as Error).message).toMatch(/driver must be one of "better-sqlite3", "node:sqlite", "bun:sqlite".*got "sqlite3"/);
  });

  it("a chosen driver this runtime lacks fails the first open, saying why and what to do", async () => {
    const store = openStore(tempFile(), { driver: "node:sqlite" });
    const err = await store.connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CairnQError);
    expect((err as Error).message).toMatch(/cannot use the SQLite driver 'node:sqlite' you chose on Node v20.*Run on Node 22\.16 or later/);
    const bun = await openStore(tempFile(), { driver: "bun:sqlite" }).connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect((bun as Error).message).toMatch(/'bun:sqlite'.*exists only under Bun.*Run under Bun/);
  });

  it("loadSQLiteDriver opens connections whose statements bind ?1 … ?n by position and return plain row objects", () => {
    const driver = loadSQLiteDriver("better-sqlite3");
    const db = driver.openConnection(":memory:", 0);
    try {
      db.exec("CREATE TABLE t (a integer, b text)");
      const insert = db.prepare("INSERT INTO t VALUES (?1, ?2), (?1, ?2 || 'x')");
      expect(insert.reader).toBe(false);
      expect(Number(insert.run([7, "s"]).changes)).toBe(2);
      const select = db.prepare("SELECT a, b FROM t ORDER BY b");
      expect(select.reader).toBe(true);
      const rows = select.all([]);
      expect(rows).toEqual([
        { a: 7, b: "s" },
        { a: 7, b: "sx" },
      ]);
      expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
      expect(db.prepare("SELECT a FROM t WHERE b = ?1").get(["none"])).toBeUndefined();
      expect(db.inTransaction).toBe(false);
      db.exec("BEGIN");
      expect(db.inTransaction).toBe(true);
      db.exec("ROLLBACK");
    } finally {
      db.close();
    }
    expect(db.open).toBe(false);
  });

  it("takes a driver object of your own (a better-sqlite3 copy you loaded), and rejects an object that is not one", async () => {
    const require = createRequire(import.meta.url);
    const modulePath = require.resolve("better-sqlite3");
    let opened = 0;
    const own = betterSqlite3Driver(require(modulePath) as BetterSqlite3Class, modulePath);
    const counting = { ...own, openConnection: (file: string, ms: number) => (opened++, own.openConnection(file, ms)) };
    const store = openStore(tempFile(), { driver: counting });
    await store.submit({ name: "job" });
    expect(store.driver).toBe("better-sqlite3");
    expect(opened).toBe(2); // the writer and the reader
    expect(() => new SQLiteStore(tempFile(), { driver: { name: "x" } as never })).toThrow(/or a SQLiteDriver object.*got an object/);
  });

  it("openSQLiteDatabase gives Kysely's SqliteDialect a database on the chosen driver, for store.transaction", async () => {
    const file = tempFile();
    const store = openStore(file);
    const appDb = new Kysely<{ orders: { id: string } }>({ dialect: new SqliteDialect({ database: openSQLiteDatabase(file, { driver: "better-sqlite3" }) }) });
    try {
      await store.connect();
      await appDb.schema.createTable("orders").addColumn("id", "text", (c) => c.primaryKey()).execute();
      await store.transaction(appDb, async (trx) => {
        await trx.insertInto("orders").values({ id: "o1" }).execute();
        await store.withTransaction(trx).submit({ name: "ship", payload: { orderId: "o1" } });
      });
      expect(await appDb.selectFrom("orders").selectAll().execute()).toEqual([{ id: "o1" }]);
      expect((await store.list({ name: "ship" })).map((task) => (task.payload as { orderId: string }).orderId)).toEqual(["o1"]);
    } finally {
      await appDb.destroy();
    }
    expect(() => openSQLiteDatabase(tempFile(), { driver: "bun:sqlite" })).toThrow(/cannot use the SQLite driver 'bun:sqlite'/);
  });

  it("recognizes busy errors as each driver raises them", () => {
    // better-sqlite3 and bun:sqlite: by name; node:sqlite: code ERR_SQLITE_ERROR with the number in errcode.
    expect(isBusyError({ code: "SQLITE_BUSY" })).toBe(true);
    expect(isBusyError({ code: "ERR_SQLITE_ERROR", errcode: 5, errstr: "database is locked" })).toBe(true);
    expect(isBusyError({ code: "ERR_SQLITE_ERROR", errcode: 517 })).toBe(true);
    expect(isBusyError({ code: "ERR_SQLITE_ERROR", errcode: 6 })).toBe(false);
    expect(isBusyError({ code: "ERR_SQLITE_ERROR", errcode: 1 })).toBe(false);
    expect(new DatabaseBusy("/x.db", 10, { code: "ERR_SQLITE_ERROR", errcode: 517 }).code).toBe("SQLITE_BUSY_SNAPSHOT");
    expect(new DatabaseBusy("/x.db", 10, { code: "ERR_SQLITE_ERROR", errcode: 5 }).code).toBe("SQLITE_BUSY");
  });
});
