/**
 * Reading the SQL texts the statement plan rewrites: quoted runs, top-level words and matching
 * parentheses, each skipping what is quoted.
 */

/** The index just past the quoted run starting at `start` (doubled quotes and backslash escapes stay inside). */
export function quotedEnd(sql: string, start: number): number {
  const quote = sql[start];
  for (let i = start + 1; i < sql.length; i++) {
    const ch = sql[i];
    if (ch === "\\" && quote !== "`") i++;
    else if (ch === quote) {
      if (sql[i + 1] === quote) i++;
      else return i + 1;
    }
  }
  return sql.length;
}

/** Top-level (outside parentheses and quotes) occurrences of `word` (case-sensitive, whole word). */
export function topLevel(sql: string, word: string, from = 0): number[] {
  const found: number[] = [];
  let depth = 0;
  for (let i = from; i < sql.length; i++) {
    const ch = sql[i] as string;
    if (ch === "'" || ch === "`" || ch === '"') {
      i = quotedEnd(sql, i) - 1;
    } else if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (depth === 0 && sql.startsWith(word, i) && !/\w/.test(sql[i - 1] ?? " ") && !/\w/.test(sql[i + word.length] ?? " ")) {
      found.push(i);
    }
  }
  return found;
}

/** The index of the parenthesis closing the one opened at `open`. */
export function closing(sql: string, open: number): number {
  let depth = 0;
  for (let i = open; i < sql.length; i++) {
    const ch = sql[i] as string;
    if (ch === "'" || ch === "`" || ch === '"') i = quotedEnd(sql, i) - 1;
    else if (ch === "(") depth++;
    else if (ch === ")" && --depth === 0) return i;
  }
  throw new Error(`unbalanced parentheses in: ${sql}`);
}

/** `text` split at top-level `separator`s. */
export function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === "'" || ch === "`" || ch === '"') i = quotedEnd(text, i) - 1;
    else if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (depth === 0 && ch === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** Where the `SET` list starting at `from` of an `UPDATE` ends: its top-level `FROM`, `WHERE` or `RETURNING`, or the end. */
export function setListEnd(sql: string, from: number): number {
  const ends = ["FROM", "WHERE", "RETURNING"].map((word) => topLevel(sql, word, from)[0] ?? sql.length);
  return Math.min(...ends);
}
