import Database from "better-sqlite3";
import type { QueueDepthGate, TaskStore } from "@cairnq/protocol";
import { CairnQError, InvalidArgument, SerializationError } from "@cairnq/protocol";
import { CANCEL_BATCH, cancelBatchParams, DRAW, PURGE, purgeParams, RECOVER } from "@cairnq/protocol/adapter";
import type { StatementTemplate } from "@cairnq/store-kysely";
import {
  batchTransitionTemplate,
  deleteTemplate,
  LIST_BY_ID_TEMPLATE,
  ProcessClock,
  PROBE_TEMPLATE,
  setTransitionTemplate,
  SqliteSyntax,
  StatementCompiler,
} from "@cairnq/store-kysely";
import { describe, expect, it } from "vitest";
import { SQLiteStore } from "../src/index.js";
import { SQLiteStoreSyntax } from "../src/sqlite-store-syntax.js";
import { openStore, tempFile } from "./helpers.js";

function count(file: string, table: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  } finally {
    db.close();
  }
}

type Explain = (template: StatementTemplate, params: Record<string, unknown>) => string;

/** `explain` on `db`: the `EXPLAIN QUERY PLAN` details of a template compiled with `syntax` for `params`, joined by " | ". */
function explainOn(db: Database.Database, syntax: SqliteSyntax = new SQLiteStoreSyntax()): Explain {
  const compiler = new StatementCompiler(syntax, new ProcessClock());
  return (template, params) => {
    const s = compiler.statement(template, params);
    const values = s.parameters(params);
    return (db.prepare(`EXPLAIN QUERY PLAN ${s.sql}`).all(Object.fromEntries(values.map((v, i) => [i + 1, v]))) as { detail: string }[]).map((r) => r.detail).join(" | ");
  };
}

/**
 * A fresh file holding 50 tasks (5 names over 3 queues), analyzed, and
 * `explain` on it with the store's syntax (see {@link explainOn}). Close `db` when done.
 */
async function analyzedFile(): Promise<{ db: Database.Database; explain: Explain }> {
  const file = tempFile();
  const store = openStore(file);
  await Promise.all(Array.from({ length: 50 }, (_, i) => store.submit({ name: `n${i % 5}`, queue: `q${i % 3}` })));
  await store.close();
  const db = new Database(file);
  db.exec("ANALYZE");
  return { db, explain: explainOn(db) };
}

describe("bad input is rejected before anything is written", () => {
  const badSubmits: [string, Record<string, unknown>, string][] = [
    ["unknown conflict", { name: "n", key: "k", conflict: "merge" }, "conflict"],
    ["maxAttempts 0", { name: "n", maxAttempts: 0 }, "maxAttempts"],
    ["negative maxAttempts", { name: "n", key: "k", maxAttempts: -1 }, "maxAttempts"],
    ["non-integer maxAttempts", { name: "n", maxAttempts: 1.5 }, "maxAttempts"],
    ["non-integer priority", { name: "n", priority: 0.5 }, "priority"],
    ["NaN priority", { name: "n", priority: Number.NaN }, "priority"],
    ["priority beyond 32 bits", { name: "n", priority: 2 ** 31 }, "priority"],
    ["negative runAtDelayMs", { name: "n", runAtDelayMs: -1 }, "runAtDelayMs"],
    ["non-integer runAtDelayMs", { name: "n", runAtDelayMs: 2.5 }, "runAtDelayMs"],
    ["empty name", { name: "" }, "name"],
    ["missing name", {}, "name"],
    ["empty queue", { name: "n", queue: "" }, "queue"],
    ["empty key", { name: "n", key: "" }, "key"],
    ["array metadata", { name: "n", metadata: [] }, "metadata"],
  ];

  it.each(badSubmits)("submit: %s → InvalidArgument", async (_label, input, argument) => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    const err = await store.submit(input as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err).toMatchObject({ argument });
    expect(count(file, "cairnq_tasks")).toBe(0);
    expect(count(file, "cairnq_task_keys")).toBe(0);
  });

  it.each([
    ["NaN payload", { name: "n", payload: Number.NaN }],
    ["NaN deep in the payload", { name: "n", key: "k", payload: { a: [1, { b: Number.NaN }] } }],
    ["Infinity in metadata", { name: "n", metadata: { x: Number.POSITIVE_INFINITY } }],
    ["BigInt payload", { name: "n", payload: { n: 1n } }],
  ])("submit: %s → SerializationError", async (_label, input) => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    await expect(store.submit(input as never)).rejects.toBeInstanceOf(SerializationError);
    expect(count(file, "cairnq_tasks")).toBe(0);
    expect(count(file, "cairnq_task_keys")).toBe(0);
  });

  it("negative priority is a valid priority (§5.1: any 32-bit integer, higher first)", async () => {
    const store = openStore();
    expect((await store.submit({ name: "n", priority: -5 })).priority).toBe(-5);
  });

  it("the backpressure gate is acquired only after validation, for keyed submits too", async () => {
    const store = openStore();
    const gated: string[] = [];
    const gate: QueueDepthGate = {
      acquire: async (queue: string, s: TaskStore) => {
        expect(s).toBe(store);
        gated.push(queue);
      },
    };
    store.queueDepthGate = gate;
    await expect(store.submit({ name: "n", queue: "q", maxAttempts: 0 })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(store.submit({ name: "n", queue: "q", payload: Number.NaN })).rejects.toBeInstanceOf(SerializationError);
    expect(gated).toEqual([]);
    await store.submit({ name: "n", queue: "q", key: "k" });
    await store.submit({ name: "n", queue: "q", key: "k" });
    expect(gated).toEqual(["q", "q"]);
  });

  it("worker, client and read operations validate their input and leave rows untouched", async () => {
    const file = tempFile();
    const store = openStore(file);
    const task = await store.submit({ name: "n" });
    const [claimed] = await store.claim({ queues: ["default"], workerId: "w", leaseMs: 5000 });
    const owned = { taskId: claimed!.id, workerId: "w" };
    const rejections: [Promise<unknown>, string][] = [
      [store.claim({ queues: ["default"], workerId: "w", leaseMs: 0 }), "leaseMs"],
      [store.claim({ queues: ["default"], workerId: "w", leaseMs: -5 }), "leaseMs"],
      [store.claim({ queues: ["default"], workerId: "w", leaseMs: 1.5 }), "leaseMs"],
      [store.claim({ queues: ["default"], workerId: "w", limit: -1 }), "limit"],
      [store.claim({ queues: "default" as never, workerId: "w" }), "queues"],
      [store.claim({ queues: ["default"], workerId: "" }), "workerId"],
      [store.heartbeat({ ...owned, leaseMs: -1 }), "leaseMs"],
      [store.heartbeatBatch({ taskIds: [task.id], workerId: "w", leaseMs: 0 }), "leaseMs"],
      [store.progress({ ...owned, progress: Number.NaN }), "progress"],
      [store.fail({ ...owned, delayMs: -1 }), "delayMs"],
      [store.fail({ ...owned, retryable: "yes" as never }), "retryable"],
      [store.complete({ taskId: "", workerId: "w" }), "taskId"],
      [store.retry(task.id, { resetAttempt: 1 as never }), "resetAttempt"],
      [store.cancel(""), "id"],
      [store.list({ status: "paused" as never }), "status"],
      [store.list({ limit: -1 }), "limit"],
      [store.purge({ status: "queued" as never }), "status"],
      [store.purge({ olderThanMs: -1 }), "olderThanMs"],
      [store.purge({ limit: 0 }), "limit"],
      [store.queueDepth("default", -1), "maxDepth"],
      [store.queueDepth("", 3), "queue"],
      [store.get(""), "id"],
      [store.getByKey(""), "key"],
    ];
    for (const [promise, argument] of rejections) {
      const err = await promise.catch((e: unknown) => e);
      expect(err, argument).toBeInstanceOf(InvalidArgument);
      expect(err).toMatchObject({ argument });
    }
    await expect(store.complete({ ...owned, result: { x: Number.NaN } })).rejects.toBeInstanceOf(SerializationError);
    const row = await store.get(task.id);
    expect(row).toEqual(claimed);
    expect(count(file, "cairnq_tasks")).toBe(1);
  });
});

describe("store behaviour specific to SQLite", () => {
  it("derives every time from the injected process clock, read once per statement", async () => {
    let now = 1_000_000;
    const store = openStore(tempFile(), { clock: () => now });
    const task = await store.submit({ name: "n", runAtDelayMs: 50, key: "k" });
    expect(task).toMatchObject({ created_at_ms: now, updated_at_ms: now, run_at_ms: now + 50, root_id: task.id });
    expect(await store.claim({ queues: ["default"], workerId: "w" })).toEqual([]);
    now += 50;
    const [claimed] = await store.claim({ queues: ["default"], workerId: "w", leaseMs: 100 });
    expect(claimed).toMatchObject({ lease_until_ms: now + 100, updated_at_ms: now, attempt: 1 });
    now += 100; // lease_until_ms ≤ now: expired (recovery uses ≤, ownership >)
    await expect(store.heartbeat({ taskId: task.id, workerId: "w" })).rejects.toMatchObject({ name: "LostLease", taskId: task.id });
    const [again] = await store.claim({ queues: ["default"], workerId: "w2", leaseMs: 100 });
    expect(again).toMatchObject({ id: task.id, worker_id: "w2", attempt: 2, run_at_ms: now });
  });

  it("the key upsert keeps created_at_ms and repoints the key (§5.1 step 5)", async () => {
    let now = 5_000;
    const file = tempFile();
    const store = openStore(file, { clock: () => now });
    const first = await store.submit({ name: "n", key: "k" });
    now = 7_000;
    const second = await store.submit({ name: "n", key: "k", conflict: "replace" });
    expect(second.id).not.toBe(first.id);
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT * FROM cairnq_task_keys").all()).toEqual([{ key: "k", task_id: second.id, created_at_ms: 5_000, updated_at_ms: 7_000 }]);
    db.close();
    expect((await store.get(first.id))?.status).toBe("canceled");
  });

  it("heartbeatBatch answers in requested-id order and runs no statement for no ids", async () => {
    const store = openStore();
    const tasks = await Promise.all([1, 2, 3].map(() => store.submit({ name: "n" })));
    await store.claim({ queues: ["default"], workerId: "w", limit: 3 });
    const ids = [tasks[2]!.id, "task_missing", tasks[0]!.id, tasks[1]!.id];
    await store.cancel(tasks[0]!.id);
    const map = await store.heartbeatBatch({ taskIds: ids, workerId: "w" });
    expect([...map.entries()]).toEqual([
      [tasks[2]!.id, false],
      [tasks[0]!.id, true],
      [tasks[1]!.id, false],
    ]);
    const before = { ...(store.dialect as unknown as { connection: { queue: { stats: { statements: number } } } }).connection.queue.stats };
    expect(await store.heartbeatBatch({ taskIds: [], workerId: "w" })).toEqual(new Map());
    expect((store.dialect as unknown as { connection: { queue: { stats: { statements: number } } } }).connection.queue.stats.statements).toBe(
      before.statements,
    );
  });

  it("has completeIn and withTransaction on SQLite, and says so in its capabilities (§5.15)", () => {
    const store = openStore();
    expect(store.capabilities).toEqual({ pushWakeups: false, transactionalComplete: true, databaseClock: false, flowControl: true, schedules: true, completeRef: true, claimReprobe: true, claimWakeOnQueued: true, taskDoneWakeReads: true, queueHealth: true, durableSteps: true, groups: true });
    expect(typeof store.completeIn).toBe("function");
    expect(typeof store.withTransaction).toBe("function");
  });

  it("close waits for in-flight calls, is idempotent, and later calls reject", async () => {
    const store = new SQLiteStore(tempFile());
    const pending = Array.from({ length: 20 }, () => store.submit({ name: "n" }));
    const closing = store.close();
    await expect(Promise.all(pending)).resolves.toHaveLength(20);
    await closing;
    await store.close();
    await expect(store.submit({ name: "n" })).rejects.toBeInstanceOf(CairnQError);
    await expect(store.connect()).rejects.toThrow(/closed/);
    const never = new SQLiteStore(tempFile());
    await never.close();
  });

  it("a store that failed to connect can be closed, and reconnects once the cause is gone", async () => {
    const file = tempFile();
    const setup = new SQLiteStore(file);
    await setup.connect();
    await setup.close();
    const raw = new Database(file);
    raw.exec("UPDATE cairnq_meta SET value = '3' WHERE key = 'protocol_version'");
    const store = openStore(file);
    await expect(store.connect()).rejects.toMatchObject({ name: "ProtocolVersionMismatch" });
    raw.exec("UPDATE cairnq_meta SET value = '1' WHERE key = 'protocol_version'");
    raw.close();
    expect((await store.submit({ name: "n" })).status).toBe("queued");
  });

  it("rejects a path that is not a string, or empty (SQLite's private temporary database, which no other connection sees)", () => {
    for (const path of ["", 7, undefined]) {
      const err = (() => {
        try {
          new SQLiteStore(path as string);
        } catch (e) {
          return e as InvalidArgument;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(InvalidArgument);
      expect(err?.argument).toBe("path");
      expect(err?.message).toMatch(/^path must be a string \(a file path or ":memory:"\), got /);
    }
    expect(() => new SQLiteStore("")).toThrow(/got an empty string, which SQLite would open as a private temporary database/);
  });

  it("rejects a bad busyTimeoutMs at construction", () => {
    expect(() => new SQLiteStore(tempFile(), { busyTimeoutMs: -1 })).toThrow(InvalidArgument);
    expect(() => new SQLiteStore(tempFile(), { busyTimeoutMs: 1.5 })).toThrow(InvalidArgument);
  });

  it("records planner statistics at connect (§3.9)", async () => {
    const file = tempFile();
    await openStore(file).connect();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'cairnq_tasks'").pluck().get()).toBeGreaterThan(0);
    db.close();
  });

  it("one-queue draws, the probe and recovery read the claim and lease indexes", async () => {
    const { db, explain } = await analyzedFile();
    const draw = (queues: string[], names: string[] | null): string =>
      explain(setTransitionTemplate(DRAW, "task"), { queues, names, limit: 5, workerId: "w", leaseMs: 10 });
    expect(draw(["q1"], null)).toContain("cairnq_tasks_claim_idx");
    expect(draw(["q1"], ["n1"])).toContain("cairnq_tasks_claim_name_idx");
    expect(explain(setTransitionTemplate(RECOVER, ["id"]), {})).toContain("cairnq_tasks_lease_idx");
    expect(explain(PROBE_TEMPLATE, { queues: ["q1"], names: null })).toMatch(/cairnq_tasks_claim(_name)?_idx.*cairnq_tasks_lease_idx/);
    db.close();
  });

  it("on statistics gathered while the table held one task, statements that take rows by id look them up, never scanning the table", async () => {
    // §3.9 analyses the table when a store connects, often while it is nearly empty, and the planner trusts that until the
    // statistics are refreshed: 3,000 rows it believes are one.
    const file = tempFile();
    const store = openStore(file);
    await store.submit({ name: "n" });
    await store.close();
    const setup = new Database(file);
    setup.exec("ANALYZE");
    setup.exec(
      "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 3000) " +
        "INSERT INTO cairnq_tasks (id, name, queue, status, payload, run_at_ms, created_at_ms, updated_at_ms, completed_at_ms) " +
        "SELECT printf('task_0%025d', n), 'n', 'default', 'succeeded', '{}', 1, 1, 1, 1 FROM i",
    );
    setup.close();
    const db = new Database(file, { readonly: true });
    const scansTable = /\bSCAN cairnq_tasks(?! USING)/;
    const plans = (explain: Explain): string[] => [
      explain(setTransitionTemplate(DRAW, "task"), { queues: ["default"], names: ["n"], limit: 1, workerId: "w", leaseMs: 10 }),
      explain(deleteTemplate(PURGE), purgeParams({ olderThanMs: 0, limit: 10 })),
      explain(batchTransitionTemplate(CANCEL_BATCH), cancelBatchParams({ status: "queued", limit: 10 })),
    ];
    try {
      // The core's plain SQLite syntax shows what the pinned index prevents.
      expect(plans(explainOn(db, new SqliteSyntax()))[0]).toMatch(scansTable);
      for (const plan of plans(explainOn(db))) {
        expect(plan).not.toMatch(scansTable);
        expect(plan).toContain("sqlite_autoindex_cairnq_tasks_1");
      }
    } finally {
      db.close();
    }
  });

  it("binds every parameter as +?n, which the planner does not read: a bare ?n beside an indexed column has SQLite prepare the statement again on every run once sqlite_stat4 exists", () => {
    const compiler = new StatementCompiler(new SQLiteStoreSyntax(), new ProcessClock());
    const claim = { queues: ["q1"], names: ["n1"], limit: 5, workerId: "w", leaseMs: 10 };
    for (const [template, params] of [
      [setTransitionTemplate(DRAW, "task"), claim],
      [setTransitionTemplate(RECOVER, ["id"]), {}],
      [PROBE_TEMPLATE, { queues: ["q1"], names: ["n1"] }],
      [deleteTemplate(PURGE), purgeParams({ olderThanMs: 0, queue: "q1", limit: 10 })],
    ] as const) {
      const { sql } = compiler.statement(template, params);
      expect(sql).toMatch(/\+\?\d/);
      expect(sql).not.toMatch(/(?<!\+)\?\d/);
    }
  });

  it("list in id order (keyset by beforeId) reads the primary key index in order, never sorting the table", async () => {
    const { db, explain } = await analyzedFile();
    const plan = (input: Record<string, unknown>): string =>
      explain(LIST_BY_ID_TEMPLATE, { status: null, queue: null, name: null, rootId: null, correlationId: null, limit: 50, offset: 0, beforeId: null, ...input });
    for (const input of [{ beforeId: "task_8" }, { beforeId: "task_7" }]) {
      const p = plan(input);
      expect(p, JSON.stringify(input)).toContain("sqlite_autoindex_cairnq_tasks_1");
      expect(p, JSON.stringify(input)).not.toContain("TEMP B-TREE");
    }
    db.close();
  });
});

describe("submit without RETURNING (the process clock: the row is SUBMIT's buildInsert)", () => {
  it("returns exactly the row the database holds, for every kind of submit", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    try {
      const parent = await store.submit({ name: "parent" });
      const submitted = [
        parent,
        await store.submit({ name: "n", queue: "q", payload: { a: [1, "x", null], b: { c: 1.5 } }, metadata: { m: "1" }, priority: -3, maxAttempts: 7, runAtDelayMs: 5000 }),
        await store.submit({ name: "n", parentId: parent.id, rootId: parent.id, correlationId: "corr" }),
        await store.submit({ name: "n", key: "k1" }),
        await store.submit({ name: "n", key: "k2" }).then(async (first) => {
          // The replaced task is canceled; the one returned is the new row.
          const second = await store.submit({ name: "n", key: "k2", conflict: "replace" });
          expect(second.id).not.toBe(first.id);
          return second;
        }),
        await Promise.all(Array.from({ length: 20 }, (_, i) => store.submit({ name: "c", payload: i }))),
      ].flat();
      for (const task of submitted) {
        expect(task).toEqual(await store.get(task.id));
      }
    } finally {
      await store.close();
    }
  });
});

describe("claim with probe: false", () => {
  it("opens the claim transaction without the probe: recovery and draws as always, nothing when nothing is claimable", async () => {
    const store = openStore();
    await store.connect();
    try {
      expect(await store.claim({ queues: ["default"], workerId: "w", probe: false })).toEqual([]);
      const task = await store.submit({ name: "n" });
      const claimed = await store.claim({ queues: ["default"], workerId: "w", probe: false });
      expect(claimed.map((t) => [t.id, t.status])).toEqual([[task.id, "running"]]);
      await expect(store.claim({ queues: ["default"], workerId: "w", probe: "no" as never })).rejects.toThrow(/probe/);
    } finally {
      await store.close();
    }
  });
});
