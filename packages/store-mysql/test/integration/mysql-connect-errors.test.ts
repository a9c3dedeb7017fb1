/**
 * Connect failures retrying cannot fix — the database does not exist (1049),
 * the server refuses the login (1045) — are a fatal `DatabaseUnusable`
 * naming the database and what to do, on a connection string and on a pool
 * the caller passes; a refused connection stays transient.
 */
import { createRequire } from "node:module";
import { DatabaseUnusable, isFatalError } from "@cairnq/protocol";
import { MySQLStore } from "@cairnq/store-mysql";
import type { MySQLPool } from "@cairnq/store-mysql";
import { firstSubmitFailure, mysqlDsn, withDatabase } from "@cairnq/test-support";
import { describe, expect, it } from "vitest";

const mysql2 = createRequire(import.meta.url)("mysql2") as { createPool(uri: string): MySQLPool & { end(cb?: () => void): void } };

describe("MySQL connect failures retrying cannot fix", () => {
  it("a database that does not exist is a fatal DatabaseUnusable naming it and saying to create it", async () => {
    const err = await firstSubmitFailure(new MySQLStore(withDatabase(mysqlDsn(), "cairnq_no_such_db")));
    expect(err).toBeInstanceOf(DatabaseUnusable);
    expect(isFatalError(err)).toBe(true);
    expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "ER_BAD_DB_ERROR" });
    expect((err as Error).message).toMatch(/\(Unknown database 'cairnq_no_such_db'\): the server has no database 'cairnq_no_such_db': create it/);
    expect((err as Error).message).not.toMatch(/refused the connection/);
  });

  it("so is a refused login", async () => {
    const url = new URL(withDatabase(mysqlDsn(), "cairnq_no_such_db"));
    url.username = "cairnq_no_such_user";
    url.password = "wrong";
    const err = await firstSubmitFailure(new MySQLStore(url.toString()));
    expect(err).toBeInstanceOf(DatabaseUnusable);
    expect(isFatalError(err)).toBe(true);
    expect(["ER_ACCESS_DENIED_ERROR", "ER_ACCESS_DENIED_NO_PASSWORD_ERROR"]).toContain((err as { code?: unknown }).code);
    expect((err as Error).message).toMatch(/the server refused the login: check the user and password/);
  });

  it("on a pool the caller passes too", async () => {
    const pool = mysql2.createPool(withDatabase(mysqlDsn(), "cairnq_no_such_db"));
    try {
      const err = await firstSubmitFailure(new MySQLStore(pool));
      expect(err).toBeInstanceOf(DatabaseUnusable);
      expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "ER_BAD_DB_ERROR" });
    } finally {
      await new Promise<void>((resolve) => pool.end(() => resolve()));
    }
  });

  it("a refused connection stays transient", async () => {
    const err = await firstSubmitFailure(new MySQLStore("mysql://root@127.0.0.1:1/x"));
    expect(isFatalError(err)).toBe(false);
    expect((err as Error).name).toBe("MySQLConnectError");
  });
});
