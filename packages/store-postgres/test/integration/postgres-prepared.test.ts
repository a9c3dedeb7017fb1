import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { statementFailure } from "../../src/postgres-connect-error.js";
import { openStore } from "../helpers.js";

const HINT = /; CairnQ sends its statements as named prepared statements, and this session does not keep them between transactions — behind a transaction-mode pooler .* set the store's option preparedStatements: false$/;

describe("a prepared statement the session no longer holds", () => {
  // What PgBouncer in transaction mode (before 1.21) causes: the next transaction runs on a server session that never
  // prepared the statement. DEALLOCATE ALL on the store's one connection does the same without a pooler.
  it("fails with the driver's error (code 26000) and the hint naming preparedStatements: false", async () => {
    const store = openStore(undefined, { max: 1, listen: false });
    await store.connect();
    await store.submit({ name: "first" });
    await sql`DEALLOCATE ALL`.execute(store.db);
    const error = await store.submit({ name: "second" }).then(
      () => null,
      (err: unknown) => err as Error & { code?: unknown },
    );
    expect(error?.code).toBe("26000");
    expect(error?.message).toMatch(/^prepared statement "cairnq_\d+" does not exist; CairnQ sends/);
    expect(error?.message).toMatch(HINT);
  });

  it("only for the store's own statements and those two codes; other errors pass as they are", () => {
    const own = Object.assign(new Error('prepared statement "cairnq_7" already exists'), { code: "42P05" });
    expect(statementFailure(own)).toBe(own);
    expect(own.message).toMatch(HINT);
    // Once: an error classified twice keeps one hint.
    statementFailure(own);
    expect(own.message.split("preparedStatements: false").length).toBe(2);
    for (const [message, code] of [
      ['prepared statement "my_app_1" does not exist', "26000"],
      ['prepared statement "cairnq_7" does not exist', "42601"],
      ['relation "cairnq_tasks" does not exist', "42P01"],
    ]) {
      const other = Object.assign(new Error(message), { code });
      expect(statementFailure(other)).toBe(other);
      expect(other.message).toBe(message);
    }
    expect(statementFailure("not an error")).toBe("not an error");
  });
});
