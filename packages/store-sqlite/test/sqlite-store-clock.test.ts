import { afterEach, describe, expect, it } from "vitest";
import { InvalidArgument, isFatalError } from "@cairnq/protocol";
import { SQLiteStore } from "../src/index.js";
import { cleanUp, openStore, tempFile } from "./helpers.js";

afterEach(cleanUp);

describe("the clock option", () => {
  it.each([
    [5, "5"],
    ["Date.now", '"Date.now"'],
    [{ now: () => 0 }, "an object"],
  ])("refuses %s when the store is built, with InvalidArgument naming the option and the value", (clock, shown) => {
    let error: unknown = null;
    try {
      new SQLiteStore(tempFile(), { clock: clock as unknown as () => number });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidArgument);
    expect(isFatalError(error)).toBe(true);
    expect((error as InvalidArgument).argument).toBe("clock");
    expect((error as Error).message).toBe(`clock must be a function returning epoch milliseconds (() => number, such as Date.now), got ${shown}`);
  });

  it("writes whole milliseconds from a clock that reads fractions (§2.1)", async () => {
    const store = openStore(tempFile(), { clock: () => 1_700_000_000_000.75 });
    const task = await store.submit({ name: "a", payload: {}, runAtDelayMs: 10 });
    expect(task.created_at_ms).toBe(1_700_000_000_000);
    expect(task.run_at_ms).toBe(1_700_000_000_010);
    const read = await store.get(task.id);
    expect([read?.created_at_ms, read?.run_at_ms, read?.updated_at_ms].every(Number.isInteger)).toBe(true);
  });

  it("fails the statement that reads a clock answering something other than a finite number", async () => {
    const store = openStore(tempFile(), { clock: (() => "123") as unknown as () => number });
    await expect(store.submit({ name: "a", payload: {} })).rejects.toThrow(InvalidArgument);
    await expect(store.submit({ name: "a", payload: {} })).rejects.toThrow('clock() must return a finite number of epoch milliseconds, got "123"');
  });
});
