import type { Params } from "@cairnq/protocol/adapter";
import { CANCEL, DRAW, FAIL, HEARTBEAT, HEARTBEAT_BATCH, PROGRESS, PURGE, RECOVER, RETRY, SUBMIT, x } from "@cairnq/protocol/adapter";
import { describe, expect, it } from "vitest";
import type { StatementTemplate } from "../src/index.js";
import { ExprCompiler } from "../src/compiler.js";
import {
  deleteTemplate,
  insertTemplate,
  POSTGRES_CLOCK,
  PostgresSyntax,
  PROBE_TEMPLATE,
  ProcessClock,
  rowTransitionTemplate,
  setTransitionTemplate,
  SqliteSyntax,
  StatementCompiler,
} from "../src/index.js";
import { LIST_TEMPLATE, QUEUE_DEPTH_TEMPLATE, UPSERT_KEY_TEMPLATE } from "../src/statements.js";

const sqlite = new StatementCompiler(new SqliteSyntax(), new ProcessClock(() => 1_000));
const postgres = new StatementCompiler(new PostgresSyntax(), POSTGRES_CLOCK, true);

const DRAW_T = setTransitionTemplate(DRAW, "task");
const draw = (queues: string[], names: string[] | null): Params => ({ queues, names, limit: 5, workerId: "w", leaseMs: 100 });
const purge = (over: Params = {}): Params => ({ olderThanMs: 0, queue: null, status: null, name: null, limit: 10, ...over });

describe("a multi-row statement's columns on Postgres", () => {
  it("are array literals: every value quoted, backslash and quote escaped, NULL for null", () => {
    const rows: Params[] = [{ v: 'a"b' }, { v: "c\\d" }, { v: null }, { v: 7 }, { v: true }, {}, { v: "{x,y}" }];
    expect(new PostgresSyntax().batchColumn(rows, "v", "text")).toBe('{"a\\"b","c\\\\d",NULL,"7","true",NULL,"{x,y}"}');
    expect(new PostgresSyntax().batchColumn([], "v", "text")).toBe("{}");
  });

  it("leave any other value to the driver, as a plain array", () => {
    const when = new Date(0);
    expect(new PostgresSyntax().batchColumn([{ v: "a" }, { v: when }], "v", "text")).toEqual(["a", when]);
  });
});

describe("a list parameter on Postgres (bindValue of a textList)", () => {
  it("is bound as the text of its array literal, as a multi-row column is; other types as given", () => {
    const syntax = new PostgresSyntax();
    expect(syntax.bindValue(['a"b', "c\\d", null, "{x,y}", "g#1"], "textList")).toBe('{"a\\"b","c\\\\d",NULL,"{x,y}","g#1"}');
    expect(syntax.bindValue([], "textList")).toBe("{}");
    expect(syntax.bindValue("text", "text")).toBe("text");
    expect(syntax.bindValue(7, "int")).toBe(7);
  });

  it("leaves a list holding anything but scalars to the driver, as the array it was", () => {
    const list = ["a", new Date(0)];
    expect(new PostgresSyntax().bindValue(list, "textList")).toBe(list);
  });
});

describe("each outer row's top rows on Postgres (topRowsJoin)", () => {
  it("takes the whole row from a subquery that selects only its row's key, and joins the table by key after any other", () => {
    const syntax = new PostgresSyntax();
    expect(syntax.topRowsJoin("tg_table", "b", "task_id", "SELECT tg.task_id AS task_id FROM tg_table tg WHERE tg.k = g.k ORDER BY tg.p DESC LIMIT 2")).toBe(
      "LEFT JOIN LATERAL (SELECT tg.* FROM tg_table tg WHERE tg.k = g.k ORDER BY tg.p DESC LIMIT 2) b ON TRUE",
    );
    // Another table, another column or another alias than the one it reads: the subquery as it is, then the table by key.
    for (const subquery of [
      "SELECT o.task_id AS task_id FROM other o WHERE o.k = g.k LIMIT 2",
      "SELECT tg.id AS task_id FROM tg_table tg WHERE tg.k = g.k LIMIT 2",
      "SELECT x.task_id AS task_id FROM tg_table tg WHERE tg.k = g.k LIMIT 2",
    ]) {
      expect(syntax.topRowsJoin("tg_table", "b", "task_id", subquery)).toBe(`LEFT JOIN LATERAL (${subquery}) b_top ON TRUE LEFT JOIN tg_table b ON b.task_id = b_top.task_id`);
    }
  });
});

describe("claim draws (§5.10: one queue / one name compile to equality)", () => {
  it("one queue, one name: plain equalities, no json_each", () => {
    const s = sqlite.statement(DRAW_T, draw(["q"], ["a"]));
    expect(s.sql).toContain("queue = ?");
    expect(s.sql).toContain("name = ?");
    expect(s.sql).not.toContain("json_each");
    expect(s.parameters(draw(["q"], ["a"]))).toEqual(["w", 1_000, 100, "q", "a", 5]);
  });

  it("several queues and names expand JSON lists with json_each", () => {
    const s = sqlite.statement(DRAW_T, draw(["q", "r"], ["a", "b"]));
    expect(s.sql).toContain("queue IN (SELECT value FROM json_each(?");
    expect(s.sql).toContain("name IN (SELECT value FROM json_each(?");
    expect(s.parameters(draw(["q", "r"], ["a", "b"]))).toContain('["q","r"]');
  });

  it("a null name list drops the name condition", () => {
    const s = sqlite.statement(DRAW_T, draw(["q"], null));
    expect(s.sql).not.toMatch(/\bname\b/);
    expect(s.binds.map((b) => ("name" in b ? b.name : b.kind))).not.toContain("names");
  });

  it("an empty name list keeps a condition that matches nothing", () => {
    const s = sqlite.statement(DRAW_T, draw(["q"], []));
    expect(s.sql).toContain("name IN (SELECT value FROM json_each(");
  });

  it("is ONE update with a LIMITed id subquery in the protocol order", () => {
    const s = sqlite.statement(DRAW_T, draw(["q"], ["a"]));
    expect(s.sql).toMatch(/^UPDATE cairnq_tasks SET .* WHERE id IN \(SELECT id FROM cairnq_tasks WHERE .* ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT \?\d+\) RETURNING \*$/);
    expect(s.sql).not.toContain("SKIP LOCKED");
  });

  it("binds now once per statement (one numbered parameter, read once per execution)", () => {
    let reads = 0;
    const c = new StatementCompiler(new SqliteSyntax(), new ProcessClock(() => ++reads));
    const s = c.statement(DRAW_T, draw(["q"], ["a"]));
    expect(s.binds.filter((b) => b.kind === "now")).toHaveLength(1);
    expect(s.parameters(draw(["q"], ["a"]))).toContain(1);
    expect(reads).toBe(1);
    s.parameters(draw(["q"], ["a"]));
    expect(reads).toBe(2);
  });

  it("is compiled once per shape and reused", () => {
    expect(sqlite.statement(DRAW_T, draw(["a"], null))).toBe(sqlite.statement(DRAW_T, draw(["b"], null)));
    expect(sqlite.statement(DRAW_T, draw(["a"], null))).not.toBe(sqlite.statement(DRAW_T, draw(["a", "b"], null)));
  });

  it("Postgres: text[] with = any(), casts, clock_timestamp() and SKIP LOCKED", () => {
    const one = postgres.statement(DRAW_T, draw(["q"], null));
    expect(one.sql).toContain("queue = $");
    expect(one.sql).toContain("::text");
    expect(one.sql).toContain("clock_timestamp()");
    expect(one.sql).toContain("LIMIT $");
    expect(one.sql).toContain("FOR UPDATE SKIP LOCKED)");
    const many = postgres.statement(DRAW_T, draw(["q", "r"], ["a", "b"]));
    expect(many.sql).toMatch(/queue = any\(\$\d+::text\[\]\)/);
    expect(many.sql).toMatch(/name = any\(\$\d+::text\[\]\)/);
    // Lists are bound as the text of their array literal, which the placeholder's `::text[]` cast reads.
    expect(many.parameters(draw(["q", "r"], ["a", "b"]))).toContainEqual('{"q","r"}');
  });

  it("Postgres, several queues: each queue's first rows in index order (a window), locked among them only as taken, the sorting pick only past a full window", () => {
    const many = postgres.statement(DRAW_T, draw(["q", "r"], ["a", "b"]));
    const queues = /unnest\((\$\d+)::text\[\]\)/.exec(many.sql)?.[1];
    const limit = /LIMIT (\$\d+)::bigint FOR UPDATE OF cairnq_tasks SKIP LOCKED/.exec(many.sql)?.[1];
    expect([queues, limit]).toEqual([expect.any(String), expect.any(String)]);
    // Per queue: its own equality instead of the list, the rest of the condition, the claim order, the window.
    expect(many.sql).toContain(
      `CROSS JOIN LATERAL (SELECT id AS cq_id, priority AS cq_priority, run_at_ms AS cq_run_at_ms FROM cairnq_tasks WHERE queue = cq_q.cq_value AND status = 'queued' AND name = any(`,
    );
    expect(many.sql).toContain(`ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT (4 * ${limit}::bigint + 16)) cq_c`);
    // The fallback runs only when the pick was short of a full window.
    expect(many.sql).toContain(`(SELECT count(*) FROM cq_pick) < ${limit}::bigint AND (SELECT count(*) FROM cq_w) >= (4 * ${limit}::bigint + 16)`);
    // One queue: the one sorting pick, which the claim index answers in order.
    expect(postgres.statement(DRAW_T, draw(["q"], ["a", "b"])).sql).not.toContain("cq_w");
  });

  it("a syntax without listPicks (SQLite) keeps the one sorting pick over several queues: sortedPicks", () => {
    const s = sqlite.statement(DRAW_T, draw(["q", "r"], null));
    expect(s.sql).toMatch(/WHERE id IN \(SELECT id FROM cairnq_tasks WHERE status = 'queued' AND queue IN \(SELECT value FROM json_each\(\?\d+\)\) AND run_at_ms <= \?\d+ ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT \?\d+\) RETURNING \*$/);
  });
});

describe("row transitions", () => {
  it("compile to ONE conditional UPDATE … RETURNING *", () => {
    const params = { taskId: "t", workerId: "w", attempt: null, error: "{}", retryable: true, delayMs: 0 };
    const s = sqlite.statement(rowTransitionTemplate(FAIL), params);
    expect(s.sql).toMatch(/^UPDATE cairnq_tasks SET status = CASE WHEN cancel_requested_at_ms IS NOT NULL THEN 'canceled' WHEN .* RETURNING \*$/);
    expect(s.sql).toContain("updated_at_ms = ?");
    expect(s.sql.match(/ WHERE /g)).toHaveLength(1);
  });

  it("a null attempt fence drops the fence; a given one is plain equality", () => {
    const base = { taskId: "t", workerId: "w", leaseMs: 10 };
    expect(sqlite.statement(rowTransitionTemplate(HEARTBEAT), { ...base, attempt: null }).sql).not.toContain("attempt");
    const fenced = sqlite.statement(rowTransitionTemplate(HEARTBEAT), { ...base, attempt: 2 });
    expect(fenced.sql).toMatch(/attempt = \?\d+/);
    expect(fenced.sql).not.toContain("IS NULL");
  });

  it("coalesce folds by shape: a null progress leaves the column alone, a given message is just the parameter", () => {
    const s = sqlite.statement(rowTransitionTemplate(PROGRESS), { taskId: "t", workerId: "w", attempt: null, progress: null, message: "m" });
    expect(s.sql).toMatch(/^UPDATE cairnq_tasks SET message = \?1, updated_at_ms = \?2 WHERE /);
    expect(s.sql).not.toContain("progress =");
  });

  it("booleans bind as 0/1 on SQLite and natively on Postgres", () => {
    const params = { taskId: "t", resetAttempt: true };
    const lite = sqlite.statement(rowTransitionTemplate(RETRY), params);
    expect(lite.sql).toMatch(/CASE WHEN \?\d+ = 1 THEN 0 ELSE attempt END/);
    expect(lite.parameters(params)).toContain(1);
    const pg = postgres.statement(rowTransitionTemplate(RETRY), params);
    expect(pg.sql).toMatch(/CASE WHEN \$\d+::boolean = TRUE THEN 0 ELSE attempt END/);
    expect(pg.sql).toContain("now()");
    expect(pg.parameters(params)).toContain(true);
  });

  it("cancel reads the transaction clock on Postgres", () => {
    const s = postgres.statement(rowTransitionTemplate(CANCEL), { taskId: "t" });
    expect(s.sql).toContain("extract(epoch from now())");
    expect(s.sql).not.toContain("clock_timestamp");
  });
});

describe("set transitions, insert, purge, probe and reads", () => {
  it("recovery covers the whole table, with SKIP LOCKED only on Postgres", () => {
    expect(sqlite.statement(setTransitionTemplate(RECOVER, ["id"]), {}).sql).toMatch(
      /^UPDATE cairnq_tasks SET .* WHERE status = 'running' AND lease_until_ms IS NOT NULL AND lease_until_ms <= \?\d+ RETURNING id$/,
    );
    expect(postgres.statement(setTransitionTemplate(RECOVER, ["id"]), {}).sql).toContain(
      "WHERE id IN (SELECT id FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms IS NOT NULL AND lease_until_ms <= (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint) FOR UPDATE SKIP LOCKED) RETURNING id",
    );
  });

  it("Postgres reads the real-time clock once per statement, as a scalar subquery the planner can use as an index bound", () => {
    // A bare `clock_timestamp()` expression is volatile: Postgres evaluates it per row and cannot bound an index
    // scan with it, so recovery would filter every entry of the lease index (dead ones too) on every claim.
    const sql = postgres.statement(setTransitionTemplate(RECOVER, ["id"]), {}).sql;
    expect(sql).not.toMatch(/(?<!SELECT )\(extract\(epoch from clock_timestamp\(\)\)/);
    expect(sql).toContain("lease_until_ms <= (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint)");
  });

  it("the recovery envelope is a JSON literal (cast to jsonb on Postgres)", () => {
    expect(sqlite.statement(setTransitionTemplate(RECOVER, ["id"]), {}).sql).toContain(`'{"type":"LeaseExpired","code":"lease_expired"`);
    expect(postgres.statement(setTransitionTemplate(RECOVER, ["id"]), {}).sql).toContain(`cast('{"type":"LeaseExpired"`);
  });

  it("heartbeat_batch returns only id and the flag; one id is equality", () => {
    const params = { taskIds: ["a"], workerId: "w", leaseMs: 10, attempt: null };
    const s = sqlite.statement(setTransitionTemplate(HEARTBEAT_BATCH, ["id", "cancel_requested_at_ms"]), params);
    expect(s.sql).toMatch(/WHERE id = \?\d+ AND status = 'running'/);
    expect(s.sql).toMatch(/RETURNING id, cancel_requested_at_ms$/);
  });

  it("purge drops null filters and keeps the terminal-status test", () => {
    const bare = sqlite.statement(deleteTemplate(PURGE), purge());
    expect(bare.sql).toBe(
      "DELETE FROM cairnq_tasks WHERE id IN (SELECT id FROM cairnq_tasks WHERE status IN ('succeeded', 'failed', 'canceled') AND " +
        "completed_at_ms IS NOT NULL AND completed_at_ms < ?1 - ?2 AND NOT coalesce((SELECT 1 FROM cairnq_tasks cq_parent " +
        "WHERE cq_parent.id = cairnq_tasks.parent_id AND cq_parent.status IN ('queued', 'running')), 0) = 1 " +
        "ORDER BY completed_at_ms ASC LIMIT ?3) RETURNING id",
    );
    const filtered = sqlite.statement(deleteTemplate(PURGE), purge({ queue: "q", status: "failed", name: "n" }));
    expect(filtered.sql).toContain("queue = ?");
    expect(filtered.sql).toContain("status = ?");
    expect(filtered.sql).toContain("name = ?");
    expect(filtered.sql).toContain("status IN ('succeeded', 'failed', 'canceled')");
  });

  it("submit is one INSERT … RETURNING * with root_id defaulting to the id", () => {
    const params = {
      taskId: "t",
      name: "n",
      queue: "q",
      payload: "{}",
      metadata: "{}",
      maxAttempts: 3,
      priority: 0,
      runAtDelayMs: 0,
      parentId: null,
      rootId: null,
      correlationId: null,
    };
    const s = sqlite.statement(insertTemplate(SUBMIT), params);
    expect(s.sql).toMatch(/^INSERT INTO cairnq_tasks \(id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, parent_id, root_id, correlation_id, created_at_ms, updated_at_ms\) VALUES \(.*\) RETURNING \*$/);
    expect(s.sql).toContain("?1, ?2, ?3, 'queued'");
    expect(s.sql).not.toContain("coalesce");
    const withRoot = sqlite.statement(insertTemplate(SUBMIT), { ...params, rootId: "r" });
    expect(withRoot.sql).not.toContain("coalesce");
    expect(postgres.statement(insertTemplate(SUBMIT), params).sql).toContain("cast($4 as jsonb)");
  });

  it("the probe is one SELECT of two EXISTS", () => {
    const s = sqlite.statement(PROBE_TEMPLATE, { queues: ["q"], names: null });
    expect(s.sql).toBe(
      "SELECT EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'queued' AND queue = ?1 AND run_at_ms <= ?2) " +
        "OR EXISTS (SELECT 1 FROM cairnq_tasks WHERE status = 'running' AND lease_until_ms IS NOT NULL AND lease_until_ms <= ?2) AS found",
    );
  });

  it("list drops absent filters; queue depth counts over a LIMITed subquery", () => {
    const all = { status: null, queue: null, name: null, rootId: null, correlationId: null, limit: 10, offset: 0 };
    expect(sqlite.statement(LIST_TEMPLATE, all).sql).toBe("SELECT * FROM cairnq_tasks ORDER BY created_at_ms DESC, id DESC LIMIT ?1 OFFSET ?2");
    expect(sqlite.statement(LIST_TEMPLATE, { ...all, name: "n" }).sql).toContain("WHERE name = ?1 ORDER BY");
    expect(sqlite.statement(QUEUE_DEPTH_TEMPLATE, { queue: "q", maxDepth: 3 }).sql).toBe(
      "SELECT count(*) AS n FROM (SELECT 1 AS one FROM cairnq_tasks WHERE queue = ?1 AND status = 'queued' LIMIT ?2) AS q",
    );
  });

  it("the key upsert keeps created_at_ms", () => {
    const s = sqlite.statement(UPSERT_KEY_TEMPLATE, { key: "k", taskId: "t" });
    expect(s.sql).toBe(
      'INSERT INTO cairnq_task_keys ("key", task_id, created_at_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?3) ' +
        "ON CONFLICT (\"key\") DO UPDATE SET task_id = excluded.task_id, updated_at_ms = excluded.updated_at_ms",
    );
  });
});

describe("constant folding follows three-valued logic", () => {
  const fold = (expr: Parameters<ExprCompiler["condition"]>[0], shape: Record<string, "n" | "v" | "1" | "*">): string | null => {
    const c = new ExprCompiler(new SqliteSyntax(), new Map(Object.entries(shape)), null);
    return c.condition(expr);
  };
  const p = x.param("p", "int");

  it("IS NULL of a known-null parameter is true, of a bound one false", () => {
    expect(fold(x.isNull(p), { p: "n" })).toBeNull();
    expect(fold(x.isNull(p), { p: "v" })).toBe("0");
    expect(fold(x.notNull(p), { p: "v" })).toBeNull();
  });

  it("a comparison with NULL is NULL, and AND keeps it unknown", () => {
    expect(fold(x.eq(x.col("attempt"), p), { p: "n" })).toBe("NULL");
    expect(fold(x.and(x.eq(x.col("attempt"), p), x.gt(x.col("priority"), x.lit(1))), { p: "n" })).toBe("NULL AND priority > 1");
    expect(fold(x.or(x.eq(x.col("attempt"), p), x.lit(true)), { p: "n" })).toBeNull();
    expect(fold(x.not(x.eq(x.col("attempt"), p)), { p: "n" })).toBe("NULL");
  });

  it("parenthesizes by precedence", () => {
    const expr = x.and(x.or(x.eq(x.col("a" as never), x.lit(1)), x.eq(x.col("b" as never), x.lit(2))), x.not(x.and(x.isNull(x.col("c" as never)), x.isNull(x.col("d" as never)))));
    expect(fold(expr, {})).toBe("(a = 1 OR b = 2) AND NOT (c IS NULL AND d IS NULL)");
  });

  it("a parent condition is a scalar subquery by the parent's primary key, its columns read from the parent", () => {
    const q = x.param("q", "text");
    expect(fold(x.parent(x.optionalEq("queue", q)), { q: "v" })).toBe(
      "coalesce((SELECT 1 FROM cairnq_tasks cq_parent WHERE cq_parent.id = cairnq_tasks.parent_id AND cq_parent.queue = ?1), 0) = 1",
    );
    expect(fold(x.parent(x.optionalEq("queue", q)), { q: "n" })).toBe("coalesce((SELECT 1 FROM cairnq_tasks cq_parent WHERE cq_parent.id = cairnq_tasks.parent_id), 0) = 1");
    expect(fold(x.parent(x.eq(x.col("attempt"), p)), { p: "n" })).toBe("0");
    expect(fold(x.and(x.col("attempt"), x.not(x.parent(x.lit(false)))), {})).toBe("attempt");
    expect(() => fold(x.parent(x.parent(x.lit(true))), {})).toThrow(/its own parent/);
    // The qualifier ends with the parent condition: a column after it reads the row again.
    expect(fold(x.and(x.parent(x.col("attempt")), x.col("priority")), {})).toBe(
      "coalesce((SELECT 1 FROM cairnq_tasks cq_parent WHERE cq_parent.id = cairnq_tasks.parent_id AND cq_parent.attempt), 0) = 1 AND priority",
    );
  });

  it("CASE drops branches that can never hold", () => {
    const c = new ExprCompiler(new SqliteSyntax(), new Map([["p", "n"]]), null);
    expect(c.value(x.case([{ when: x.eq(p, x.lit(1)), then: x.lit(5) }], x.col("attempt")))).toBe("attempt");
  });
});

describe("templates", () => {
  it("every statement template reads only parameters it declares", () => {
    const templates: StatementTemplate[] = [DRAW_T, PROBE_TEMPLATE, LIST_TEMPLATE, QUEUE_DEPTH_TEMPLATE];
    for (const t of templates) expect(new Set(t.params.map((p) => p.name)).size).toBe(t.params.length);
  });
});
