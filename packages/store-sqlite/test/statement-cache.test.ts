import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { CachingDatabase } from "../src/statement-cache.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof BetterSqlite3;

describe("statement cache rows (built from raw mode)", () => {
  it("rows equal better-sqlite3's own objects: keys in column order, a repeated name keeping the last value, __proto__ as an own key", () => {
    const raw = new Database(":memory:");
    const cached = new CachingDatabase();
    cached.attach(new Database(":memory:"));
    for (const db of [raw, cached.raw]) db.exec("CREATE TABLE t (id text PRIMARY KEY, n integer, j text); INSERT INTO t VALUES ('a', 1, '{}'), ('b', NULL, 'x')");
    const queries = [
      "SELECT * FROM t ORDER BY id",
      "SELECT n, id, n AS id FROM t ORDER BY id",
      `SELECT id AS "__proto__", n AS "constructor", j AS "a""b" FROM t ORDER BY id`,
      "UPDATE t SET n = coalesce(n, 0) + 1 RETURNING id, n",
    ];
    for (const sql of queries) {
      const expected = raw.prepare(sql).all();
      const actual = cached.execute(sql, []).rows;
      expect(actual).toEqual(expected);
      expect(actual.map((row) => Object.keys(row))).toEqual(expected.map((row) => Object.keys(row as object)));
      expect(actual.every((row) => Object.getPrototypeOf(row) === Object.prototype)).toBe(true);
    }
    const iterated = [...(cached.prepare("SELECT id, n FROM t ORDER BY id").iterate([]))];
    expect(iterated).toEqual(raw.prepare("SELECT id, n FROM t ORDER BY id").all());
    raw.close();
    cached.close();
  });
});
