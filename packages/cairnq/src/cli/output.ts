/**
 * How the CLI prints: aligned tables and colours for people (colours only
 * when stdout is a terminal and `NO_COLOR` is unset), one JSON document for
 * scripts.
 */
import type { TaskStatus } from "@cairnq/protocol";
import stringWidth from "string-width";

/** Where output goes and whether it may be coloured. Injected so tests and the bin share one code path. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Colours allowed (a TTY without `NO_COLOR`). */
  readonly color: boolean;
  /**
   * stdout is a terminal, whatever `NO_COLOR` says: output that is raw when piped (`metrics`) is escaped
   * for a terminal (see `printable`).
   */
  readonly tty: boolean;
  /** The environment (`CAIRNQ_DB`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The clock, epoch ms. */
  readonly now: () => number;
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, gray: 90, bold: 1, dim: 2 } as const;
/** A colour (or weight) name. */
export type Color = keyof typeof CODES;

/** Wraps `text` in an ANSI colour when `on`. */
export function paint(text: string, color: Color, on: boolean): string {
  return on ? `\u001b[${CODES[color]}m${text}\u001b[0m` : text;
}

/** The colour of each status, shared with the dashboard's palette in spirit. */
export const STATUS_COLOR: Readonly<Record<TaskStatus, Color>> = {
  queued: "cyan",
  running: "blue",
  succeeded: "green",
  failed: "red",
  canceled: "gray",
};

/**
 * The terminal columns `text` takes: a CJK character or an emoji two, a combining mark or a zero-width character
 * none, one grapheme cluster (👩‍👩‍👧‍👦, e + U+0301) as one character; the ANSI colour codes paint() adds none.
 * Measured by `string-width`, on the text as printed (after {@link printable}), not by UTF-16 code units.
 */
export function displayWidth(text: string): number {
  return stringWidth(text);
}

/** `text` followed by spaces up to `columns` terminal columns ({@link displayWidth}); as it is when already that wide. */
export function padDisplay(text: string, columns: number): string {
  return text + " ".repeat(Math.max(0, columns - displayWidth(text)));
}

/** Columns aligned (by {@link displayWidth}) with two spaces between them; `right` names right-aligned (numeric) columns. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], options: { right?: readonly number[]; color: boolean }): string {
  const widths = header.map((h, i) => Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ""))));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => {
        const pad = " ".repeat((widths[i] ?? 0) - displayWidth(cell));
        return options.right?.includes(i) ? pad + cell : i === cells.length - 1 ? cell : cell + pad;
      })
      .join("  ");
  return [paint(line(header), "bold", options.color), ...rows.map(line)].join("\n");
}

/** One JSON document, pretty-printed, with a trailing newline. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

// The characters escaped besides the C0 and C1 controls a terminal acts on: the bidi embeddings, overrides and
// isolates (U+202A–U+202E, U+2066–U+2069), which reorder the text after them on a terminal that applies the
// Unicode bidi algorithm (a group ending in U+202E mirrors the rest of the line), and the line and paragraph
// separators (U+2028, U+2029), which some terminals and most pagers break a line at; and a lone surrogate (half
// of a pair without the other), which is written out as U+FFFD, one column that displayWidth counts as none.
/** A high surrogate not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = "[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]";
const BIDI_AND_SEPARATORS = "\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069";
const CONTROL = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI_AND_SEPARATORS}\\\\]|${LONE_SURROGATE}`, "g");
/** As {@link CONTROL}, but a line break stays one and a backslash is kept. */
const CONTROL_BUT_NEWLINE = new RegExp(`[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f${BIDI_AND_SEPARATORS}]|${LONE_SURROGATE}`, "g");
/** As {@link CONTROL}, but a backslash is kept. */
const CONTROL_BUT_BACKSLASH = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI_AND_SEPARATORS}]|${LONE_SURROGATE}`, "g");

/**
 * Text from the database (names, queues, groups, keys, messages) as it may be shown on a terminal:
 * every control character written as a visible escape (`\t`, `\n`, `\x1b`, `\u202e`, …), so an escape
 * sequence in a group name cannot recolour or move the terminal, a bidi override cannot reorder the text
 * after it, and a tab or line break cannot break a table; a backslash is doubled, so an escape shown is
 * never text that looked like one. A lone surrogate is written out too (`\ud83d`), so what is printed is what
 * {@link displayWidth} measured.
 * `"cell"` (the default): everything escaped. `"lines"` (a multi-line message): line breaks stay, other control characters are escaped, backslashes kept.
 * `"paragraph"` (one paragraph built around stored values, such as explain's summary, which quotes error
 * messages as JSON): every control character escaped, line breaks too, so a group holding "\n\n…" cannot
 * forge lines after it; backslashes kept, so the JSON quoting in it reads as JSON (`"say \"hi\""`).
 */
export function printable(text: string, mode: "cell" | "lines" | "paragraph" = "cell"): string {
  const pattern = { cell: CONTROL, lines: CONTROL_BUT_NEWLINE, paragraph: CONTROL_BUT_BACKSLASH }[mode];
  return text.replace(pattern, (c) => {
    if (c === "\\") return "\\\\";
    if (c === "\t") return "\\t";
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\x${code.toString(16).padStart(2, "0")}`;
  });
}

/** What `JSON.stringify` leaves raw that a terminal acts on: DEL and the C1 controls, the bidi controls, U+2028/U+2029. */
const JSON_RAW_CONTROL = new RegExp(`[\\u007f-\\u009f${BIDI_AND_SEPARATORS}]`, "g");

/**
 * Stored JSON as shown on a terminal: `JSON.stringify(value, null, indent)` (`"null"` for a value it drops), with
 * what it leaves raw and a terminal would act on written as JSON escapes (`\u009b`, `\u202e`): still valid JSON
 * that reads back as the same value, unlike {@link printable}'s `\x9b`.
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? "null").replace(JSON_RAW_CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * `text` shortened to at most `max` terminal columns ({@link displayWidth}) with an ellipsis, cut between grapheme
 * clusters: never inside a surrogate pair, an emoji sequence or a letter and its combining marks. Plain text
 * (no colour codes: paint after cutting).
 */
export function truncate(text: string, max: number): string {
  if (displayWidth(text) <= max) return text;
  let kept = "";
  let used = 0;
  for (const { segment } of graphemes.segment(text)) {
    const w = displayWidth(segment);
    if (used + w > max - 1) break;
    kept += segment;
    used += w;
  }
  return `${kept}…`;
}
