import { describe, expect, it } from "vitest";
import { PIPELINE_SQL } from "../../src/postgres-pipeline.js";
import { prepareRegistered } from "../../src/postgres-prepared.js";
import { client, freshSchema, openStore, poolFor, q } from "../helpers.js";

const W = "worker_pipeline_errors";

/** Installs a test-only trigger that runs `body` when a row is claimed (status → running). */
async function onClaim(schema: string, body: string): Promise<() => Promise<void>> {
  await q(`CREATE FUNCTION "${schema}".on_claim() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body}; RETURN NEW; END $$`);
  await q(`CREATE TRIGGER on_claim BEFORE UPDATE ON "${schema}".cairnq_tasks FOR EACH ROW WHEN (NEW.status = 'running') EXECUTE FUNCTION "${schema}".on_claim()`);
  return async () => {
    await q(`DROP TRIGGER on_claim ON "${schema}".cairnq_tasks`);
  };
}

async function rowOf(schema: string, id: string): Promise<{ status: string; attempt: number } | undefined> {
  const [row] = await q<{ status: string; attempt: number }>(`SELECT status, attempt FROM "${schema}".cairnq_tasks WHERE id = $1`, [id]);
  return row;
}

describe("a pipelined claim that fails at its draw", () => {
  it("when the backend dies there: the claim rejects, nothing commits, and the next claim takes the task on a fresh connection", async () => {
    const schema = await freshSchema();
    const pool = poolFor(schema, { max: 1 });
    const store = openStore(pool, { schema, listen: false });
    const task = await store.submit({ name: "a", payload: {} });
    const drop = await onClaim(schema, "PERFORM pg_terminate_backend(pg_backend_pid())");
    await expect(store.claim({ queues: ["default"], workerId: W, probe: false })).rejects.toThrow();
    expect(await rowOf(schema, task.id)).toEqual({ status: "queued", attempt: 0 });
    await drop();
    // The pool's only connection died mid-pipeline; the store is not left holding it.
    const claimed = await store.claim({ queues: ["default"], workerId: W, probe: false });
    expect(claimed.map((t) => [t.id, t.status, t.attempt])).toEqual([[task.id, "running", 1]]);
    expect(pool.totalCount).toBeLessThanOrEqual(1);
  });

  it("when a statement timeout cancels it: the transaction rolls back and the same connection claims normally afterwards", async () => {
    const schema = await freshSchema();
    const task = await openStore(poolFor(schema), { schema, listen: false }).submit({ name: "a", payload: {} });
    // One connection whose statements are cancelled after 2 s; the trigger sleeps far longer.
    const pool = poolFor(schema, { max: 1, options: `-c search_path="${schema}" -c statement_timeout=2000` });
    const store = openStore(pool, { schema, listen: false });
    await store.connect();
    const drop = await onClaim(schema, "PERFORM pg_sleep(60)");
    await expect(store.claim({ queues: ["default"], workerId: W, probe: false })).rejects.toThrow(/statement timeout/);
    expect(await rowOf(schema, task.id)).toEqual({ status: "queued", attempt: 0 });
    await drop();
    // Not left in an aborted transaction: the connection's next claim commits.
    const claimed = await store.claim({ queues: ["default"], workerId: W, probe: false });
    expect(claimed.map((t) => [t.id, t.status, t.attempt])).toEqual([[task.id, "running", 1]]);
    expect(await rowOf(schema, task.id)).toEqual({ status: "running", attempt: 1 });
  });
});

describe("a pipeline whose parameter cannot be encoded", () => {
  it("rejects with the encoder's error before writing anything, and the client answers its next query", async () => {
    const c = await client();
    prepareRegistered(c);
    const unencodable = {
      toPostgres(): never {
        throw new Error("cannot encode this value");
      },
    };
    await expect(
      c.query(PIPELINE_SQL, [
        [
          { sql: "SELECT 1 AS one", parameters: [] },
          { sql: "SELECT $1::text AS v", parameters: [unencodable] },
        ],
      ]),
    ).rejects.toThrow(/cannot encode this value/);
    // Not left waiting for the rest of a half-written pipeline.
    expect((await c.query("SELECT 42 AS n")).rows).toEqual([{ n: 42 }]);
    const result = (await c.query(PIPELINE_SQL, [[{ sql: "SELECT $1::text AS v", parameters: [{ a: [1, 2] }] }]])) as unknown as {
      rows: { rows: unknown[] }[];
    };
    expect(result.rows.map((r) => r.rows)).toEqual([[{ v: '{"a":[1,2]}' }]]);
  });
});
