import { describe, expect, it } from "vitest";
import { printable } from "../src/cli/output.js";

describe("printable", () => {
  it("writes every control character out, so database text cannot act on the terminal", () => {
    expect(printable("\u001b[31mRED\u001b[0m")).toBe("\\x1b[31mRED\\x1b[0m");
    expect(printable("a\tb\nc\rd\u0007\u007f\u009b")).toBe("a\\tb\\nc\\rd\\x07\\x7f\\x9b");
    expect(printable("plain text, ünïcödé, 😀")).toBe("plain text, ünïcödé, 😀");
    // A backslash is doubled: a name holding the two characters \ and n is not shown as a line break was.
    expect(printable("a\\nb")).toBe("a\\\\nb");
    expect(printable("a\nb")).toBe("a\\nb");
  });

  it("keeps line breaks and backslashes with lines: true, and escapes the other control characters", () => {
    expect(printable("first line\n\u001b[2Jsecond\tline", { lines: true })).toBe("first line\n\\x1b[2Jsecond\\tline");
    expect(printable("C:\\tmp", { lines: true })).toBe("C:\\tmp");
  });
});
