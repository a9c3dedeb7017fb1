/**
 * The session settings of a pool the store builds (`SESSION_SETUP`) on a
 * server whose `sql_mode` has `NO_BACKSLASH_ESCAPES` (set globally by its
 * operator): the driver binds values by escaping them with backslashes, so
 * the session must read backslashes as escapes or every JSON value with a
 * quote is written with its backslashes kept. Needs `CAIRNQ_TEST_MYSQL_DSN`;
 * without it the tests fail.
 */
import { mysqlDsn } from "@cairnq/test-support";
import { createConnection } from "mysql2/promise";
import { expect, it } from "vitest";
import { SESSION_SETUP } from "../../src/mysql-connection.ts";

it("a connection whose sql_mode has NO_BACKSLASH_ESCAPES reads bound values as written once the session setup ran", async () => {
  const conn = await createConnection({ uri: mysqlDsn(), charset: "UTF8MB4_BIN" });
  try {
    // What a server with NO_BACKSLASH_ESCAPES in its global sql_mode gives every new connection.
    await conn.query("SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES,NO_ENGINE_SUBSTITUTION'");
    for (const sql of SESSION_SETUP) await conn.query(sql);
    const payload = JSON.stringify({ quote: 'say "hi"', path: "C:\\tmp", line: "a\nb" });
    const [rows] = (await conn.query("SELECT ? AS v, @@SESSION.time_zone AS tz, @@SESSION.sql_mode AS mode", [payload])) as unknown as [{ v: string; tz: string; mode: string }[]];
    expect(rows[0]?.v).toBe(payload);
    expect(rows[0]?.tz).toBe("+00:00");
    // The session's other modes stay as the server set them.
    expect(rows[0]?.mode).toBe("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION");
  } finally {
    await conn.end();
  }
});
