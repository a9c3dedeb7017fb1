import { InvalidArgument } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { MySQLStore } from "../src/index.ts";

const TARGET = "mysql://root@127.0.0.1:3306/app";

// Construction only: the pool is built on the first statement, so nothing connects.
describe("max, checked at construction", () => {
  it.each([
    [0, "got 0"],
    [-1, "got -1"],
    [1.5, "got 1.5"],
    ["3", 'got "3"'],
    [Number.NaN, "got NaN"],
    [null, "got null"],
  ])("refuses max %s with InvalidArgument, as the Postgres store does, instead of failing every call", (max, got) => {
    let error: unknown = null;
    try {
      new MySQLStore(TARGET, { max: max as number });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).argument).toBe("max");
    expect((error as InvalidArgument).message).toBe(`max must be an integer ≥ 1, ${got}`);
  });

  it("takes an integer ≥ 1, or none (10)", async () => {
    for (const max of [1, 64, undefined]) {
      const store = new MySQLStore(TARGET, max === undefined ? {} : { max });
      await store.close();
    }
  });
});
