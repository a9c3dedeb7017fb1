import { CompiledQuery } from "kysely";
import { describe, expect, it, vi } from "vitest";
import type { PostgresStore } from "../../src/index.js";
import { ListenLane } from "../../src/postgres-listen-lane.js";
import { pipeline, pipelineResults } from "../../src/postgres-pipeline.js";
import { prepareRegistered } from "../../src/postgres-prepared.js";
import type { ListenClient } from "../../src/postgres-wakeups.js";
import { client, freshSchema, openStore, pgDsn, poolFor, q, schemaName, until } from "../helpers.js";

const W = "worker_lane";

/** A store on a connection string, connected, with its LISTEN connection proven. */
async function listening(options: Parameters<typeof openStore>[1] = {}): Promise<PostgresStore> {
  const store = openStore(undefined, options);
  await store.connect();
  expect(await until(() => store.listenState === "listening", 10_000)).toBe(true);
  return store;
}

/** The last statement the LISTEN connection's backend ran (what pg_stat_activity says). */
async function lastOnListen(store: PostgresStore): Promise<string> {
  const pid = store.dialect.wakeups.backendPid;
  const [row] = await q<{ query: string }>("SELECT query FROM pg_stat_activity WHERE pid = $1", [pid]);
  return row?.query ?? "";
}

/** Whether the store's LISTEN connection is free to lend now (lends it and gives it back at once). */
function idleListen(store: PostgresStore): boolean {
  const loan = store.dialect.wakeups.lend();
  loan?.release();
  return loan !== null;
}

describe("the store's writes on its LISTEN connection (postgres-listen-lane.ts)", () => {
  it("with a connection string: a submit, a claim and a settlement run on the LISTEN backend, and signals still arrive", async () => {
    const store = await listening();
    const done: string[] = [];
    store.subscribe((signal) => {
      if (signal.reason === "done") done.push(signal.taskId);
    });
    // Once the LISTEN the subscription asked for is answered, the connection is free to lend.
    expect(await until(() => idleListen(store))).toBe(true);
    const submitted = await store.submit({ name: "a", payload: { n: 1 } });
    expect(await lastOnListen(store)).toMatch(/^INSERT INTO cairnq_tasks/);
    const [claimed] = await store.claim({ queues: ["default"], workerId: W, probe: false, names: ["a"] });
    expect(claimed?.id).toBe(submitted.id);
    // The claim is one round trip: the LISTEN backend ran its statements (the last of them shows).
    expect(await lastOnListen(store)).not.toMatch(/^INSERT INTO cairnq_tasks/);
    expect(await store.completeRef({ taskId: submitted.id, workerId: W, attempt: 1, result: { ok: true } })).toEqual({ id: submitted.id, status: "succeeded" });
    expect(await lastOnListen(store)).toMatch(/cairnq_settled/);
    expect(store.dialect.lane?.ran).toBe(3);
    // Its own settlement's `cairnq_done`, delivered by the very backend that committed it.
    expect(await until(() => done.includes(submitted.id))).toBe(true);
    expect(store.listenState).toBe("listening");
  });

  it("a write while the lane is busy runs on the pool: concurrent submits all land", async () => {
    const store = await listening();
    const before = store.dialect.lane?.ran ?? 0;
    const tasks = await Promise.all(Array.from({ length: 8 }, (_, i) => store.submit({ name: "a", payload: { i }, key: `k${i}` })));
    const unkeyed = await Promise.all(Array.from({ length: 8 }, (_, i) => store.submit({ name: "b", payload: { i } })));
    const [row] = await q<{ n: string }>(`SELECT count(*) AS n FROM "${store.schema}".cairnq_tasks`);
    expect(Number(row?.n)).toBe(tasks.length + unkeyed.length);
    // Keyed submits (transactions of several round trips) never take the lane; the unkeyed ones took it at most once each.
    expect((store.dialect.lane?.ran ?? 0) - before).toBeLessThanOrEqual(unkeyed.length);
  });

  it("a submit inside the caller's transaction stays in it (never on the lane)", async () => {
    const store = await listening();
    const before = store.dialect.lane?.ran;
    let id = "";
    await expect(
      store.db.transaction().execute(async (trx) => {
        id = (await store.withTransaction(trx).submit({ name: "a" })).id;
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await store.get(id)).toBeNull();
    expect(store.dialect.lane?.ran).toBe(before);
  });

  it("no lane where the LISTEN connection is not the pool's own: `listen` given, `listen: false`, a caller's pg.Pool", async () => {
    const own = openStore(undefined, { listen: pgDsn() });
    const off = openStore(undefined, { listen: false });
    const schema = await freshSchema();
    const pooled = openStore(poolFor(schema), { schema });
    for (const store of [own, off, pooled]) {
      await store.connect();
      expect(store.dialect.lane).toBeNull();
      await store.submit({ name: "a" });
    }
    expect(await until(() => own.listenState === "listening")).toBe(true);
    expect(await lastOnListen(own)).not.toMatch(/^INSERT/);
  });

  it("a write on the LISTEN connection that hits its read timeout: that connection is reopened, the pool's idle ones are dropped, the store goes on", async () => {
    const app = `cq_lane_${process.pid}_${Date.now()}`;
    const dsn = new URL(pgDsn());
    dsn.searchParams.set("application_name", app);
    // The bound is every statement's, not only the blocked complete's: 400 ms let a submit or claim of the setup time out
    // on a loaded machine (a gate failed with "Query read timeout" in 896 ms); 2 s keeps the setup clear of it.
    const store = openStore(dsn.toString(), { schema: schemaName(), timeouts: { storeQueryTimeoutMs: 2_000 } });
    await store.connect();
    expect(await until(() => store.listenState === "listening", 10_000)).toBe(true);
    const dropped = vi.spyOn(store.dialect.connection, "listenFoundDead");
    const task = await store.submit({ name: "blocked" });
    const [claimed] = await store.claim({ queues: ["default"], workerId: W, leaseMs: 60_000 });
    expect(claimed?.id).toBe(task.id);
    const listenPid = store.dialect.wakeups.backendPid;
    // A read (never on the lane) leaves a pooled connection idle.
    expect((await store.get(task.id))?.status).toBe("running");
    const backends = async (): Promise<number[]> =>
      (await q<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [app])).map((row) => row.pid);
    const pooled = (await backends()).filter((pid) => pid !== listenPid);
    expect(pooled.length).toBeGreaterThan(0);
    // A row lock held elsewhere: the complete (on the idle LISTEN connection) waits on it past the bound.
    const locker = await client();
    await locker.query("BEGIN");
    await locker.query(`SELECT 1 FROM "${store.schema}".cairnq_tasks WHERE id = $1 FOR UPDATE`, [task.id]);
    const before = store.dialect.lane?.ran ?? 0;
    await expect(store.complete({ taskId: task.id, workerId: W, result: null })).rejects.toThrow("Query read timeout");
    await locker.query("ROLLBACK");
    expect(store.dialect.lane?.ran).toBe(before + 1);
    expect(dropped).toHaveBeenCalledTimes(1);
    expect(await until(async () => (await backends()).every((pid) => !pooled.includes(pid) && pid !== listenPid))).toBe(true);
    // The wakeups saw their connection end, and open another (after the 1 s backoff) that is lent again.
    expect(await until(() => store.listenState === "listening" && store.dialect.wakeups.backendPid !== listenPid, 10_000)).toBe(true);
    expect(await until(() => idleListen(store))).toBe(true);
    await store.submit({ name: "after" });
    expect(store.dialect.lane?.ran).toBe(before + 2);
  });

  it("a lent write that waits on a lock for longer than the liveness ping interval (within its own bound) completes, and the LISTEN connection is kept", async () => {
    const errors: unknown[] = [];
    const store = await listening({ combine: false, timeouts: { listenPingIntervalMs: 200 }, onError: (error) => errors.push(error) });
    const task = await store.submit({ name: "slow" });
    const [claimed] = await store.claim({ queues: ["default"], workerId: W, leaseMs: 60_000 });
    expect(claimed?.id).toBe(task.id);
    const pid = store.dialect.wakeups.backendPid;
    const locker = await client();
    await locker.query("BEGIN");
    await locker.query(`SELECT 1 FROM "${store.schema}".cairnq_tasks WHERE id = $1 FOR UPDATE`, [task.id]);
    const before = store.dialect.lane?.ran ?? 0;
    // Between two pings, so the complete takes the lane (checked below).
    expect(await until(() => idleListen(store))).toBe(true);
    const completing = store.complete({ taskId: task.id, workerId: W, result: null });
    // The complete waits on the row lock on the LISTEN backend, through several ping intervals.
    const waiting = async (): Promise<boolean> =>
      (await q("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [pid])).length === 1;
    expect(await until(waiting)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await locker.query("ROLLBACK");
    expect((await completing).status).toBe("succeeded");
    expect(store.dialect.lane?.ran).toBe(before + 1);
    // The ping waited its turn behind the write, and the connection that answered both was not dropped.
    expect(errors.map(String).filter((message) => message.includes("liveness ping"))).toEqual([]);
    expect(store.dialect.wakeups.backendPid).toBe(pid);
    expect(store.listenState).toBe("listening");
  });

  it("once the pool found a connection dead, the LISTEN connection is lent no more until it is reopened", async () => {
    const store = await listening();
    store.dialect.connection.onSuspects?.();
    const before = store.dialect.lane?.ran;
    await store.submit({ name: "a" });
    expect(store.dialect.lane?.ran).toBe(before);
    expect(await lastOnListen(store)).not.toMatch(/^INSERT/);
    // Reopened (its backend terminated): the new LISTEN connection is lent again.
    const pid = store.dialect.wakeups.backendPid;
    await q("SELECT pg_terminate_backend($1)", [pid]);
    expect(await until(() => store.listenState === "listening" && store.dialect.wakeups.backendPid !== pid, 10_000)).toBe(true);
    await store.submit({ name: "b" });
    expect(store.dialect.lane?.ran).toBe((before ?? 0) + 1);
  });
});

/** A lane over `c` that lends it to one statement at a time, as `PostgresWakeups#lend` does. */
function laneOver(c: unknown, onDead: () => void = () => {}): ListenLane {
  let lent = false;
  const client = c as ListenClient;
  return new ListenLane(
    () => {
      if (lent) return null;
      lent = true;
      return { client, release: () => (lent = false) };
    },
    () => client,
    onDead,
  );
}

describe("ListenLane", () => {
  it("a transaction that failed half-way on the lane is rolled back, so the connection is idle again (and delivers notifications)", async () => {
    const c = await client();
    prepareRegistered(c, true);
    const lane = laneOver(c);
    // A SAVEPOINT inside keeps it an explicit transaction (not the implicit one-Sync form): the failure leaves it aborted.
    const failing = pipeline([
      CompiledQuery.raw("BEGIN"),
      CompiledQuery.raw("SAVEPOINT s"),
      CompiledQuery.raw("SELECT 1 / $1::int AS x", [0]),
      CompiledQuery.raw("COMMIT"),
    ]);
    await expect(lane.tryWrite(failing, { transaction: true })).rejects.toThrow(/division by zero/);
    const [row] = (await c.query<{ state: string }>("SELECT 'idle' AS state")).rows;
    expect(row?.state).toBe("idle");
    const ok = await lane.tryWrite(pipeline([CompiledQuery.raw("BEGIN"), CompiledQuery.raw("SELECT $1::int AS x", [7]), CompiledQuery.raw("COMMIT")]), { transaction: true });
    expect(pipelineResults(ok!)[1]?.rows).toEqual([{ x: 7 }]);
  });

  it("a transaction that failed on the lane and whose ROLLBACK then hits its read timeout: the connection is destroyed (as the pool destroys one), not lent on", async () => {
    const destroy = vi.fn();
    const answers = [
      Object.assign(new Error("could not serialize access due to concurrent update"), { code: "40001" }),
      new Error("Query read timeout"),
    ];
    const fake = {
      query: vi.fn(() => Promise.reject(answers.shift() ?? new Error("no more answers"))),
      ref: vi.fn(),
      unref: vi.fn(),
      connection: { stream: { destroy } },
    };
    const onDead = vi.fn();
    const lane = laneOver(fake, onDead);
    const claim = pipeline([CompiledQuery.raw("BEGIN"), CompiledQuery.raw("UPDATE t SET x = $1", [1]), CompiledQuery.raw("COMMIT")]);
    // The caller hears the transaction's own error, not the ROLLBACK's.
    await expect(lane.tryWrite(claim, { transaction: true })).rejects.toMatchObject({ code: "40001" });
    expect(fake.query).toHaveBeenCalledTimes(2);
    expect(destroy).toHaveBeenCalledTimes(1);
    expect(onDead).toHaveBeenCalledTimes(1);
  });

  it("lends one statement at a time, holds the process open only while one runs, and destroys a connection whose statement timed out (the pool's idle ones go too)", async () => {
    let answer: (value: unknown) => void = () => {};
    let fail: (error: unknown) => void = () => {};
    const destroy = vi.fn();
    const fake = {
      query: vi.fn(() => new Promise((resolve, reject) => ((answer = resolve), (fail = reject)))),
      ref: vi.fn(),
      unref: vi.fn(),
      connection: { stream: { destroy } },
    };
    const onDead = vi.fn();
    const lane = laneOver(fake, onDead);
    const first = lane.tryWrite(CompiledQuery.raw("UPDATE t SET x = 1"));
    expect(first).not.toBeNull();
    expect(fake.ref).toHaveBeenCalledTimes(1);
    expect(lane.tryWrite(CompiledQuery.raw("UPDATE t SET x = 2"))).toBeNull();
    answer({ command: "UPDATE", rowCount: 1, rows: [] });
    expect(await first).toEqual({ numAffectedRows: 1n, rows: [] });
    expect(fake.unref).toHaveBeenCalledTimes(1);
    const second = lane.tryWrite(CompiledQuery.raw("UPDATE t SET x = 3"));
    fail(new Error("Query read timeout"));
    await expect(second).rejects.toThrow("Query read timeout");
    expect(destroy).toHaveBeenCalledTimes(1);
    // Opened the same way, the pool's idle connections are as suspect: the store is told to drop them.
    expect(onDead).toHaveBeenCalledTimes(1);
    // Not listening: nothing is lent.
    expect(new ListenLane(() => null, () => null).tryWrite(CompiledQuery.raw("SELECT 1"))).toBeNull();
  });
});
