/**
 * The `withTransaction` view on the caller's own Kysely instance: its session
 * is the caller's, so the view checks what the store's own pool sets on its
 * connections and a caller's session may lack. Needs `CAIRNQ_TEST_MYSQL_DSN`.
 */
import { InvalidArgument } from "@cairnq/protocol";
import { MySQLStore } from "@cairnq/store-mysql";
import { MySQLAdmin, mysqlDsn } from "@cairnq/test-support";
import { Kysely, MysqlDialect, sql } from "kysely";
import { createPool } from "mysql2";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const admin = new MySQLAdmin(mysqlDsn());
let dsn = "";
beforeAll(async () => {
  dsn = await admin.createDatabase("trxview");
});
afterAll(async () => {
  await admin.dropDatabase("trxview");
  await admin.close();
});
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await admin.emptyDatabase("trxview");
});

describe("withTransaction on the caller's own MySQL session", () => {
  it("refuses a session whose sql_mode has NO_BACKSLASH_ESCAPES with a clear InvalidArgument, writing nothing; without the mode it writes", async () => {
    const store = new MySQLStore(dsn);
    // One connection, so the session mode set below is the transaction's.
    const app = new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: dsn, connectionLimit: 1 }) }) });
    closers.push(() => store.close(), () => app.destroy());
    await store.connect();
    await sql`SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_BACKSLASH_ESCAPES')`.execute(app);
    const payload = { quote: 'say "hi"', path: "C:\\tmp" };

    const failed = await app
      .transaction()
      .execute((trx) => store.withTransaction(trx).submit({ name: "nbe", payload }))
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(InvalidArgument);
    expect(failed).toMatchObject({ argument: "trx" });
    expect((failed as Error).message).toMatch(/sql_mode has NO_BACKSLASH_ESCAPES.*remove NO_BACKSLASH_ESCAPES from that connection's sql_mode/);
    expect(await store.list()).toEqual([]);

    await sql`SET SESSION sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','))`.execute(app);
    const task = await app.transaction().execute((trx) => store.withTransaction(trx).submit({ name: "nbe", payload }));
    expect((await store.get(task.id))?.payload).toEqual(payload);
  });
});
