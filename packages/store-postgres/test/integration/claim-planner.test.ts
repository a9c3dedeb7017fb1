import type pg from "pg";
import { compareClaimOrder } from "@cairnq/protocol/sdk";
import { describe, expect, it } from "vitest";
import { freshSchema, openStore, poolFor, q } from "../helpers.js";

/**
 * The plans the server ran on `pool`'s connections, as `auto_explain` reports them to the client
 * (every statement, JSON, with what was run: the `JIT` section is there only when the statement
 * was JIT-compiled). The library is loaded per session by the startup options (the test user is
 * a superuser), so nothing is left on the server.
 */
function explainedPool(schema: string): { pool: pg.Pool; plans: Record<string, unknown>[] } {
  const plans: Record<string, unknown>[] = [];
  const settings = [
    `search_path="${schema}"`,
    "session_preload_libraries=auto_explain",
    "auto_explain.log_min_duration=0",
    "auto_explain.log_analyze=on",
    "auto_explain.log_timing=off",
    "auto_explain.log_format=json",
    "auto_explain.log_level=notice",
    "client_min_messages=notice",
  ];
  const pool = poolFor(schema, { options: settings.map((s) => `-c ${s}`).join(" ") });
  pool.on("connect", (conn) => {
    conn.on("notice", (notice) => {
      const text = notice.message ?? "";
      const start = text.indexOf("{");
      if (text.startsWith("duration:") && start >= 0) plans.push(JSON.parse(text.slice(start)) as Record<string, unknown>);
    });
  });
  return { pool, plans };
}

describe("the claim transaction's planner setting", () => {
  it("leaves no claim JIT-compiled, a draw over two queues included (its sort keeps the disabled sort's cost, far over jit_above_cost)", async () => {
    const available = (await q<{ available: boolean }>("SELECT pg_jit_available() AS available"))[0]?.available === true;
    const schema = await freshSchema();
    const { pool, plans } = explainedPool(schema);
    const store = openStore(pool, { schema, listen: false });
    await store.connect();
    for (let i = 0; i < 6; i += 1) await store.submit({ name: "a", payload: { i }, queue: i % 2 === 0 ? "q0" : "q1" });
    plans.length = 0;
    const claimed: string[] = [];
    // More than five executions, so a prepared statement's generic plan is made and used too.
    for (let i = 0; i < 7; i += 1) {
      claimed.push(...(await store.claim({ queues: ["q0", "q1"], workerId: "w", probe: false, names: ["a"], limit: 1 })).map((t) => t.id));
    }
    expect(claimed).toHaveLength(6);
    const draws = plans.filter((p) => String(p["Query Text"]).includes("status = 'running'"));
    expect(draws.length).toBeGreaterThanOrEqual(7);
    // Without JIT on the server the claim could not be compiled either; with it, not one was.
    expect(draws.filter((p) => "JIT" in p).map((p) => p["JIT"])).toEqual([]);
    if (available) expect(draws.some((p) => JSON.stringify(p["Plan"]).includes('"Sort"'))).toBe(true);
    await store.close();
  });
});

/** Every plan node under (and including) `node`. */
function nodesOf(node: Record<string, unknown>): Record<string, unknown>[] {
  const children = (node["Plans"] as Record<string, unknown>[] | undefined) ?? [];
  return [node, ...children.flatMap(nodesOf)];
}

/** The rows a plan read from the task table: each scan's rows (per loop) and those its filters removed. */
function taskRowsRead(plan: Record<string, unknown>): number {
  let read = 0;
  for (const node of nodesOf(plan["Plan"] as Record<string, unknown>)) {
    if (node["Relation Name"] !== "cairnq_tasks" || node["Node Type"] === "ModifyTable") continue;
    const removed = Number(node["Rows Removed by Filter"] ?? 0) + Number(node["Rows Removed by Index Recheck"] ?? 0);
    read += Number(node["Actual Rows"]) * Number(node["Actual Loops"]) + removed;
  }
  return read;
}

describe("the claim draw over several queues", () => {
  it("reads each queue's first rows in claim-index order, a few per queue and claim, not every due row of the queues", async () => {
    const schema = await freshSchema();
    const { pool, plans } = explainedPool(schema);
    const store = openStore(pool, { schema, listen: false });
    await store.connect();
    // 4,000 due tasks over four queues (and 1,000 in a fifth the claim does not name), three priorities.
    const due = Date.now() - 60_000;
    await pool.query(
      `INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, priority, run_at_ms, root_id, created_at_ms, updated_at_ms) ` +
        `SELECT 'task_01' || lpad(n::text, 24, '0'), 'a', 'q' || (n % 5), 'queued', '{}', '{}', n % 3, $1::bigint + n, 'task_01' || lpad(n::text, 24, '0'), $1::bigint, $1::bigint ` +
        `FROM generate_series(1, 5000) n`,
      [due],
    );
    await pool.query("ANALYZE cairnq_tasks");
    const queues = ["q0", "q1", "q2", "q3"];
    const expected = (await pool.query<{ id: string }>(`SELECT id FROM cairnq_tasks WHERE queue = ANY($1) ORDER BY priority DESC, run_at_ms, id LIMIT 28`, [queues])).rows.map((r) => r.id);
    plans.length = 0;
    const claimed: string[] = [];
    // More than five executions, so a prepared statement's generic plan is made and used too.
    for (let i = 0; i < 7; i += 1) {
      const rows = await store.claim({ queues, workerId: "w", probe: false, names: ["a"], limit: 4 });
      claimed.push(...rows.sort(compareClaimOrder).map((t) => t.id));
    }
    // The claim order over the four queues, exactly as the sorting read took it.
    expect(claimed).toEqual(expected);
    const draws = plans.filter((p) => String(p["Query Text"]).includes("SET status = 'running'"));
    expect(draws.length).toBeGreaterThanOrEqual(7);
    for (const draw of draws) {
      // The window: 4 × 4 + 16 = 32 rows a queue (128), read again by key (32), and the 4 taken: 164, where sorting read 4,000.
      expect(taskRowsRead(draw)).toBeLessThanOrEqual(200);
      // One index walk per queue, on a claim index (with the name's, when one name is asked for), and no sort of the backlog.
      const nodes = nodesOf(draw["Plan"] as Record<string, unknown>);
      const walks = nodes.filter((n) => String(n["Index Name"]).startsWith("cairnq_tasks_claim"));
      expect(walks.map((n) => [String(n["Index Cond"]).includes("queue = cq_q.cq_value"), n["Actual Loops"]])).toEqual([[true, 4]]);
      expect(nodes.filter((n) => n["Node Type"] === "Sort" && Number(n["Actual Rows"]) > 128)).toEqual([]);
    }
    await store.close();
  });
});
