/**
 * The README's `ctx.succeedIn(fn)` example (support/succeed-in-example.ts) run
 * on a worker over SQLite on a scratch file, with the example's `bookings`
 * table; Postgres is in integration/succeed-in-readme.test.ts. Checked from
 * outside: the task succeeded with the handler's result, and the booking it
 * wrote committed with it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { describe, expect, it } from "vitest";
import { runExample } from "./support/succeed-in-example.js";

describe("the README's succeedIn example", () => {
  it("SQLite: the booking commits together with the settlement", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-readme-succeed-in-"));
    const file = join(dir, "shop.db");
    const app = new Database(file);
    try {
      app.exec("CREATE TABLE bookings (order_id INTEGER PRIMARY KEY)");
      const store = new SQLiteStore(file);
      try {
        expect(await runExample(store)).toEqual({ booked: 42 });
      } finally {
        await store.close();
      }
      expect(app.prepare("SELECT order_id FROM bookings").all()).toEqual([{ order_id: 42 }]);
    } finally {
      app.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
