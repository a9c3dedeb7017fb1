import { describe, expect, it } from "vitest";
import { InvalidArgument, isFatalError } from "@cairnq/protocol";
import { MySQLStore } from "../src/index.js";

describe("the combine option, checked when the store is built", () => {
  // The bounds are store-kysely's checkCombineOption, which the Postgres store's options test goes through case by case.
  it("refuses a bound below 1 with InvalidArgument naming the option and the value, before any connection", () => {
    let error: unknown = null;
    try {
      new MySQLStore("mysql://app@127.0.0.1:1/app", { combine: { maxRows: 0 } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidArgument);
    expect(isFatalError(error)).toBe(true);
    expect((error as InvalidArgument).argument).toBe("combine.maxRows");
    expect((error as Error).message).toBe("combine.maxRows must be an integer ≥ 1, got 0");
  });
});
