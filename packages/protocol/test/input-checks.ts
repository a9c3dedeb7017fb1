/**
 * What the input tests share: the InvalidArgument assertion, a way to pass
 * what the types forbid, and the ownership fields of every owned write.
 */
import { expect } from "vitest";
import { InvalidArgument } from "../src/errors.js";
import { ID, W1 } from "./fixtures.js";
/** Asserts `fn` throws `InvalidArgument` for `argument`, with a message naming it. */
export function expectInvalid(fn: () => unknown, argument: string, message?: RegExp): InvalidArgument {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected InvalidArgument(${argument})`).toBeInstanceOf(InvalidArgument);
  const err = caught as InvalidArgument;
  expect(err.name).toBe("InvalidArgument");
  expect(err.argument).toBe(argument);
  expect(err.message).toContain(argument);
  if (message) expect(err.message).toMatch(message);
  return err;
}

/** Lets a test pass what the types forbid, as a JavaScript caller may. */
export const loose = <T>(value: unknown): T => value as T;

export const owned = { taskId: ID, workerId: W1 };
