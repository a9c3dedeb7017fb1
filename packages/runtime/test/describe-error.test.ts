/** Error envelopes in one line. */
import { describe, expect, it } from "vitest";
import { describeError } from "../src/describe-error.js";

describe("describeError", () => {
  it("reads a whole envelope: type and code, the message quoted, whether it is retryable", () => {
    expect(describeError({ type: "TaskError", code: "upstream", message: "503", retryable: true, details: {} })).toBe('TaskError upstream: "503" (retryable)');
    expect(describeError({ type: "TaskError", code: "bad_input", message: "no url", retryable: false })).toBe('TaskError bad_input: "no url" (not retryable)');
  });

  it("tolerates partial envelopes, and says nothing about an empty one", () => {
    expect(describeError({ code: "boom" })).toBe("boom");
    expect(describeError({ message: "plain" })).toBe('"plain"');
    expect(describeError({})).toBeNull();
    expect(describeError("text")).toBeNull();
    expect(describeError(null)).toBeNull();
  });
});
