import { describe, expect, it } from "vitest";

/** The page's own module (plain JavaScript, served as is, without declarations). */
const DOM_MODULE: string = new URL("../src/assets/dom.mjs", import.meta.url).href;
const { jsonText } = (await import(DOM_MODULE)) as { jsonText: (value: unknown, indent?: number) => string };

describe("jsonText (the page's stored JSON: step results, payloads, results, errors)", () => {
  it("writes bidi controls and line/paragraph separators as JSON escapes, so the text stays the same JSON", () => {
    const value = { group: "tenant-42\u202e", note: "a\u2066b\u2028c\u2029", ok: "plain" };
    const text = jsonText(value);
    expect(text).toBe('{"group":"tenant-42\\u202e","note":"a\\u2066b\\u2028c\\u2029","ok":"plain"}');
    expect(/[\u202a-\u202e\u2066-\u2069\u2028\u2029]/.test(text)).toBe(false);
    expect(JSON.parse(text)).toEqual(value);
  });

  it("indents as JSON.stringify does, and writes an absent value as null", () => {
    expect(jsonText({ a: [1] }, 2)).toBe(JSON.stringify({ a: [1] }, null, 2));
    expect(jsonText(undefined)).toBe("null");
  });
});
