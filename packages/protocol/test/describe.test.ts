import { describe as group, expect, it } from "vitest";
import { describe, isPlainObject } from "../src/describe.js";

group("describe (a value for a 'got …' message)", () => {
  it.each([
    ["mail", '"mail"'],
    [5, "5"],
    [true, "true"],
    [null, "null"],
    [undefined, "undefined"],
    [5n, "5n"],
    [[1], "an array"],
    [{}, "an object"],
    [Object.create(null), "an object"],
    [new Map(), "a Map"],
    [new Date(0), "a Date"],
    [new Error("x"), "an Error"],
    [Object.create(Object.create(null) as object), "an object"],
    [() => 1, "a function"],
  ])("%o reads as %s", (value, shown) => {
    expect(describe(value)).toBe(shown);
  });

  it("isPlainObject admits only Object.prototype or null prototypes", () => {
    expect([{}, Object.create(null)].every(isPlainObject)).toBe(true);
    expect([[], new Map(), null, "x"].some(isPlainObject)).toBe(false);
  });
});
