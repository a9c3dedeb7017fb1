import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnQ } from "cairnq";
import { afterEach, describe, expect, it } from "vitest";
import { groupStatsCommand, listCommand, statsCommand } from "../src/cli/commands.js";
import type { CliIo } from "../src/cli/output.js";
import { printable, table, truncate } from "../src/cli/output.js";

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

// Text a terminal shows wider or narrower than its UTF-16 length, with the columns it takes, counted by hand:
// CJK and emoji two a character, a ZWJ family one emoji, a combining mark and a zero-width space none.
const WIDE: readonly (readonly [string, number])[] = [
  ["日本語", 6],
  ["🚀 go", 5],
  ["👩\u200d👩\u200d👧\u200d👦 fam", 6],
  ["cafe\u0301", 4],
  ["zero\u200bwidth", 9],
  ["tab\\there", 9], // printable("tab\there"): the escape is what is printed, and measured
];

/** The terminal column `line` reaches at `index`, from {@link WIDE}'s hand counts (every other character one). */
function columnAt(line: string, index: number): number {
  let prefix = line.slice(0, index);
  let columns = 0;
  for (const [text, width] of [...WIDE].sort((a, b) => b[0].length - a[0].length)) {
    const parts = prefix.split(text);
    columns += (parts.length - 1) * width;
    prefix = parts.join("");
  }
  return columns + prefix.length;
}

/** The column each line's first match of `marker` starts at. */
function columnsOf(lines: readonly string[], marker: RegExp): number[] {
  return lines.map((line) => {
    const at = line.search(marker);
    expect(at, line).toBeGreaterThan(0);
    return columnAt(line, at);
  });
}

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("table and wide text", () => {
  it("pads by terminal columns, so a later column starts at one column in every row", () => {
    const rows = [["ascii", "7", "next"], ...WIDE.map(([text]) => [text, "7", "next"])];
    const lines = table(["NAME", "N", "LAST"], rows, { right: [1], color: false }).split("\n");
    // NAME is 9 columns wide ('zero width', 'tab\\there'), then two spaces, N (one) and two spaces.
    expect(columnsOf(lines.slice(1), /7 {2}next$/)).toEqual(rows.map(() => 11));
    expect(columnsOf(lines.slice(1), /next$/)).toEqual(rows.map(() => 14));
    expect(lines[0]).toBe("NAME       N  LAST");
  });

  it("cuts by terminal columns between grapheme clusters: never a surrogate pair, an emoji sequence or a letter from its mark", () => {
    expect(truncate("日本語のタスク", 6)).toBe("日本…");
    expect(truncate("日本語", 6)).toBe("日本語");
    expect(truncate("🚀🚀🚀🚀", 6)).toBe("🚀🚀…");
    expect(truncate("🚀🚀🚀🚀", 5)).toBe("🚀🚀…");
    const family = "👩\u200d👩\u200d👧\u200d👦";
    expect(truncate(family.repeat(3), 4)).toBe(`${family}…`);
    expect(truncate("e\u0301".repeat(10), 5)).toBe(`${"e\u0301".repeat(4)}…`);
    expect(truncate("a\u200bb\u200bc\u200bd\u200be", 3)).toBe("a\u200bb\u200b…");
    expect(truncate("plain ascii text", 8)).toBe("plain a…");
  });

  it("writes a lone surrogate out, since the terminal is sent U+FFFD in its place", () => {
    expect(printable("half \ud83d of a pair, and \ude80")).toBe("half \\ud83d of a pair, and \\ude80");
    expect(printable("a \ud83d\ude80 whole pair")).toBe("a 🚀 whole pair");
    expect(printable("x\ud83d\n", "lines")).toBe("x\\ud83d\n");
  });
});

describe("list, stats and stats --by-group with wide text", () => {
  const io: CliIo = { out: () => {}, err: () => {}, color: false, tty: false, env: {}, now: () => Date.now() };

  it("line their columns up, and cut long names by terminal columns", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairnq-cli-wide-"));
    dirs.push(dir);
    const client = CairnQ.sqlite(join(dir, "cairnq.db"));
    try {
      const stored = ["ascii", "日本語", "🚀 go", "👩\u200d👩\u200d👧\u200d👦 fam", "cafe\u0301", "zero\u200bwidth", "tab\there"];
      for (const text of stored) await client.submit(text, {}, { queue: text, group: text });
      for (const text of stored) await client.submit("by-group", {}, { group: text });

      const list = (await listCommand(client, io, {}, 50, undefined)).text.split("\n").slice(1);
      expect(list).toHaveLength(14);
      // ID 31 columns, NAME and QUEUE 9 each ('zero width', 'tab\\there'): STATUS starts at 31 + 2 + 9 + 2 + 9 + 2.
      expect(columnsOf(list, /queued {2}/)).toEqual(list.map(() => 55));

      const stats = (await statsCommand(client, io, undefined)).text.split("\n").slice(1);
      expect(stats).toHaveLength(stored.length + 2); // and 'default' (the by-group tasks), and (all)
      // QUEUE 9 columns, then right-aligned numbers to the end: every row ends at 9 + 53.
      expect(stats.map((line) => columnAt(line, line.length))).toEqual(stats.map(() => 62));

      const groups = (await groupStatsCommand(client, io, "by-group", 50)).text.split("\n").slice(1);
      expect(groups).toHaveLength(stored.length);
      // GROUP 9 columns, two spaces, QUEUED (6, right-aligned: its 1 in the sixth), two spaces, RUNNING (7).
      expect(columnsOf(groups, /1 +0$/)).toEqual(groups.map(() => 9 + 2 + 5));
      expect(groups.map((line) => columnAt(line, line.length))).toEqual(groups.map(() => 9 + 2 + 6 + 2 + 7));
    } finally {
      await client.close();
    }
  });

  it("cut a long CJK, emoji or combining-mark name to the table's width in terminal columns, whole clusters only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairnq-cli-wide-"));
    dirs.push(dir);
    const client = CairnQ.sqlite(join(dir, "cairnq.db"));
    try {
      for (const group of ["日本語".repeat(20), "🚀".repeat(40), "e\u0301".repeat(60)]) await client.submit("long", {}, { group, queue: "日本語".repeat(10) });
      const groups = (await groupStatsCommand(client, io, "long", 50)).text.split("\n").slice(1);
      // GROUP is cut to 48 columns: 47 and the ellipsis, or 46 and it where a two-column character would cross 47.
      expect(groups.map((line) => line.slice(0, line.indexOf("…") + 1)).sort()).toEqual(
        [`${"日本語".repeat(7)}日本…`, `${"🚀".repeat(23)}…`, `${"e\u0301".repeat(47)}…`].sort(),
      );
      const list = (await listCommand(client, io, {}, 50, undefined)).text.split("\n").slice(1);
      // QUEUE is cut to 16 columns: seven CJK characters (14) and the ellipsis.
      for (const line of list) expect(line).toContain(`  long  ${"日本語日本語日"}…  queued`);
    } finally {
      await client.close();
    }
  });
});
