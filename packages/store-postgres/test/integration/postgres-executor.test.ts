import { Kysely, PostgresDialect } from "kysely";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { PostgresStore } from "../../src/index.js";
import { freshSchema, openStore, poolFor, q, until } from "../helpers.js";

const W = "worker_plan";
const N = 300;

/**
 * A table whose statistics say nothing is queued (analyzed while every task was terminal), then
 * `N` queued tasks: the planner then estimates one queued row, and without the claim's planner
 * setting the draw scans `status_completed_idx` for `status = 'queued'` and sorts all `N`.
 */
async function staleStatistics(store: PostgresStore, schema: string): Promise<void> {
  for (let i = 0; i < N; i += 1) await store.submit({ name: "a", payload: { i } });
  await q(`UPDATE "${schema}".cairnq_tasks SET status = 'succeeded', completed_at_ms = 1`);
  await q(`ANALYZE "${schema}".cairnq_tasks`);
  for (let i = 0; i < N; i += 1) await store.submit({ name: "a", payload: { i } });
}

interface IndexUse {
  readonly scans: number;
  readonly read: number;
}

/** The schema's index counters by index name (flushed by a backend at the latest when it exits). */
async function indexUse(schema: string): Promise<Record<string, IndexUse>> {
  const rows = await q<{ i: string; scans: string; read: string }>(
    "SELECT indexrelname AS i, idx_scan AS scans, idx_tup_read AS read FROM pg_stat_user_indexes WHERE schemaname = $1",
    [schema],
  );
  return Object.fromEntries(rows.map((r) => [r.i, { scans: Number(r.scans), read: Number(r.read) }]));
}

describe("the claim transaction's planner setting", () => {
  it("draws through the claim indexes even where statistics make sorting every queued row look as cheap (pool and Kysely instance)", async () => {
    for (const kind of ["pool", "kysely"] as const) {
      const schema = await freshSchema();
      // The store's own pool (application_name to find its backends), ended with the store so its backends flush their counters.
      const app = `cq_plan_${kind}_${process.pid}`;
      const pool = poolFor(schema, { application_name: app });
      const db = kind === "kysely" ? new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) }) : null;
      const store = openStore(db ?? pool, { schema, listen: false });
      await store.connect();
      await staleStatistics(store, schema);
      // More than five executions per statement, so a prepared statement's generic plan is made and used too.
      const claimed: string[] = [];
      for (let i = 0; i < 8; i += 1) {
        claimed.push(...(await store.claim({ queues: ["default"], workerId: W, probe: false, limit: 1 })).map((t) => t.id));
        claimed.push(...(await store.claim({ queues: ["default"], workerId: W, probe: false, names: ["a"], limit: 1 })).map((t) => t.id));
      }
      expect(new Set(claimed).size).toBe(16);
      // The oldest queued tasks, in claim order.
      const order = await q<{ id: string }>(`SELECT id FROM "${schema}".cairnq_tasks WHERE status <> 'succeeded' ORDER BY priority DESC, run_at_ms, id LIMIT 16`);
      expect(claimed).toEqual(order.map((r) => r.id));
      await store.close();
      if (db !== null) await db.destroy();
      else await pool.end();
      // Every backend of the store flushed its counters on exit: 16 claims' draws (and lease recovery) were counted.
      expect(
        await until(async () => {
          const use = await indexUse(schema);
          return (use.cairnq_tasks_claim_idx?.scans ?? 0) + (use.cairnq_tasks_claim_name_idx?.scans ?? 0) + (use.cairnq_tasks_status_completed_idx?.scans ?? 0) >= 16;
        }, 15_000),
      ).toBe(true);
      const use = await indexUse(schema);
      // The draws went through the claim indexes (each reads about the rows it takes) ...
      expect(use.cairnq_tasks_claim_idx?.scans ?? 0).toBeGreaterThanOrEqual(8);
      expect(use.cairnq_tasks_claim_name_idx?.scans ?? 0).toBeGreaterThanOrEqual(8);
      // ... not by reading every queued row off status_completed_idx and sorting them (one such draw alone reads N).
      expect(use.cairnq_tasks_status_completed_idx?.read ?? 0).toBeLessThan(N);
    }
  });

  it("is the transaction's only: the connection's own setting is untouched after a claim (a transaction pooler hands it on)", async () => {
    const schema = await freshSchema();
    const pool: pg.Pool = poolFor(schema, { max: 1 });
    const store = openStore(pool, { schema, listen: false });
    await store.connect();
    await store.submit({ name: "a", payload: {} });
    await store.submit({ name: "a", payload: {} });
    // One draw that may be followed by another (BEGIN … COMMIT over two round trips), then a whole claim in one round trip.
    const draws = (_so: readonly unknown[], index: number): { names: null; limit: number } | null => (index === 0 ? { names: null, limit: 1 } : null);
    expect(await store.claim({ queues: ["default"], workerId: W, probe: false, draws })).toHaveLength(1);
    expect((await pool.query<{ enable_sort: string }>("SHOW enable_sort")).rows[0]?.enable_sort).toBe("on");
    expect(await store.claim({ queues: ["default"], workerId: W, probe: false })).toHaveLength(1);
    expect((await pool.query<{ enable_sort: string }>("SHOW enable_sort")).rows[0]?.enable_sort).toBe("on");
  });
});
