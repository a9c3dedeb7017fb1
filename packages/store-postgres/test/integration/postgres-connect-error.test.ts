/**
 * Connect failures retrying cannot fix — the database does not exist
 * (SQLSTATE 3D000), the server refuses the login (28000) — are a fatal
 * `DatabaseUnusable` naming the database and what to do, on a connection
 * string and on a pool the caller passes; a refused connection stays
 * transient.
 */
import pg from "pg";
import { DatabaseUnusable, isFatalError } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/index.js";
import { firstSubmitFailure } from "@cairnq/test-support";
import { pgDsn } from "../helpers.js";

/** `pgDsn()` with its database (and, when given, user) replaced. */
function dsnWith(database: string, user?: string): string {
  const url = new URL(pgDsn());
  url.pathname = `/${database}`;
  if (user !== undefined) url.username = user;
  return url.toString();
}

describe("Postgres connect failures retrying cannot fix", () => {
  it("a database that does not exist is a fatal DatabaseUnusable naming it and saying to create it", async () => {
    const err = await firstSubmitFailure(new PostgresStore(dsnWith("cairnq_no_such_db")));
    expect(err).toBeInstanceOf(DatabaseUnusable);
    expect(isFatalError(err)).toBe(true);
    expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "3D000" });
    expect((err as Error).message).toMatch(/^could not open a connection to Postgres \(database "cairnq_no_such_db" does not exist, SQLSTATE 3D000\): the server has no database "cairnq_no_such_db": create it/);
    expect((err as Error).message).not.toMatch(/server is down/);
  });

  it("so is a refused login (a role that does not exist), naming the database asked for", async () => {
    const err = await firstSubmitFailure(new PostgresStore(dsnWith("cairnq_no_such_db", "cairnq_no_such_role")));
    expect(err).toBeInstanceOf(DatabaseUnusable);
    expect(isFatalError(err)).toBe(true);
    expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "28000" });
    expect((err as Error).message).toMatch(/the server refused the login: check the user and password/);
  });

  it("on a pool the caller passes too", async () => {
    const pool = new pg.Pool({ connectionString: dsnWith("cairnq_no_such_db") });
    try {
      const err = await firstSubmitFailure(new PostgresStore(pool));
      expect(err).toBeInstanceOf(DatabaseUnusable);
      expect(err).toMatchObject({ database: "cairnq_no_such_db", code: "3D000" });
    } finally {
      await pool.end();
    }
  });

  it("a refused connection stays transient", async () => {
    const err = await firstSubmitFailure(new PostgresStore("postgresql://postgres@127.0.0.1:1/x", { timeouts: { connectTimeoutMs: 2000 } }));
    expect(isFatalError(err)).toBe(false);
    expect((err as Error).name).toBe("PostgresConnectError");
  });
});
