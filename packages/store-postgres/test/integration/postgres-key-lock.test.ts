import { describe, expect, it } from "vitest";
import { KeyLockBusy } from "../../src/postgres-key-lock.js";
import type * as KeyLockModule from "../../src/postgres-key-lock.js";

describe("KeyLockBusy", () => {
  it("passes instanceof across two copies of the package (the executor catching it may be another copy's)", async () => {
    const specifier = "../../src/postgres-key-lock.ts?second-copy";
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof KeyLockModule;
    expect(copy.KeyLockBusy).not.toBe(KeyLockBusy);
    const theirs = new copy.KeyLockBusy("k");
    expect(theirs).toBeInstanceOf(KeyLockBusy);
    expect(new KeyLockBusy("k")).toBeInstanceOf(copy.KeyLockBusy);
    expect(new Error("k")).not.toBeInstanceOf(KeyLockBusy);
    expect({ name: theirs.name, key: theirs.key }).toEqual({ name: "KeyLockBusy", key: "k" });
  });
});
