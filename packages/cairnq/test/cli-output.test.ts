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
    expect(printable("first line\n\u001b[2Jsecond\tline", "lines")).toBe("first line\n\\x1b[2Jsecond\\tline");
    expect(printable("C:\\tmp", "lines")).toBe("C:\\tmp");
  });

  it("escapes line breaks too but keeps backslashes with paragraph: true (explain's summary, which quotes JSON)", () => {
    expect(printable('group a\n\nforged line\u202e: "say \\"hi\\""', "paragraph")).toBe('group a\\n\\nforged line\\u202e: "say \\"hi\\""');
  });
});

describe("printable and bidi", () => {
  it("writes the bidi embeddings, overrides and isolates and the line and paragraph separators out, in both forms", () => {
    // A group ending in U+202E would mirror the rest of the line on a terminal that applies the bidi algorithm.
    expect(printable("tenant-42\u202e (0 running)")).toBe("tenant-42\\u202e (0 running)");
    const all = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029";
    const written = "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u2028\\u2029";
    expect(printable(all)).toBe(written);
    expect(printable(`a\n${all}`, "lines")).toBe(`a\n${written}`);
    // Right-to-left text itself is shown as it is: only the invisible controls are written out.
    expect(printable("שלום مرحبا \u200f")).toBe("שלום مرحبا \u200f");
  });
});
