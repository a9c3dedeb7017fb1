import { sql } from "kysely";
import { describe, expect, it } from "vitest";
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
  // The classification alone (other codes, other statements, once only) is a fast test: test/postgres-connect-error.test.ts.
});
