import type pg from "pg";
import { describe, expect, it } from "vitest";
import { PIPELINE_SQL } from "../../src/postgres-pipeline.js";
import { commandComplete } from "../../src/postgres-wire-query.js";
import { prepareRegistered, registerPrepared } from "../../src/postgres-prepared.js";
import { client } from "../helpers.js";

/** The Describe messages a client's wire connection sends, counted. */
function countDescribes(c: pg.Client): { count: () => number } {
  const connection = (c as unknown as { connection: { describe: (...args: unknown[]) => unknown } }).connection;
  const describe = connection.describe.bind(connection);
  let sent = 0;
  connection.describe = (...args: unknown[]): unknown => {
    sent += 1;
    return describe(...args);
  };
  return { count: () => sent };
}

describe("the store's statements describe their rows once per connection", () => {
  it("a named statement is described when parsed, then answers the same rows with Bind and Execute alone", async () => {
    const c = await client();
    prepareRegistered(c);
    const text = `SELECT $1::int AS n, $1::text AS s, NULL::bigint AS nothing, now() AS at, $1::int AS n_again /* ${Date.now()} */`;
    registerPrepared(text);
    const describes = countDescribes(c);
    const first = await c.query(text, [1]);
    expect(describes.count()).toBe(1);
    const second = await c.query(text, [2]);
    const third = await c.query(text, [3]);
    expect(describes.count()).toBe(1);
    for (const [result, n] of [
      [first, 1],
      [second, 2],
      [third, 3],
    ] as const) {
      const [row] = result.rows as Record<string, unknown>[];
      expect(Object.keys(row ?? {})).toEqual(["n", "s", "nothing", "at", "n_again"]);
      // pg's type parsers, as pg's own Result applies them: int4 a number, text a string, timestamptz a Date.
      expect([row?.n, row?.s, row?.nothing, row?.at instanceof Date, row?.n_again]).toEqual([n, String(n), null, true, n]);
      expect([result.command, result.rowCount]).toEqual(["SELECT", 1]);
    }
    // Rows are separate objects: a caller changing one changes no other answer.
    (second.rows[0] as Record<string, unknown>).n = 99;
    expect((third.rows[0] as Record<string, unknown>).n).toBe(3);
    await c.end();
  });

  it("inside pipelines too, and a statement answering no rows is described once as well", async () => {
    const c = await client();
    prepareRegistered(c);
    const table = `wire_${Date.now()}`;
    await c.query(`CREATE TEMP TABLE ${table} (id int PRIMARY KEY, v text)`);
    const insert = `INSERT INTO ${table} (id, v) VALUES ($1, $2)`;
    const select = `SELECT id, v FROM ${table} WHERE id >= $1 ORDER BY id`;
    registerPrepared(insert);
    registerPrepared(select);
    const describes = countDescribes(c);
    const run = (id: number): Promise<{ rows: { command: string; rowCount: number; rows: unknown[] }[] }> =>
      c.query(PIPELINE_SQL, [
        [
          { sql: insert, parameters: [id, `v${id}`] },
          { sql: select, parameters: [id] },
        ],
      ]);
    const first = await run(1);
    expect(describes.count()).toBe(2);
    const second = await run(2);
    expect(describes.count()).toBe(2);
    expect(first.rows.map((r) => [r.command, r.rowCount, r.rows])).toEqual([
      ["INSERT", 1, []],
      ["SELECT", 1, [{ id: 1, v: "v1" }]],
    ]);
    expect(second.rows.map((r) => [r.command, r.rowCount, r.rows])).toEqual([
      ["INSERT", 1, []],
      ["SELECT", 1, [{ id: 2, v: "v2" }]],
    ]);
    await c.end();
  });

  it("a statement parsed again after a failed pipeline skipped it is described again", async () => {
    const c = await client();
    prepareRegistered(c);
    // Fails as it runs (after its row description), not at Bind: a constant `1 / $1` would fail planning there.
    const failing = `SELECT 1 / g AS q FROM generate_series($1::int, $1::int) AS g /* ${Date.now()} */`;
    const after = `SELECT $1::int AS after_ /* ${Date.now()} */`;
    registerPrepared(failing);
    registerPrepared(after);
    const describes = countDescribes(c);
    const pipeline = (divisor: number, value: number): Promise<unknown> =>
      c.query(PIPELINE_SQL, [
        [
          { sql: failing, parameters: [divisor] },
          { sql: after, parameters: [value] },
        ],
      ]);
    await expect(pipeline(0, 1)).rejects.toThrow(/division by zero/);
    expect(describes.count()).toBe(2);
    // `failing` was parsed and described (its shape kept); `after` was skipped, so it is parsed and described now.
    expect(((await pipeline(1, 5)) as { rows: { rows: unknown[] }[] }).rows.map((r) => r.rows)).toEqual([[{ q: 1 }], [{ after_: 5 }]]);
    expect(describes.count()).toBe(3);
    await c.end();
  });

  it("unnamed (prepared statements off): described every time, as pg does", async () => {
    const c = await client();
    prepareRegistered(c, false);
    const text = `SELECT $1::int AS n /* ${Date.now()} */`;
    registerPrepared(text);
    const describes = countDescribes(c);
    expect((await c.query(text, [1])).rows).toEqual([{ n: 1 }]);
    expect((await c.query(text, [2])).rows).toEqual([{ n: 2 }]);
    expect(describes.count()).toBe(2);
    await c.end();
  });

  it("bigint columns read as pg's own parser reads them: their text", async () => {
    const c = await client();
    prepareRegistered(c);
    const text = `SELECT $1::bigint AS big, -$1::bigint AS negative, NULL::bigint AS none /* bigint ${Date.now()} */`;
    registerPrepared(text);
    for (const value of ["9223372036854775807", "1764868000123"]) {
      expect((await c.query(text, [value])).rows).toEqual([{ big: value, negative: `-${value}`, none: null }]);
    }
    await c.end();
  });

  it("a client with pg's `binary` option: a lone statement answers in binary as pg's own query would, described every time; a pipeline in text", async () => {
    // pg reads `binary` from its client config (its types do not list it).
    const c = await client({ binary: true } as unknown as pg.ClientConfig);
    prepareRegistered(c);
    // numeric: pg-types parses its binary form to a number and leaves its text form a string.
    const text = `SELECT $1::numeric AS n /* binary ${Date.now()} */`;
    registerPrepared(text);
    const describes = countDescribes(c);
    expect((await c.query(text, ["1.5"])).rows).toEqual([{ n: 1.5 }]);
    expect((await c.query(text, ["2.5"])).rows).toEqual([{ n: 2.5 }]);
    expect(describes.count()).toBe(2);
    const result = (await c.query(PIPELINE_SQL, [[{ sql: text, parameters: ["3.5"] }]])) as unknown as { rows: { rows: unknown[] }[] };
    expect(result.rows.map((r) => r.rows)).toEqual([[{ n: "3.5" }]]);
    expect(describes.count()).toBe(3);
    // Text results of the name are kept from then on (the pipeline's): a lone binary statement still describes its own.
    expect((await c.query(text, ["4.5"])).rows).toEqual([{ n: 4.5 }]);
    expect(describes.count()).toBe(4);
    await c.end();
  });

  it("the client's own type parsers (its `types` option) apply, as they do to pg's own queries", async () => {
    const types = { getTypeParser: (oid: number) => (oid === 23 || oid === 20 ? (value: string) => `int${oid}:${value}` : (value: string) => value) };
    const c = await client({ types });
    prepareRegistered(c);
    const text = `SELECT $1::int AS n, $1::bigint AS big /* types ${Date.now()} */`;
    registerPrepared(text);
    expect((await c.query(text, [7])).rows).toEqual([{ n: "int23:7", big: "int20:7" }]);
    expect((await c.query(text, [8])).rows).toEqual([{ n: "int23:8", big: "int20:8" }]);
    await c.end();
  });

  it("read a CommandComplete text as pg's Result reads it (its regular expression: the word, the last of up to two counts)", () => {
    const pg = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;
    const asPg = (text: string): { command: string | null; rowCount: number | null } => {
      const match = pg.exec(text);
      const count = match?.[3] ?? match?.[2];
      return { command: match?.[1] ?? null, rowCount: count === undefined ? null : Number.parseInt(count, 10) };
    };
    const tags = ["INSERT 0 64", "UPDATE 3", "SELECT 0", "DELETE 12", "MERGE 2", "BEGIN", "COMMIT", "ROLLBACK", "CREATE TABLE", "COPY 5", "FETCH 7", "SET", "12 rows", "", "SELECT x", "UPDATE 3 4 5", "INSERT 0"];
    for (const tag of tags) expect(commandComplete(tag)).toEqual(asPg(tag));
    expect(commandComplete(null)).toEqual({ command: null, rowCount: null });
  });
});
