import { CompiledQuery, Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import type { Task } from "@cairnq/protocol";
import { InvalidArgument, LostLease, SerializationError } from "@cairnq/protocol";
import { DRAW, normalizeClaim, probeParams, PURGE, purgeParams, RECOVER, SUBMIT } from "@cairnq/protocol/adapter";
import { deleteTemplate, insertTemplate, POSTGRES_CLOCK, PROBE_TEMPLATE, setTransitionTemplate, StatementCompiler } from "@cairnq/store-kysely";
import { describe, expect, it } from "vitest";
import { PostgresExecutor } from "../../src/postgres-executor.js";
import { PostgresStore } from "../../src/index.js";
import { PostgresStoreSyntax } from "../../src/postgres-store-syntax.js";
import { client, exited, freshSchema, nextLine, openStore, pgDsn, poolFor, q, schemaName, spawnFixture, until } from "../helpers.js";

const W = "worker_test";

/** A connection string tagged with a unique application_name, so a test can find (and kill) exactly its backends. */
function taggedDsn(): { dsn: string; app: string } {
  const app = schemaName("app");
  const url = new URL(pgDsn());
  url.searchParams.set("application_name", app);
  return { dsn: url.toString(), app };
}

async function backendsOf(app: string): Promise<number[]> {
  return (await q<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [app])).map((r) => r.pid);
}

function raw(text: string): CompiledQuery<Record<string, unknown>> {
  return CompiledQuery.raw(text);
}

async function claimOne(store: PostgresStore, queue = "default"): Promise<Task> {
  const [task] = await store.claim({ queues: [queue], workerId: W });
  if (task === undefined) throw new Error("expected to claim a task");
  return task;
}

describe("what the store runs on, and what it closes", () => {
  it("a connection string: the store builds the pool (size `max`), owns it and ends it on close", async () => {
    const { dsn, app } = taggedDsn();
    const store = new PostgresStore(dsn, { schema: schemaName(), max: 2 });
    await store.connect();
    const answers = await Promise.all(Array.from({ length: 4 }, () => store.db.executeQuery<{ pid: number }>(raw("SELECT pg_backend_pid() AS pid, pg_sleep(0.05)"))));
    expect(new Set(answers.map((a) => a.rows[0]?.pid)).size).toBeLessThanOrEqual(2);
    expect(await until(() => store.listenState === "listening")).toBe(true);
    expect((await backendsOf(app)).length).toBeGreaterThan(0);
    await store.close();
    expect(await until(async () => (await backendsOf(app)).length === 0)).toBe(true);
    await expect(store.submit({ name: "n" })).rejects.toThrow(/closed/);
  });

  it("a pg.Pool the application owns: used, listened through, never ended by close()", async () => {
    const schema = await freshSchema();
    const pool = poolFor(schema);
    const store = new PostgresStore(pool, { schema });
    expect(store.capabilities.pushWakeups).toBe(true);
    await store.submit({ name: "n" });
    expect(await until(() => store.listenState === "listening")).toBe(true);
    await store.close();
    expect(pool.ended).toBe(false);
    expect((await pool.query("SELECT count(*)::int AS n FROM cairnq_tasks")).rows).toEqual([{ n: 1 }]);
    expect(pool.listenerCount("error")).toBe(1); // only the test's own: the store's guard is gone
    expect(pool.listenerCount("acquire")).toBe(0);
  });

  it("a Kysely instance the application owns: used, never destroyed; push wakeups only with `listen`", async () => {
    const schema = await freshSchema();
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: poolFor(schema) }) });
    const quiet = new PostgresStore(db, { schema });
    expect(quiet.capabilities.pushWakeups).toBe(false);
    await quiet.submit({ name: "n" });
    expect(quiet.listenState).toBe("off");
    await quiet.close();
    // A connector returning a connected pg.Client (the string form, `listen: dsn`, works too).
    const listen = async (): Promise<pg.Client> => {
      const listenClient = new pg.Client(pgDsn());
      await listenClient.connect();
      return listenClient;
    };
    const listening = new PostgresStore(db, { schema, listen });
    expect(listening.capabilities.pushWakeups).toBe(true);
    await listening.connect();
    expect(await until(() => listening.listenState === "listening")).toBe(true);
    await listening.close();
    expect((await db.executeQuery<{ n: number }>(raw("SELECT count(*)::int AS n FROM cairnq_tasks"))).rows).toEqual([{ n: 1 }]);
  });

  it("rejects `max` with a caller's pool or Kysely, a bad `max`, and a target that is none of the three", () => {
    const pool = poolFor("public");
    expect(() => new PostgresStore(pool, { max: 5 })).toThrow(InvalidArgument);
    expect(() => new PostgresStore(pgDsn(), { max: 0 })).toThrow(InvalidArgument);
    expect(() => new PostgresStore(pgDsn(), { max: 1.5 })).toThrow(InvalidArgument);
    expect(() => new PostgresStore("")).toThrow(InvalidArgument);
    expect(() => new PostgresStore(42 as never)).toThrow(InvalidArgument);
    expect(() => new PostgresStore({} as never)).toThrow(InvalidArgument);
  });

  it("rejects a `listen` that is not false, a function or a postgres:// connection string, for every target", () => {
    const pool = poolFor("public");
    for (const target of [pgDsn(), pool]) {
      for (const bad of [true, 0, 5432, {}, "", "not a url", "mysql://root@127.0.0.1:3306/db"]) {
        expect(() => new PostgresStore(target, { listen: bad as never })).toThrow(InvalidArgument);
      }
      expect(() => new PostgresStore(target, { listen: null as never })).toThrow(/use listen: false/);
    }
    for (const good of [false, undefined, pgDsn(), pgDsn().replace(/^postgres(ql)?:/, "postgresql:"), async () => ({}) as never]) {
      expect(() => new PostgresStore(pgDsn(), { listen: good as never })).not.toThrow();
    }
  });

  it.each(["close", "leave-open"])("a script with top-level await exits by itself (%s): idle connections and LISTEN hold no process open, close() completes", async (mode) => {
    const child = spawnFixture("exit-child.ts", [pgDsn(), schemaName(), mode]);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    expect(await exited(child)).toBe(0);
    expect(out).toBe(mode === "close" ? "listening\nclosed\n" : "listening\n");
  }, 30_000);

  it("importing the package and constructing a store load no driver; the first statement loads pg", async () => {
    const child = spawnFixture("lazy-driver-child.ts", [pgDsn(), schemaName()]);
    const report = JSON.parse(await nextLine(child, (line) => line.startsWith("{"))) as Record<string, boolean>;
    expect(report).toEqual({ afterImport: false, afterConstruct: false, afterFirstCall: true });
  }, 30_000);
});

describe("the database clock and the JSON boundary (§2.1, §2.2)", () => {
  it("statements read the database clock and bind no absolute time", () => {
    const compiler = new StatementCompiler(new PostgresStoreSyntax(), POSTGRES_CLOCK, true);
    const params = {
      taskId: "task_x",
      name: "n",
      queue: "default",
      payload: "{}",
      metadata: "{}",
      maxAttempts: 3,
      priority: 0,
      runAtDelayMs: 5,
      parentId: null,
      rootId: null,
      correlationId: null,
    };
    const statement = compiler.statement(insertTemplate(SUBMIT), params);
    expect(statement.sql).toContain("clock_timestamp()");
    expect(statement.sql).toContain("payload::text AS payload");
    expect(statement.binds.some((b) => b.kind === "now")).toBe(false);
    expect(statement.parameters(params).filter((v) => typeof v === "number" && v > 1_000_000)).toEqual([]);
    // Claim draws, lease recovery and purge pick their rows FOR UPDATE SKIP LOCKED (§13), on the database clock.
    const draw = compiler.statement(setTransitionTemplate(DRAW, "task"), { queues: ["a", "b"], names: null, limit: 5, workerId: "w", leaseMs: 100 });
    const recover = compiler.statement(setTransitionTemplate(RECOVER, ["id"]), {});
    const purge = compiler.statement(deleteTemplate(PURGE), purgeParams({ olderThanMs: 10 }));
    for (const s of [draw, recover, purge]) {
      expect(s.sql).toContain("FOR UPDATE SKIP LOCKED");
      expect(s.binds.some((b) => b.kind === "now")).toBe(false);
    }
    expect(draw.sql).toContain("clock_timestamp()");
    expect(draw.sql).toContain("queue = any($");
    expect(purge.sql).toContain("now()");
  });

  it("round-trips every JSON shape, a string-scalar payload included (decoded once, not twice)", async () => {
    const store = openStore();
    for (const payload of ["hello", '{"a":1}', 0, 1.5, true, null, [], {}, [null, { é: "漢字 — x" }], { big: 2 ** 53 - 1 }]) {
      const task = await store.submit({ name: "n", payload });
      const expected = payload === null ? {} : payload;
      expect(task.payload).toEqual(expected);
      expect((await store.get(task.id))?.payload).toEqual(expected);
    }
    const task = await store.submit({ name: "n", queue: "results", metadata: { m: "v" } });
    await claimOne(store, "results");
    const done = await store.complete({ taskId: task.id, workerId: W, result: "text result" });
    expect(done.result).toBe("text result");
    expect(done.metadata).toEqual({ m: "v" });
    expect(typeof done.created_at_ms).toBe("number");
  });

  it("a submit returns exactly the row get() reads: the stored jsonb (its key order), the database clock's columns, every option", async () => {
    const store = openStore();
    // jsonb orders keys by length, then bytewise: what comes back is not what was sent.
    const payload = { bb: 1, a: { zz: [1.5, 1e21], y: null }, ccc: "x" };
    const metadata = { long_key: true, k: "v" };
    const parent = await store.submit({ name: "parent" });
    const plain = await store.submit({ name: "n", payload, metadata, queue: "q1", priority: -3, maxAttempts: 7, runAtDelayMs: 60_000, parentId: parent.id, correlationId: "corr" });
    const keyed = await store.submit({ name: "n", payload, metadata, key: "returned-row", rootId: parent.id });
    for (const task of [parent, plain, keyed]) {
      const stored = await store.get(task.id);
      expect(task).toEqual(stored);
      expect(JSON.stringify(task)).toBe(JSON.stringify(stored));
    }
    expect(Object.keys(plain.payload as object)).toEqual(["a", "bb", "ccc"]);
    expect(Object.keys(plain.metadata)).toEqual(["k", "long_key"]);
    expect(plain.run_at_ms - plain.created_at_ms).toBeGreaterThanOrEqual(59_999);
    expect(keyed.root_id).toBe(parent.id);
  });

  it("\\u0000 in strings, which jsonb cannot hold, is refused at the JSON boundary with the path (as on every backend), nothing is written", async () => {
    const store = openStore();
    await expect(store.submit({ name: "n", payload: { s: "a\u0000b" } })).rejects.toMatchObject({ name: "SerializationError", path: "payload.s" });
    expect(await store.list()).toEqual([]);
  });
});

describe("the claim probe on a table full of terminal rows (§3.5, §5.10 step 2)", () => {
  it("walks the claim index, never the heap: the generic plan has no seq scan; it finds a queued row, and an empty queue reads nothing", async () => {
    const schema = await freshSchema();
    const store = openStore(poolFor(schema), { schema });
    await store.connect();
    // 60k terminal rows physically before 6k queued ones: the layout after a long run without a purge,
    // where an EXISTS costed as "stop at the first match" reads the whole heap.
    const rows = (status: string, from: number, to: number): string =>
      `INSERT INTO "${schema}".cairnq_tasks (id, name, queue, status, payload, metadata, attempt, max_attempts, priority, run_at_ms, root_id,
        created_at_ms, updated_at_ms, completed_at_ms)
       SELECT 'task_' || lpad(i::text, 26, '0'), 'n', 'default', '${status}', '{}'::jsonb, '{}'::jsonb, 0, 3, 0, i, 'task_' || lpad(i::text, 26, '0'),
         i, i, ${status === "queued" ? "NULL" : "i"}
       FROM generate_series(${from}, ${to}) AS i`;
    await q(rows("succeeded", 1, 60_000));
    await q(rows("queued", 60_001, 66_000));
    await q(`ANALYZE "${schema}".cairnq_tasks`);
    const compiler = new StatementCompiler(new PostgresStoreSyntax(), POSTGRES_CLOCK, true);
    const conn = await client({ options: `-c search_path="${schema}"` });
    await conn.query("SET plan_cache_mode = force_generic_plan");
    const probe = async (queue: string): Promise<{ plan: string; found: unknown }> => {
      const params = probeParams(normalizeClaim({ queues: [queue], workerId: W, names: ["n"] }));
      const statement = compiler.statement(PROBE_TEMPLATE, params);
      await conn.query(`PREPARE probe AS ${statement.sql}`);
      try {
        const args = statement.parameters(params).map((v) => conn.escapeLiteral(String(v)));
        const plan = (await conn.query<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE probe(${args.join(", ")})`)).rows.map((r) => r["QUERY PLAN"]).join("\n");
        const found = (await conn.query<{ found: unknown }>(`EXECUTE probe(${args.join(", ")})`)).rows[0]?.found;
        return { plan, found };
      } finally {
        await conn.query("DEALLOCATE probe");
      }
    };
    for (const [queue, found] of [["default", true], ["empty", false]] as const) {
      const result = await probe(queue);
      expect(result.plan).not.toContain("Seq Scan");
      expect(result.plan).toContain("cairnq_tasks_claim");
      expect(result.found).toBe(found);
    }
  });
});

describe("killed pool connections never crash the process", () => {
  it("a pool connection killed mid-use: the error reaches the caller, everything rolls back, the next call works", async () => {
    const store = openStore();
    const task = await store.submit({ name: "n" });
    await claimOne(store);
    await store.connect();
    const schema = store.schema as string;
    await q(`CREATE TABLE "${schema}".app_rows (v int)`);
    let started!: (pid: number) => void;
    const pidOf = new Promise<number>((resolve) => (started = resolve));
    const call = store.completeIn({ taskId: task.id, workerId: W }, async (trx) => {
      await sql`INSERT INTO app_rows (v) VALUES (1)`.execute(trx);
      started((await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)).rows[0]!.pid);
      await sql`SELECT pg_sleep(30)`.execute(trx);
      return "never";
    });
    const outcome = call.catch((error: unknown) => error);
    expect(await q("SELECT pg_terminate_backend($1) AS killed", [await pidOf])).toEqual([{ killed: true }]);
    const error = await outcome;
    expect(error).toBeInstanceOf(Error);
    // The server's "terminating connection" message, or, when the socket's reset arrives before that message
    // is read (seen on a loaded machine), the store's word for a connection that ended under a statement.
    expect(String((error as Error).message)).toMatch(/terminat|the connection to Postgres ended while a statement was in flight/i);
    expect(await q(`SELECT count(*)::int AS n FROM "${schema}".app_rows`)).toEqual([{ n: 0 }]);
    expect(await store.get(task.id)).toMatchObject({ status: "running", worker_id: W });
    const done = await store.complete({ taskId: task.id, workerId: W, result: 1 });
    expect(done.status).toBe("succeeded");
  });

  it("every backend of a store killed at once (idle pool clients and LISTEN): errors go to onError, the pool replaces them, calls and wakeups resume", async () => {
    const { dsn, app } = taggedDsn();
    const errors: string[] = [];
    const store = openStore(dsn, { schema: schemaName(), max: 3, onError: (_error, info) => errors.push(info.source) });
    await store.connect();
    await Promise.all(Array.from({ length: 3 }, () => store.db.executeQuery(raw("SELECT pg_sleep(0.05)"))));
    expect(await until(() => store.listenState === "listening")).toBe(true);
    const pids = await backendsOf(app);
    expect(pids).toHaveLength(4); // three pooled connections and the LISTEN connection
    await q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [app]);
    // Each idle pooled client reports its death once; until then the pool may still hand it out (that call fails).
    expect(await until(() => errors.filter((e) => e === "pool").length >= 3 && errors.includes("listen"))).toBe(true);
    const task = await store.submit({ name: "n" });
    expect(await store.get(task.id)).toMatchObject({ status: "queued" });
    expect(await until(() => store.listenState === "listening", 5000)).toBe(true);
    const start = Date.now();
    const wait = store.taskDoneWake(task.id, 10_000);
    await claimOne(store);
    await store.complete({ taskId: task.id, workerId: W, result: null });
    await wait;
    expect(Date.now() - start).toBeLessThan(3000);
  });

  it("a caller's pg.Pool with no error listener of its own: killed idle clients do not crash the process while the store is open", async () => {
    const schema = await freshSchema();
    const { app } = taggedDsn();
    const pool = new pg.Pool({ connectionString: pgDsn(), options: `-c search_path="${schema}"`, application_name: app, max: 2 });
    const errors: string[] = [];
    const store = new PostgresStore(pool, { schema, listen: false, onError: (_e, info) => errors.push(info.source) });
    try {
      // Two submits at once would share one statement (the write combiner) and one connection: hold two.
      await Promise.all(Array.from({ length: 2 }, () => store.db.executeQuery(raw("SELECT pg_sleep(0.05)"))));
      await Promise.all([store.submit({ name: "a" }), store.submit({ name: "b" })]);
      const killed = await q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [app]);
      expect(killed).toHaveLength(2);
      expect(await until(() => errors.length >= 2)).toBe(true);
      expect(errors.every((e) => e === "pool")).toBe(true);
      expect(await store.list()).toHaveLength(2);
    } finally {
      await store.close();
      expect(pool.listenerCount("error")).toBe(0);
      await pool.end();
    }
  });
});

describe("keyed operations serialize on the advisory key lock (§5.0, §13)", () => {
  it("concurrent same-key submits from two stores (two pools) make one task per key", async () => {
    const schema = schemaName();
    const a = openStore(pgDsn(), { schema, max: 5, listen: false });
    const b = openStore(pgDsn(), { schema, max: 5, listen: false });
    await a.connect();
    await b.connect();
    const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
    const reused = await Promise.all(keys.flatMap((key) => [a.submit({ name: "n", key }), b.submit({ name: "n", key })]));
    for (let i = 0; i < keys.length; i++) expect(reused[2 * i]?.id).toBe(reused[2 * i + 1]?.id);
    expect(await a.list({ limit: 1000 })).toHaveLength(keys.length);
    await Promise.all(keys.flatMap((key) => [a.submit({ name: "n", key, conflict: "replace" }), b.submit({ name: "n", key, conflict: "replace" })]));
    const rows = await a.list({ limit: 1000 });
    expect(rows.filter((r) => r.status === "queued")).toHaveLength(keys.length);
    for (const key of keys) expect((await b.getByKey(key))?.status).toBe("queued");
  });

  it("takes exactly pg_advisory_xact_lock(hashtextextended(key, 0)): a peer session holding it makes keyed calls wait", async () => {
    const store = openStore(pgDsn(), { schema: schemaName(), listen: false });
    await store.submit({ name: "n", key: "held" });
    const peer = await client();
    await peer.query("SELECT pg_advisory_lock(hashtextextended($1::text, 0))", ["held"]);
    let settled = 0;
    const submit = store.submit({ name: "n", key: "held", conflict: "replace" }).finally(() => (settled += 1));
    const cancel = store.cancelByKey("held").finally(() => (settled += 1));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(0);
    const unrelated = await store.submit({ name: "n", key: "free" });
    expect(unrelated.status).toBe("queued");
    await peer.query("SELECT pg_advisory_unlock(hashtextextended($1::text, 0))", ["held"]);
    const [submitted, canceled] = await Promise.all([submit, cancel]);
    expect(submitted.status).toBe("queued");
    expect(canceled?.status).toBe("canceled");
  });
});

describe("flow control serialises per name on the advisory lock of cairnq:flow:<name> (extension)", () => {
  it("a peer session holding the lock of 'a' makes limited claims of 'a' wait; claims of 'b', limited or not, go through", async () => {
    const store = openStore(pgDsn(), { schema: schemaName(), listen: false });
    for (const name of ["a", "b", "b"]) await store.submit({ name });
    const peer = await client();
    await peer.query("SELECT pg_advisory_lock(hashtextextended($1::text, 0))", ["cairnq:flow:a"]);
    let claimedA: Task[] | null = null;
    const held = store
      .claim({ queues: ["default"], names: ["a"], workerId: "w1", leaseMs: 60_000, flowControl: { a: { globalConcurrency: 1 } } })
      .then((rows) => (claimedA = rows));
    const limitedB = await store.claim({ queues: ["default"], names: ["b"], workerId: "w2", leaseMs: 60_000, flowControl: { b: { globalConcurrency: 5, rateLimit: { max: 5, perMs: 1000 } } } });
    const plainB = await store.claim({ queues: ["default"], names: ["b"], workerId: "w3", leaseMs: 60_000 });
    expect([...limitedB, ...plainB].map((t) => t.name)).toEqual(["b", "b"]);
    // Both claims of 'b' finished while 'a' is still waiting for its lock, and it keeps waiting.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(claimedA).toBeNull();
    await peer.query("SELECT pg_advisory_unlock(hashtextextended($1::text, 0))", ["cairnq:flow:a"]);
    expect((await held).map((t) => t.name)).toEqual(["a"]);
  });
});

describe("completeIn: settle in the caller's transaction (§5.15)", () => {
  async function setup(): Promise<{ store: PostgresStore; task: Task; schema: string }> {
    const store = openStore(pgDsn(), { schema: schemaName(), listen: false });
    await store.submit({ name: "n" });
    const task = await claimOne(store);
    const schema = store.schema as string;
    await q(`CREATE TABLE "${schema}".app_rows (v text)`);
    return { store, task, schema };
  }

  async function appRows(schema: string): Promise<string[]> {
    return (await q<{ v: string }>(`SELECT v FROM "${schema}".app_rows ORDER BY v`)).map((r) => r.v);
  }

  it("commit: the caller's writes and the completion land together; the return value is the result", async () => {
    const { store, task, schema } = await setup();
    let isolation = "";
    const out = await store.completeIn({ taskId: task.id, workerId: W, attempt: 1 }, async (trx) => {
      await sql`INSERT INTO app_rows (v) VALUES ('written')`.execute(trx);
      isolation = (await sql<{ level: string }>`SELECT current_setting('transaction_isolation') AS level`.execute(trx)).rows[0]!.level;
      return { rows: 1 };
    });
    expect(isolation).toBe("read committed"); // the server default, never raised (§3.9)
    expect(out.result).toEqual({ rows: 1 });
    expect(out.task).toMatchObject({ status: "succeeded", result: { rows: 1 }, progress: 1 });
    expect(await appRows(schema)).toEqual(["written"]);
  });

  it.each([
    ["another worker", { workerId: "worker_other" }],
    ["another attempt", { attempt: 2 }],
  ])("LostLease (%s) rolls the caller's writes back; the task stays running", async (_label, override) => {
    const { store, task, schema } = await setup();
    await expect(
      store.completeIn({ taskId: task.id, workerId: W, ...override }, async (trx) => {
        await sql`INSERT INTO app_rows (v) VALUES ('lost')`.execute(trx);
        return 1;
      }),
    ).rejects.toBeInstanceOf(LostLease);
    expect(await appRows(schema)).toEqual([]);
    expect(await store.get(task.id)).toMatchObject({ status: "running", worker_id: W });
  });

  it("a throwing function or an unencodable result rolls everything back", async () => {
    const { store, task, schema } = await setup();
    const failure = new Error("handler failed");
    await expect(
      store.completeIn({ taskId: task.id, workerId: W }, async (trx) => {
        await sql`INSERT INTO app_rows (v) VALUES ('thrown')`.execute(trx);
        throw failure;
      }),
    ).rejects.toBe(failure);
    await expect(
      store.completeIn({ taskId: task.id, workerId: W }, async (trx) => {
        await sql`INSERT INTO app_rows (v) VALUES ('nan')`.execute(trx);
        return { n: Number.NaN };
      }),
    ).rejects.toBeInstanceOf(SerializationError);
    expect(await appRows(schema)).toEqual([]);
    expect(await store.get(task.id)).toMatchObject({ status: "running" });
  });
});

describe("withTransaction: submit inside the caller's transaction", () => {
  it("a task submitted in the caller's transaction is invisible to others until commit, then exists", async () => {
    const store = openStore();
    await store.connect();
    let id = "";
    await store.db.transaction().execute(async (trx) => {
      const task = await store.withTransaction(trx).submit({ name: "n", key: "order-1" });
      id = task.id;
      expect(task.status).toBe("queued");
      expect(await store.get(id)).toBeNull(); // another connection
      expect(await store.withTransaction(trx).get(id)).toMatchObject({ id }); // the transaction itself
    });
    expect(await store.get(id)).toMatchObject({ id, status: "queued" });
    expect(await store.getByKey("order-1")).toMatchObject({ id });
  });

  it("rolled back with the caller's transaction: no task, no key", async () => {
    const store = openStore();
    await store.connect();
    let id = "";
    const failure = new Error("order rejected");
    await expect(
      store.db.transaction().execute(async (trx) => {
        id = (await store.withTransaction(trx).submit({ name: "n", key: "order-2" })).id;
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await store.get(id)).toBeNull();
    expect(await store.getByKey("order-2")).toBeNull();
    expect(await store.list()).toEqual([]);
  });

  it("a keyed submit holds the key lock until the caller commits: a concurrent submit of the key waits, then reuses that task", async () => {
    const store = openStore(pgDsn(), { schema: schemaName(), max: 4 });
    await store.connect();
    let inner = "";
    let outside: Promise<Task> | null = null;
    await store.db.transaction().execute(async (trx) => {
      inner = (await store.withTransaction(trx).submit({ name: "n", key: "shared" })).id;
      outside = store.submit({ name: "n", key: "shared" });
      let settled = false;
      void outside.finally(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled).toBe(false);
    });
    expect((await (outside as unknown as Promise<Task>)).id).toBe(inner);
    expect(await store.list()).toHaveLength(1);
  });

  it("works on the caller's own Kysely (its own pool) on the same search_path", async () => {
    const store = openStore();
    await store.connect();
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: poolFor(store.schema as string) }) });
    const task = await db.transaction().execute((trx) => store.withTransaction(trx).submit({ name: "n" }));
    expect(await store.get(task.id)).toMatchObject({ status: "queued" });
    const view = await db.transaction().execute(async (trx) => store.withTransaction(trx));
    expect(view.capabilities.transactionalComplete).toBe(false);
    expect((view as unknown as { completeIn?: unknown }).completeIn).toBeUndefined();
  });

  it("refuses a transaction whose search_path resolves to another CairnQ installation, or to none, naming both schemas; nothing is written", async () => {
    const store = openStore();
    const other = openStore();
    await Promise.all([store.connect(), other.connect()]);
    const otherDb = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: poolFor(other.schema as string) }) });
    const failed = await otherDb
      .transaction()
      .execute((trx) => store.withTransaction(trx).submit({ name: "lost" }))
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(InvalidArgument);
    expect((failed as Error).message).toContain(`resolves CairnQ's tables to schema "${other.schema as string}"`);
    expect((failed as Error).message).toContain(`not to this store's schema "${store.schema as string}"`);
    expect([await store.list(), await other.list()]).toEqual([[], []]);

    const empty = await freshSchema();
    const emptyDb = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: poolFor(empty) }) });
    await expect(emptyDb.transaction().execute((trx) => store.withTransaction(trx).submit({ name: "lost" }))).rejects.toThrow(/resolves CairnQ's tables to no schema/);
    // The client's pattern: a view per call, in a transaction that was checked once.
    const ok = await store.db.transaction().execute(async (trx) => {
      await store.withTransaction(trx).submit({ name: "kept" });
      return store.withTransaction(trx).submit({ name: "kept" });
    });
    expect(await store.get(ok.id)).toMatchObject({ status: "queued" });
  });

  it("rejects anything but an open Kysely transaction", () => {
    const store = openStore();
    expect(() => store.withTransaction(store.db as never)).toThrow(InvalidArgument);
    expect(() => store.withTransaction(null as never)).toThrow(InvalidArgument);
  });
});

describe("PostgresExecutor.writeTransactionAfter (BEGIN and the first statement in one round trip)", () => {
  it("commits the first statement with the body, rolls both back when the body throws, and leaves the connection usable", async () => {
    const schema = await freshSchema();
    const pool = poolFor(schema, { max: 1 });
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
    const executor = new PostgresExecutor();
    try {
      await db.executeQuery(CompiledQuery.raw("CREATE TABLE t (v int)"));
      const first = (v: number) => () => CompiledQuery.raw(`INSERT INTO t VALUES (${v})`);
      const inTx = await executor.writeTransactionAfter(db, first(1), async (tx) => {
        await tx.executeQuery(CompiledQuery.raw("INSERT INTO t VALUES ($1)", [2]));
        const result = await tx.executeQuery(CompiledQuery.raw("SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS n"));
        return (result.rows[0] as { n: boolean } | undefined)?.n;
      });
      expect(inTx).toBe(true);
      await expect(
        executor.writeTransactionAfter(db, first(3), async (tx) => {
          await tx.executeQuery(CompiledQuery.raw("INSERT INTO t VALUES (4)"));
          throw new Error("body failed");
        }),
      ).rejects.toThrow("body failed");
      await expect(executor.writeTransactionAfter(db, () => CompiledQuery.raw("INSERT INTO missing VALUES (1)"), async () => 1)).rejects.toThrow(/missing/);
      const rows = (await db.executeQuery(CompiledQuery.raw("SELECT v FROM t ORDER BY v"))).rows as { v: number }[];
      expect(rows.map((r) => r.v)).toEqual([1, 2]);
    } finally {
      await db.destroy();
    }
  });
});
