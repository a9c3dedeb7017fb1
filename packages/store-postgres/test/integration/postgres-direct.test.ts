import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from "kysely";
import { CompiledQuery, Kysely, PostgresDialect } from "kysely";
import { describe, expect, it, vi } from "vitest";
import type { PostgresStore } from "../../src/index.js";
import { freshSchema, openStore, poolFor, schemaName } from "../helpers.js";

const W = "worker_direct";

/** A submit, a read, a claim and a complete: the statements of a `call()` on both sides. */
async function callPath(store: PostgresStore): Promise<void> {
  const submitted = await store.submit({ name: "a", payload: { n: 1 } });
  expect((await store.get(submitted.id))?.status).toBe("queued");
  const [claimed] = await store.claim({ queues: ["default"], workerId: W, probe: false, names: ["a"] });
  expect(claimed?.id).toBe(submitted.id);
  const done = await store.completeRef({ taskId: submitted.id, workerId: W, attempt: 1, result: { ok: true } });
  expect(done).toEqual({ id: submitted.id, status: "succeeded" });
  expect((await store.get(submitted.id))?.result).toEqual({ ok: true });
}

/** Counts what passes through `db`'s Kysely layers: single statements and lent connections. */
function watchKysely(store: PostgresStore): { statements: () => number; connections: () => number } {
  const { db } = store.dialect.connection;
  const statements = vi.spyOn(db, "executeQuery");
  const connections = vi.spyOn(db, "connection");
  return { statements: () => statements.mock.calls.length, connections: () => connections.mock.calls.length };
}

describe("the direct path past Kysely's layers", () => {
  it("with a connection string: once connected, a call's statements reach pg without Kysely's executor or a lent Kysely connection", async () => {
    const store = openStore();
    await store.connect();
    await store.dialect.wakeups.whenSettled();
    const kysely = watchKysely(store);
    await callPath(store);
    expect([kysely.statements(), kysely.connections()]).toEqual([0, 0]);
  });

  it("with a pg.Pool: the same, from the first statement", async () => {
    const schema = await freshSchema();
    const store = openStore(poolFor(schema), { schema });
    const kysely = watchKysely(store);
    await store.connect();
    await store.dialect.wakeups.whenSettled();
    await callPath(store);
    expect(kysely.connections()).toBe(0);
  });

  it("a statement that fails gives its client back: a pool of one connection still answers after failures", async () => {
    const store = openStore(undefined, { max: 1 });
    await store.connect();
    await store.dialect.wakeups.whenSettled();
    const { db } = store.dialect.connection;
    for (let i = 0; i < 3; i += 1) {
      await expect(store.dialect.executor.read(db, () => CompiledQuery.raw("SELECT 1 / 0 AS x"))).rejects.toThrow(/division by zero/);
    }
    await callPath(store);
  });

  it("answers as Kysely's driver does: affected rows of a write as a bigint, none for a read", async () => {
    const store = openStore();
    await store.connect();
    const { db } = store.dialect.connection;
    const read = await store.dialect.executor.read(db, () => CompiledQuery.raw("SELECT 1 AS one"));
    expect(read).toEqual({ numAffectedRows: undefined, rows: [{ one: 1 }] });
    const write = await store.dialect.executor.write(db, () => CompiledQuery.raw("UPDATE cairnq_tasks SET priority = priority WHERE false"));
    expect(write).toEqual({ numAffectedRows: 0n, rows: [] });
  });

  it("with a caller's Kysely instance: every statement goes through it, so its plugins see them all", async () => {
    const schema = schemaName();
    const seen: string[] = [];
    const plugin: KyselyPlugin = {
      transformQuery: (args: PluginTransformQueryArgs): RootOperationNode => args.node,
      transformResult: (args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> => {
        seen.push("result");
        return Promise.resolve(args.result);
      },
    };
    const pool = poolFor(schema);
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }), plugins: [plugin] });
    await db.executeQuery(CompiledQuery.raw(`CREATE SCHEMA "${schema}"`));
    seen.length = 0;
    const store = openStore(db, { schema });
    await store.connect();
    const before = seen.length;
    await callPath(store);
    // submit, get, claim (one pipeline), complete, get.
    expect(seen.length - before).toBeGreaterThanOrEqual(5);
  });
});
