/**
 * The statement plan's rewrites of assignment lists (see mysql-statement-plan.ts): Postgres' upsert
 * (`ON CONFLICT … DO UPDATE`) as MySQL's `ON DUPLICATE KEY UPDATE`, and the old-value stash that gives
 * MySQL's left-to-right assignments Postgres' semantics (every assignment reads the row as it was).
 */
import { TASKS_TABLE as TASKS } from "@cairnq/store-kysely";
import { closing, quotedEnd, setListEnd, splitTopLevel, topLevel } from "./mysql-sql-text.js";

/** The session variable holding whether a conditional upsert's condition held on the existing row. */
export const COND = "@cq_cond";

/**
 * The task column no transition assigns, which the plan's own assignments (the id capture, the old-value
 * stash) write back unchanged. Not the first assigned column: MariaDB runs an `UPDATE` whose `WHERE`
 * reads its own table with the standard semantics (every assignment sees the old row, the last of two
 * to one column wins), a plain one left to right; writing back a column nothing else assigns is
 * right under both.
 */
export const UNTOUCHED = "created_at_ms";

/**
 * `ON CONFLICT (cols) DO UPDATE SET … excluded.c …` → `ON DUPLICATE KEY UPDATE … VALUES(c) …`. A
 * conditional one (`… WHERE cond [RETURNING cols]`) evaluates `cond` on the existing row once into
 * `@cq_cond`, makes every assignment keep the old value when it is false, and returns nulls for a
 * row it left alone (the plan drops them): what Postgres' `RETURNING` gives.
 */
export function rewriteUpsert(sql: string): { sql: string; conditional: boolean } {
  const at = topLevel(sql, "ON CONFLICT")[0];
  if (at === undefined) return { sql, conditional: false };
  const open = sql.indexOf("(", at);
  const close = closing(sql, open);
  const rest = sql.slice(close + 1).trimStart();
  if (rest.startsWith("DO NOTHING")) {
    return { sql: sql.slice(0, at).replace(/^INSERT INTO/, "INSERT IGNORE INTO").trimEnd() + rest.slice("DO NOTHING".length), conditional: false };
  }
  if (!rest.startsWith("DO UPDATE SET ")) throw new Error(`no MySQL form for this upsert: ${sql}`);
  // In `INSERT … SELECT … ON DUPLICATE KEY UPDATE` a bare column may name the SELECT's too: qualify.
  const table = /^INSERT INTO (\w+)/.exec(sql)?.[1];
  if (table === undefined) throw new Error(`no MySQL form for this upsert: ${sql}`);
  const body = rest.slice("DO UPDATE SET ".length).replace(/\bexcluded\.(\w+)/g, "VALUES($1)");
  const head = `${sql.slice(0, at)}ON DUPLICATE KEY UPDATE `;
  const where = topLevel(body, "WHERE")[0];
  const returningAt = topLevel(body, "RETURNING")[0];
  const end = where ?? returningAt ?? body.length;
  const assignments = splitTopLevel(body.slice(0, end), ",").map(parseAssignment);
  const own = (column: string): string => (column.includes(".") ? column : `${table}.${column}`);
  if (where === undefined) {
    return { sql: `${head}${assignments.map((a) => `${own(a.column)} = ${a.value}`).join(", ")}${body.slice(end)}`, conditional: false };
  }
  const cond = body.slice(where + "WHERE".length, returningAt).trim();
  const returning = returningAt === undefined ? null : body.slice(returningAt + "RETURNING".length).trim();
  const first = own((assignments[0] as Assignment).column);
  const guarded = [
    `${first} = IF((${COND} := COALESCE(${cond}, 0)) IS NULL, ${first}, ${first})`,
    ...assignments.map((a) => `${own(a.column)} = IF(${COND}, ${a.value}, ${own(a.column)})`),
  ];
  const back = returning === null ? "" : ` RETURNING ${splitTopLevel(returning, ",").map((c) => `IF(${COND}, ${c.trim()}, NULL) AS ${c.trim()}`).join(", ")}`;
  return { sql: `${head}${guarded.join(", ")}${back}`, conditional: true };
}

interface Assignment {
  readonly column: string;
  readonly value: string;
}

function parseAssignment(text: string): Assignment {
  const eq = text.indexOf("=");
  if (eq === -1) throw new Error(`not an assignment: ${text}`);
  return { column: text.slice(0, eq).trim(), value: text.slice(eq + 1).trim() };
}

/**
 * Postgres evaluates every assignment of an `UPDATE` on the row as it was; MySQL evaluates a
 * single-table `UPDATE`'s (and `ON DUPLICATE KEY UPDATE`'s) assignments left to right, each seeing
 * the columns assigned before it. Where an assignment reads a column assigned before it, the plan
 * stashes that column's old value in `@cq_o_<column>` in a first assignment (which writes the first
 * column's own value back) and reads the stash instead.
 */
export function oldValuesInSet(sql: string): string {
  let head: string;
  let listStart: number;
  let listEnd: number;
  const update = /^UPDATE (\w+) SET /.exec(sql);
  if (update !== null) {
    listStart = update[0].length;
    listEnd = setListEnd(sql, listStart);
    head = sql.slice(0, listStart);
  } else {
    const odku = sql.indexOf("ON DUPLICATE KEY UPDATE ");
    if (odku === -1) return sql;
    listStart = odku + "ON DUPLICATE KEY UPDATE ".length;
    listEnd = topLevel(sql, "RETURNING", listStart)[0] ?? sql.length;
    head = sql.slice(0, listStart);
  }
  const assignments = splitTopLevel(sql.slice(listStart, listEnd), ",").map(parseAssignment);
  const assigned = new Set<string>();
  const stashed = new Set<string>();
  const rewritten = assignments.map((a) => {
    const value = replaceColumns(a.value, assigned, stashed);
    assigned.add(a.column);
    return `${a.column} = ${value}`;
  });
  if (stashed.size === 0) return sql;
  const first = update?.[1] === TASKS ? UNTOUCHED : (assignments[0] as Assignment).column;
  const stash = `${first} = IF(CONCAT_WS(',', ${[...stashed].map((c) => `(@cq_o_${c} := ${c})`).join(", ")}) IS NULL, ${first}, ${first})`;
  const tail = sql.slice(listEnd);
  return `${head}${[stash, ...rewritten].join(", ")}${tail.startsWith(" ") || tail === "" ? "" : " "}${tail}`;
}

/** Bare references to `columns` in `expr` (outside quotes, subqueries and qualified names) → their stash. */
function replaceColumns(expr: string, columns: ReadonlySet<string>, stashed: Set<string>): string {
  if (columns.size === 0) return expr;
  let out = "";
  for (let i = 0; i < expr.length; i++) {
    const ch = expr[i] as string;
    if (ch === "'" || ch === "`" || ch === '"') {
      const end = quotedEnd(expr, i);
      out += expr.slice(i, end);
      i = end - 1;
      continue;
    }
    if (ch === "(" && expr.startsWith("(SELECT ", i)) {
      const end = closing(expr, i);
      out += expr.slice(i, end + 1);
      i = end;
      continue;
    }
    if (/[A-Za-z_]/.test(ch) && !/[\w.@]/.test(expr[i - 1] ?? " ")) {
      let j = i;
      while (j < expr.length && /\w/.test(expr[j] as string)) j++;
      const word = expr.slice(i, j);
      if (word === "VALUES" && expr[j] === "(") {
        const end = closing(expr, j);
        out += expr.slice(i, end + 1);
        i = end;
        continue;
      }
      if (columns.has(word) && expr[j] !== "(" && expr[j] !== ".") {
        stashed.add(word);
        out += `@cq_o_${word}`;
      } else {
        out += word;
      }
      i = j - 1;
      continue;
    }
    out += ch;
  }
  return out;
}
