import type pg from "pg";
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
