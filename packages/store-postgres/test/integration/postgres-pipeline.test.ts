import { Kysely, PostgresDialect } from "kysely";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { PIPELINE_SQL } from "../../src/postgres-pipeline.js";
import { prepareRegistered, registerPrepared } from "../../src/postgres-prepared.js";
import { client, freshSchema, openStore, poolFor, q } from "../helpers.js";

const W = "worker_pipeline";

/** What reached `client.query` of the pool's clients underneath the store's wrapper: pipelines by their statements, others by text. */
function recordedPool(schema: string): { pool: pg.Pool; calls: string[][] } {
  const pool = poolFor(schema);
  const calls: string[][] = [];
  pool.on("connect", (c: pg.PoolClient) => {
    const query = c.query.bind(c) as (...args: unknown[]) => unknown;
    (c as unknown as { query: unknown }).query = (...args: unknown[]): unknown => {
      const [config] = args;
      if (typeof config === "string") calls.push([config]);
      else if (typeof (config as { submit?: unknown }).submit === "function" && (config as { text?: unknown }).text === PIPELINE_SQL) {
        calls.push(["<pipeline>"]);
      } else calls.push([String((config as { text?: unknown }).text)]);
      return query(...args);
    };
  });
  return { pool, calls };
}

function pipelineOf(...statements: { sql: string; parameters: unknown[] }[]): [string, unknown[]] {
  return [PIPELINE_SQL, [statements]];
}

describe("the claim's first round trip is one pipeline", () => {
  it("a planner that may draw again: BEGIN, lease recovery and the first draw go as one query, then COMMIT — two round trips", async () => {
    const schema = await freshSchema();
    const { pool, calls } = recordedPool(schema);
    const store = openStore(pool, { schema });
    await store.connect();
    // The LISTEN check's NOTIFY goes through this pool too, in the background: let it finish before recording.
    await store.dialect.wakeups.whenSettled();
    const submitted = await store.submit({ name: "a", payload: { n: 1 } });
    calls.length = 0;
    const draws = (_so: readonly unknown[], index: number): { names: null; limit: number } | null => (index === 0 ? { names: null, limit: 1 } : null);
    const claimed = await store.claim({ queues: ["default"], workerId: W, probe: false, draws });
    expect(claimed.map((t) => [t.id, t.status, t.worker_id, t.attempt])).toEqual([[submitted.id, "running", W, 1]]);
    expect(calls.map((c) => c[0])).toEqual(["<pipeline>", "COMMIT"]);
    // Committed: another connection sees the claim.
    const [row] = await q<{ status: string; worker_id: string }>(`SELECT status, worker_id FROM "${schema}".cairnq_tasks WHERE id = $1`, [submitted.id]);
    expect(row).toEqual({ status: "running", worker_id: W });
  });

  it("a draw the planner marks last (a plain claim's one draw is): COMMIT joins the pipeline — one round trip, committed before it returns", async () => {
    const schema = await freshSchema();
    const { pool, calls } = recordedPool(schema);
    const store = openStore(pool, { schema });
    await store.connect();
    // The LISTEN check's NOTIFY goes through this pool too, in the background: let it finish before recording.
    await store.dialect.wakeups.whenSettled();
    const submitted = await store.submit({ name: "a", payload: { n: 1 } });
    await store.submit({ name: "a", payload: { n: 2 } });
    calls.length = 0;
    const claimed = await store.claim({ queues: ["default"], workerId: W, probe: false });
    expect(claimed.map((t) => [t.id, t.status, t.worker_id, t.attempt])).toEqual([[submitted.id, "running", W, 1]]);
    expect(calls.map((c) => c[0])).toEqual(["<pipeline>"]);
    // A planner's `last` is taken at its word: it is not asked for another draw.
    const asked: number[] = [];
    calls.length = 0;
    const more = await store.claim({
      queues: ["default"],
      workerId: W,
      probe: false,
      draws: (_so, index) => {
        asked.push(index);
        return { names: null, limit: 1, last: true };
      },
    });
    expect([more.length, asked, calls.map((c) => c[0])]).toEqual([1, [0], ["<pipeline>"]]);
    // Committed: another connection sees the claim.
    const [row] = await q<{ status: string; worker_id: string }>(`SELECT status, worker_id FROM "${schema}".cairnq_tasks WHERE id = $1`, [submitted.id]);
    expect(row).toEqual({ status: "running", worker_id: W });
  });

  it("a whole transaction in one pipeline reaches the wire without BEGIN, the transaction setup or COMMIT: one implicit transaction", async () => {
    const schema = await freshSchema();
    const pool = poolFor(schema);
    // The statements each pooled connection executes (one Bind each), by text: what the server runs.
    const executed: string[] = [];
    pool.on("connect", (c: pg.PoolClient) => {
      const wire = (c as unknown as { connection: { parse: (m: { text: string; name?: string }) => void; bind: (m: { statement?: string }) => void } }).connection;
      const texts = new Map<string, string>();
      let unnamed = "";
      const parse = wire.parse.bind(wire);
      const bind = wire.bind.bind(wire);
      wire.parse = (m) => {
        if (m.name === undefined || m.name === "") unnamed = m.text;
        else texts.set(m.name, m.text);
        parse(m);
      };
      wire.bind = (m) => {
        executed.push(m.statement === undefined || m.statement === "" ? unnamed : (texts.get(m.statement) ?? m.statement));
        bind(m);
      };
    });
    const store = openStore(pool, { schema });
    await store.connect();
    await store.dialect.wakeups.whenSettled();
    const task = await store.submit({ name: "a", payload: {} });
    executed.length = 0;
    const claimed = await store.claim({ queues: ["default"], workerId: W, probe: false });
    expect(claimed.map((t) => t.id)).toEqual([task.id]);
    // The claim's planner setting (a transaction-local set_config: postgres-executor.ts), lease recovery and the draw,
    // nothing else: no BEGIN, no SET LOCAL, no COMMIT.
    expect(executed.map((text) => text.trim().split(/\s+/).slice(0, 3).join(" "))).toEqual([
      "SELECT set_config('enable_sort', 'off',",
      "UPDATE cairnq_tasks SET",
      "UPDATE cairnq_tasks SET",
    ]);
    expect(executed.some((text) => /^\s*(begin|commit|set)\b/i.test(text))).toBe(false);
    // Committed at the Sync: another connection sees the claim, and the connection is outside any transaction.
    const [row] = await q<{ status: string }>(`SELECT status FROM "${schema}".cairnq_tasks WHERE id = $1`, [task.id]);
    expect(row?.status).toBe("running");
    // A transaction that stays open across round trips (a planner that may draw again) still opens with BEGIN.
    await store.submit({ name: "a", payload: {} });
    executed.length = 0;
    const draws = (_so: readonly unknown[], index: number): { names: null; limit: number } | null => (index === 0 ? { names: null, limit: 1 } : null);
    expect(await store.claim({ queues: ["default"], workerId: W, probe: false, draws })).toHaveLength(1);
    expect(executed[0]?.trim().toUpperCase()).toBe("BEGIN");
    await store.close();
  });

  it("a group claim whose draw the planner marks last: the head with the group reads, then the draw's batch with the probe again and COMMIT — two round trips", async () => {
    const schema = await freshSchema();
    const { pool, calls } = recordedPool(schema);
    const store = openStore(pool, { schema });
    await store.connect();
    await store.dialect.wakeups.whenSettled();
    // The store's first group claim of a name also reads the idle group rows it may prune (group-prune.ts): one query
    // more, once a minute; the claims measured below are the ordinary ones after it.
    const warm = await store.submit({ name: "a", payload: { n: 0 }, group: "g0" });
    const [warmed] = await store.claim({ queues: ["default"], workerId: W, limit: 5, names: ["a"], flowControl: { a: { groupConcurrency: 1 } } });
    expect(warmed?.id).toBe(warm.id);
    await store.complete({ taskId: warm.id, workerId: W, result: null });
    const first = await store.submit({ name: "a", payload: { n: 1 }, group: "g1" });
    await store.submit({ name: "a", payload: { n: 2 }, group: "g1" });
    const other = await store.submit({ name: "a", payload: { n: 3 }, group: "g2" });
    const claimOnce = async (): Promise<{ ids: string[]; left: boolean | null; calls: string[] }> => {
      calls.length = 0;
      let left: boolean | null = null;
      const claimed = await store.claim({
        queues: ["default"],
        workerId: W,
        probe: false,
        draws: (_so, index) => (index === 0 ? { names: ["a"], limit: 5, last: true } : null),
        flowControl: { a: { groupConcurrency: 1 } },
        reprobe: (claimable) => {
          left = claimable;
        },
      });
      return { ids: claimed.map((t) => t.id), left, calls: calls.map((c) => c[0] as string) };
    };
    // One task per group (the limit), the probe again answered from the last batch: something is left (g1's second task).
    const once = await claimOnce();
    expect([once.ids.sort(), once.left, once.calls]).toEqual([[first.id, other.id].sort(), true, ["<pipeline>", "<pipeline>"]]);
    // Committed with that batch: another connection sees both claimed, and the group limit holds on the next claim.
    const rows = await q<{ status: string }>(`SELECT status FROM "${schema}".cairnq_tasks WHERE id = any($1) ORDER BY id`, [[first.id, other.id]]);
    expect(rows.map((r) => r.status)).toEqual(["running", "running"]);
    const again = await claimOnce();
    expect([again.ids, again.left]).toEqual([[], true]);
    // Nothing to write (both groups full): no batch, the probe again and COMMIT as usual.
    expect(again.calls[0]).toBe("<pipeline>");
    expect(again.calls.at(-1)).toBe("COMMIT");
  });

  it("later draws of the planner run in the same transaction, after the pipelined first one, and see it", async () => {
    const store = openStore();
    const a = await store.submit({ name: "a", payload: {} });
    const b = await store.submit({ name: "b", payload: {} });
    const seen: string[][] = [];
    const claimed = await store.claim({
      queues: ["default"],
      workerId: W,
      probe: false,
      draws: (so, index) => {
        seen.push(so.map((t) => t.name));
        return index === 0 ? { names: ["a"], limit: 5 } : index === 1 ? { names: null, limit: 5 } : null;
      },
    });
    expect(claimed.map((t) => t.id).sort()).toEqual([a.id, b.id].sort());
    expect(seen).toEqual([[], ["a"], ["a", "b"]]);
  });

  it("a planner with no draw, or whose first draws are empty, still commits lease recovery", async () => {
    const schema = await freshSchema();
    const store = openStore(poolFor(schema), { schema });
    const task = await store.submit({ name: "a", payload: {} });
    await store.claim({ queues: ["default"], workerId: W, leaseMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.claim({ queues: ["default"], workerId: W, probe: false, draws: () => null })).toEqual([]);
    expect((await store.get(task.id))?.status).toBe("queued");
    await store.claim({ queues: ["default"], workerId: W, leaseMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Index 0 skipped (limit 0 draws nothing), index 1 takes the recovered task in the same transaction.
    const claimed = await store.claim({
      queues: ["default"],
      workerId: W,
      probe: false,
      draws: (_so, index) => (index === 0 ? { names: null, limit: 0 } : index === 1 ? { names: null, limit: 1 } : null),
    });
    expect(claimed.map((t) => [t.id, t.attempt])).toEqual([[task.id, 3]]);
  });

  it("a failing first draw rolls the whole transaction back (recovery too) and leaves the connection usable", async () => {
    const schema = await freshSchema();
    const store = openStore(poolFor(schema, { max: 1 }), { schema });
    const task = await store.submit({ name: "a", payload: {} });
    await store.claim({ queues: ["default"], workerId: W, leaseMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // A test-only trigger fails every claim of a row (status → running), after recovery requeued it: the pipeline
    // fails at its third statement.
    await q(`CREATE FUNCTION "${schema}".no_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no claims today'; END $$`);
    await q(
      `CREATE TRIGGER no_claims BEFORE UPDATE ON "${schema}".cairnq_tasks FOR EACH ROW WHEN (NEW.status = 'running') EXECUTE FUNCTION "${schema}".no_claims()`,
    );
    await expect(store.claim({ queues: ["default"], workerId: W, probe: false })).rejects.toThrow(/no claims today/);
    const [row] = await q<{ status: string; lease_until_ms: string | null }>(`SELECT status, lease_until_ms FROM "${schema}".cairnq_tasks WHERE id = $1`, [task.id]);
    // Recovery's requeue rolled back with the failed draw: still running, with its expired lease.
    expect(row?.status).toBe("running");
    expect(row?.lease_until_ms).not.toBeNull();
    await q(`DROP TRIGGER no_claims ON "${schema}".cairnq_tasks`);
    // The same (single) connection claims normally afterwards: the prepared statements are still right.
    const claimed = await store.claim({ queues: ["default"], workerId: W, probe: false });
    expect(claimed.map((t) => [t.id, t.status, t.attempt])).toEqual([[task.id, "running", 2]]);
  });

  it("with a Kysely instance (pool out of reach) and with preparedStatements: false, claims behave the same", async () => {
    const schema = await freshSchema();
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: poolFor(schema) }) });
    try {
      for (const store of [openStore(db, { schema, listen: false }), openStore(poolFor(schema), { schema, preparedStatements: false })]) {
        const task = await store.submit({ name: "a", payload: {} });
        expect((await store.claim({ queues: ["default"], workerId: W, probe: false })).map((t) => t.id)).toEqual([task.id]);
        expect(await store.claim({ queues: ["default"], workerId: W, probe: false })).toEqual([]);
      }
    } finally {
      await db.destroy();
    }
  });
});

describe("pipelines on a wrapped client", () => {
  it("run their statements in order in one query and answer one row per statement", async () => {
    const c = await client();
    prepareRegistered(c);
    const named = "SELECT $1::int + 1 AS n";
    registerPrepared(named);
    const result = (await c.query(
      ...pipelineOf({ sql: "SELECT 'a'::text AS x", parameters: [] }, { sql: named, parameters: [41] }, { sql: named, parameters: [1] }),
    )) as unknown as { rows: { command: string; rowCount: number; rows: unknown[] }[] };
    expect(result.rows.map((r) => [r.command, r.rows])).toEqual([
      ["SELECT", [{ x: "a" }]],
      ["SELECT", [{ n: 42 }]],
      ["SELECT", [{ n: 2 }]],
    ]);
    // The named statement was parsed once and is known as parsed, so later plain queries only bind it.
    const connection = (c as unknown as { connection: { parsedStatements: Record<string, string> } }).connection;
    expect(Object.values(connection.parsedStatements)).toContain(named);
    expect((await c.query(named, [9])).rows).toEqual([{ n: 10 }]);
  });

  it("stop at the first failing statement; statements parsed before it stay known, those skipped are parsed again next time", async () => {
    const c = await client();
    prepareRegistered(c);
    const before = `SELECT $1::int AS before_${Date.now()}`;
    const failing = "SELECT 1 / $1::int AS q";
    const after = `SELECT $1::int AS after_${Date.now()}`;
    for (const text of [before, failing, after]) registerPrepared(text);
    await expect(
      c.query(...pipelineOf({ sql: before, parameters: [1] }, { sql: failing, parameters: [0] }, { sql: after, parameters: [2] })),
    ).rejects.toThrow(/division by zero/);
    // Neither "prepared statement already exists" (before) nor "does not exist" (after) on the next uses.
    const result = (await c.query(
      ...pipelineOf({ sql: before, parameters: [3] }, { sql: failing, parameters: [1] }, { sql: after, parameters: [4] }),
    )) as unknown as { rows: { rows: unknown[] }[] };
    expect(result.rows.map((r) => Object.values(r.rows[0] as object))).toEqual([[3], [1], [4]]);
    expect((await c.query(after, [5])).rows.map((r: object) => Object.values(r))).toEqual([[5]]);
  });

  it("an error leaves an explicit transaction aborted, as the same statements sent one by one would", async () => {
    const c = await client();
    prepareRegistered(c, false);
    await expect(c.query(...pipelineOf({ sql: "BEGIN", parameters: [] }, { sql: "SELECT 1 / $1::int", parameters: [0] }))).rejects.toThrow(/division by zero/);
    await expect(c.query("SELECT 1")).rejects.toThrow(/current transaction is aborted/);
    await c.query("ROLLBACK");
    expect((await c.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });

  it("on a client without pg's JavaScript connection (pg-native), run the statements one by one with the same answer", async () => {
    const sent: unknown[][] = [];
    const fake = {
      query: (...args: unknown[]): Promise<unknown> => {
        const [text, values] = args as [string, unknown[]];
        sent.push([text, values]);
        return Promise.resolve({ command: "SELECT", rowCount: 1, rows: [{ v: values[0] }] });
      },
    };
    prepareRegistered(fake);
    const result = (await fake.query(
      ...pipelineOf({ sql: "SELECT $1 AS v", parameters: [1] }, { sql: "SELECT $1 AS v", parameters: [2] }),
    )) as { rows: unknown[] };
    expect(sent).toEqual([
      ["SELECT $1 AS v", [1]],
      ["SELECT $1 AS v", [2]],
    ]);
    expect(result.rows).toEqual([
      { command: "SELECT", rowCount: 1, rows: [{ v: 1 }] },
      { command: "SELECT", rowCount: 1, rows: [{ v: 2 }] },
    ]);
  });
});
