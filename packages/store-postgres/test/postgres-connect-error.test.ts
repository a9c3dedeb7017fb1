import { describe, expect, it } from "vitest";
import { statementFailure } from "../src/postgres-connect-error.js";

const HINT = /; CairnQ sends its statements as named prepared statements, and this session does not keep them between transactions — behind a transaction-mode pooler .* set the store's option preparedStatements: false$/;

// The classification alone, on errors built here: the Postgres run that produces one is in
// test/integration/postgres-prepared.test.ts.
describe("a prepared statement the session no longer holds", () => {
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
