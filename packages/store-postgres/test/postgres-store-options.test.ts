import { describe, expect, it } from "vitest";
import { InvalidArgument, isFatalError } from "@cairnq/protocol";
import { PostgresStore } from "../src/index.js";

/** What building a store with `options` throws (construction only: no statement runs, so no connection opens). */
function refusal(options: ConstructorParameters<typeof PostgresStore>[1]): unknown {
  try {
    new PostgresStore("postgres://app@127.0.0.1:1/app", options);
  } catch (error) {
    return error;
  }
  return null;
}

describe("the combine option, checked when the store is built", () => {
  it.each([
    ["maxRows", 0, "0"],
    ["maxRows", 1.5, "1.5"],
    ["maxBytes", -1, "-1"],
    ["maxPendingRows", Number.NaN, "NaN"],
    ["maxPendingBytes", "64", '"64"'],
  ])("refuses %s: %s with InvalidArgument naming the option and the value", (key, value, shown) => {
    const error = refusal({ combine: { [key]: value } });
    expect(error).toBeInstanceOf(InvalidArgument);
    expect(isFatalError(error)).toBe(true);
    expect((error as InvalidArgument).argument).toBe(`combine.${key}`);
    expect((error as Error).message).toBe(`combine.${key} must be an integer ≥ 1, got ${shown}`);
  });

  it("takes whole numbers ≥ 1, and false", () => {
    expect(refusal({ combine: { maxRows: 1, maxBytes: 4096, maxPendingRows: 8, maxPendingBytes: 65536 } })).toBeNull();
    expect(refusal({ combine: false })).toBeNull();
    expect(refusal({ combine: {} })).toBeNull();
  });
});
