import { CompiledQuery } from "kysely";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SQLiteDialect, SQLiteStore } from "../src/index.js";
import type { MergeableWrite, WriteQueueStats } from "../src/write-queue.js";
import type * as WriteQueueModule from "../src/write-queue.js";
import { DatabaseBusy, GroupRolledBack } from "../src/index.js";
import { openStore, tempFile } from "./helpers.js";

function dialectOf(store: SQLiteStore): SQLiteDialect {
  return store.dialect as SQLiteDialect;
}

function statsOf(store: SQLiteStore): WriteQueueStats {
  return { ...dialectOf(store).connection.queue.stats };
}

/** One raw statement through the store's write path (as a store operation would send it). */
function write(store: SQLiteStore, sql: string, parameters: unknown[] = []): Promise<unknown> {
  return dialectOf(store).executor.write(store.db, () => CompiledQuery.raw(sql, parameters));
}

describe("group commit (§13)", () => {
  it("signals the wake file once per committed turn, before the callers settle, and not for a turn that failed", async () => {
    const store = openStore();
    await store.connect();
    const connection = dialectOf(store).connection;
    const signalled: number[] = [];
    let settled = 0;
    const committed = vi.spyOn(connection, "committed").mockImplementation(() => void signalled.push(settled));
    // Issued in one tick: one group commit, one signal, before any of the three resolves.
    await Promise.all([store.submit({ name: "n" }), store.submit({ name: "n" }), store.submit({ name: "n" })].map((p) => p.then(() => settled++)));
    expect(signalled).toEqual([0]);
    // A claim alone only moves tasks from queued to running, which nobody waits for: no signal.
    const claimed = await store.claim({ queues: ["default"], workerId: "w", limit: 2, leaseMs: 1 });
    expect(claimed).toHaveLength(2);
    expect(committed).toHaveBeenCalledTimes(1);
    // Once its lease recovery changes rows (the two leases ran out: requeued), the claim's commit signals.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await store.claim({ queues: ["default"], workerId: "w", limit: 3 })).toHaveLength(3);
    expect(committed).toHaveBeenCalledTimes(2);
    // A claim that shares its commit with a settlement signals for the settlement.
    const [task] = await store.claim({ queues: ["default"], workerId: "w2", limit: 1 }).then(async (none) => {
      expect(none).toHaveLength(0);
      return store.list({ status: "running", limit: 1 });
    });
    await Promise.all([
      store.complete({ taskId: task!.id, workerId: task!.worker_id!, result: null }),
      store.claim({ queues: ["default"], workerId: "w", limit: 1, probe: false }),
    ]);
    expect(committed).toHaveBeenCalledTimes(3);
    // A statement that fails alone commits nothing: no signal.
    await expect(write(store, "UPDATE cairnq_tasks SET status = 'paused'")).rejects.toThrow();
    expect(committed).toHaveBeenCalledTimes(3);
  });

  it("GroupRolledBack passes instanceof across two copies of the package (a registry-symbol brand)", async () => {
    const specifier = "../src/write-queue.ts?second-copy";
    const copy = (await import(/* @vite-ignore */ specifier)) as typeof WriteQueueModule;
    expect(copy.GroupRolledBack).not.toBe(GroupRolledBack);
    expect(new copy.GroupRolledBack("/x.db", new Error("rolled back"))).toBeInstanceOf(GroupRolledBack);
    expect(new GroupRolledBack("/x.db", null)).toBeInstanceOf(copy.GroupRolledBack);
    expect(new DatabaseBusy("/x.db", 1, null)).not.toBeInstanceOf(copy.GroupRolledBack);
    expect(new copy.GroupRolledBack("/x.db", null).name).toBe("GroupRolledBack");
  });

  it("200 concurrent submits and then 200 concurrent completes all resolve, sharing transactions", async () => {
    const store = openStore();
    await store.connect();
    const before = statsOf(store);
    const submitted = await Promise.all(Array.from({ length: 200 }, (_, i) => store.submit({ name: "n", payload: { i } })));
    expect(new Set(submitted.map((t) => t.id)).size).toBe(200);
    const claimed = await store.claim({ queues: ["default"], workerId: "w", limit: 200 });
    expect(claimed).toHaveLength(200);
    const done = await Promise.all(claimed.map((t) => store.complete({ taskId: t.id, workerId: "w", result: t.payload })));
    expect(done.every((t) => t.status === "succeeded")).toBe(true);
    expect((await store.stats()).default).toMatchObject({ succeeded: 200, queued: 0, running: 0 });
    const after = statsOf(store);
    expect(after.statements - before.statements).toBe(400);
    expect(after.groupCommits - before.groupCommits).toBeGreaterThan(0);
    expect(after.batches - before.batches).toBeLessThan(400);
    expect(after.largestBatch).toBeGreaterThan(1);
  });

  it("a member with a bad statement fails alone; the others in its transaction commit", async () => {
    const store = openStore();
    const tasks = await Promise.all(Array.from({ length: 20 }, () => store.submit({ name: "n" })));
    const before = statsOf(store);
    // Issued in one tick, so they form one batch.
    const results = Promise.allSettled([
      ...tasks.slice(0, 10).map((t, i) => write(store, "UPDATE cairnq_tasks SET message = ?1 WHERE id = ?2", [`m${i}`, t.id])),
      write(store, "UPDATE cairnq_tasks SET status = 'paused' WHERE id = ?1", [tasks[10]!.id]),
      ...tasks.slice(11).map((t, i) => write(store, "UPDATE cairnq_tasks SET message = ?1 WHERE id = ?2", [`n${i}`, t.id])),
    ]);
    const settled = await results;
    const after = statsOf(store);
    expect(after.groupCommits - before.groupCommits).toBe(1);
    expect(after.statements - before.statements).toBe(20);
    expect(settled.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect(settled[10]).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: expect.stringMatching(/CHECK constraint/) }) });
    const rows = await store.list({ limit: 100 });
    expect(rows.filter((t) => t.message !== null)).toHaveLength(19);
    expect(rows.find((t) => t.id === tasks[10]!.id)).toMatchObject({ status: "queued", message: null });
  });

  it("when SQLite tears the whole transaction down, every member fails and nothing is applied", async () => {
    const store = openStore();
    const [a, b] = await Promise.all([store.submit({ name: "a" }), store.submit({ name: "b" })]);
    const settled = await Promise.allSettled([
      write(store, "UPDATE cairnq_tasks SET message = 'x' WHERE id = ?1", [a.id]),
      // OR ROLLBACK turns the primary-key conflict into a rollback of the whole transaction.
      write(store, "UPDATE OR ROLLBACK cairnq_tasks SET id = ?1 WHERE id = ?2", [a.id, b.id]),
      write(store, "UPDATE cairnq_tasks SET message = 'y' WHERE id = ?1", [b.id]),
    ]);
    expect(settled.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(GroupRolledBack);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: "SQLITE_CONSTRAINT_PRIMARYKEY" });
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(GroupRolledBack);
    expect((await store.get(a.id))?.message).toBeNull();
    expect((await store.get(b.id))?.message).toBeNull();
    // The connection is usable again.
    expect((await store.cancel(a.id))?.status).toBe("canceled");
  });

  it("statements resolve only after COMMIT: a read on the other connection sees every resolved write", async () => {
    const store = openStore();
    const writes = Array.from({ length: 50 }, (_, i) =>
      store.submit({ name: "n", payload: { i } }).then(async (task) => {
        expect(await store.getStatus(task.id)).toEqual({ id: task.id, status: "queued" });
      }),
    );
    await Promise.all(writes);
  });

  it("one queue per file: two stores on one file share it, and writes of both interleave safely", async () => {
    const file = tempFile();
    const a = openStore(file);
    const b = openStore(file);
    await Promise.all([a.connect(), b.connect()]);
    expect(dialectOf(a).connection.queue).toBe(dialectOf(b).connection.queue);
    const other = openStore();
    await other.connect();
    expect(dialectOf(other).connection.queue).not.toBe(dialectOf(a).connection.queue);
    const tasks = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).submit({ name: "n", key: `k${i % 7}` })));
    expect(new Set(tasks.map((t) => t.id)).size).toBe(7);
    const claims = await Promise.all([a, b, a, b].map((s, i) => s.claim({ queues: ["default"], workerId: `w${i}`, limit: 3 })));
    const ids = claims.flat().map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(7);
  });

  it("transactions and statements interleave without a statement landing inside a transaction", async () => {
    const store = openStore();
    await store.connect();
    const ops: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      ops.push(store.submit({ name: "n", key: `k${i % 5}`, conflict: i % 3 === 0 ? "replace" : "reuse" }));
      ops.push(store.submit({ name: "plain" }));
      if (i % 4 === 0) ops.push(store.claim({ queues: ["default"], workerId: "w", limit: 2 }));
    }
    await Promise.all(ops);
    for (let i = 0; i < 5; i++) expect(await store.getByKey(`k${i}`)).not.toBeNull();
    const { transactions } = statsOf(store);
    expect(transactions).toBeGreaterThan(40);
  });
});

/** A trigger that makes SQLite refuse (ABORT: the statement) or tear down (ROLLBACK: the transaction) inserts of tasks named `name`. */
async function refuseInserts(store: SQLiteStore, name: string, resolution: "ABORT" | "ROLLBACK"): Promise<void> {
  await write(store, `CREATE TRIGGER refuse_${name} BEFORE INSERT ON cairnq_tasks WHEN NEW.name = '${name}' BEGIN SELECT RAISE(${resolution}, 'refused ${name}'); END`);
}

describe("merged runs: concurrent submits in one group commit share one multi-row insert (§13)", () => {
  it("every caller gets its own row, matched by id, equal to what the database holds", async () => {
    const store = openStore();
    await store.connect();
    const before = statsOf(store);
    const tasks = await Promise.all(
      Array.from({ length: 150 }, (_, i) => store.submit({ name: `n${i % 3}`, payload: { i }, priority: i % 5, metadata: { k: i }, runAtDelayMs: i % 2 === 0 ? 0 : 60_000 })),
    );
    const after = statsOf(store);
    // 150 submits in one tick: one group commit, merged 64 + 64 + 22.
    expect(after.mergedStatements - before.mergedStatements).toBe(3);
    expect(after.merged - before.merged).toBe(150);
    expect(tasks.map((t) => t.payload)).toEqual(Array.from({ length: 150 }, (_, i) => ({ i })));
    for (const task of tasks) expect(await store.get(task.id)).toEqual(task);
    expect(tasks.every((t, i) => t.priority === i % 5 && t.name === `n${i % 3}` && t.root_id === t.id && t.status === "queued")).toBe(true);
  });

  it("one row the database refuses fails only its caller: the others get their rows, as from their own inserts", async () => {
    const store = openStore();
    await store.connect();
    await refuseInserts(store, "bad", "ABORT");
    const before = statsOf(store);
    const settled = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => store.submit({ name: i === 4 ? "bad" : "good", payload: { i } })));
    const after = statsOf(store);
    expect(after.mergeFallbacks - before.mergeFallbacks).toBe(1);
    expect(after.groupCommits - before.groupCommits).toBe(1);
    expect(settled[4]).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: "refused bad" }) });
    const good = settled.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<SQLiteStore["submit"]>>> => r.status === "fulfilled");
    expect(good.map((r) => r.value.payload)).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9].map((i) => ({ i })));
    for (const { value } of good) expect(await store.get(value.id)).toEqual(value);
    expect((await store.stats()).default?.queued).toBe(9);
  });

  it("a row that makes SQLite roll the whole transaction back: the batch runs again one by one, so the culprit alone gets its error", async () => {
    const store = openStore();
    await store.connect();
    const [other] = await Promise.all([store.submit({ name: "other" })]);
    await refuseInserts(store, "torn", "ROLLBACK");
    const settled = await Promise.allSettled([
      write(store, "UPDATE cairnq_tasks SET message = 'kept' WHERE id = ?1", [other.id]),
      ...Array.from({ length: 6 }, (_, i) => store.submit({ name: i === 2 ? "torn" : "fine", payload: { i } })),
    ]);
    // Run alone, the culprit's insert tears the retried transaction down too: it gets its error, everyone else GroupRolledBack.
    expect(settled[3]).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: "refused torn" }) });
    for (const [i, r] of settled.entries()) {
      if (i !== 3) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(GroupRolledBack);
    }
    expect((await store.stats()).default?.queued).toBe(1);
    expect((await store.get(other.id))?.message).toBeNull();
    // The queue and the connection work on.
    expect((await store.submit({ name: "after" })).status).toBe("queued");
  });

  it("a write of its own kind merges only with adjacent items of the same kind, within its row and byte bounds", async () => {
    const store = openStore();
    await store.connect();
    await write(store, "CREATE TABLE scratch (id text PRIMARY KEY, v integer NOT NULL CHECK (v >= 0))");
    const calls: string[][] = [];
    const put: MergeableWrite<{ id: string; v: number }, string> = {
      one: (run, item) => {
        calls.push([item.id]);
        run(CompiledQuery.raw("INSERT INTO scratch (id, v) VALUES (?, ?)", [item.id, item.v]));
        return `one:${item.id}`;
      },
      many: (run, items) => {
        calls.push(items.map((item) => item.id));
        run(CompiledQuery.raw(`INSERT INTO scratch (id, v) VALUES ${items.map(() => "(?, ?)").join(", ")}`, items.flatMap((item) => [item.id, item.v])));
        return items.map((item) => ({ ok: true, value: `many:${item.id}` }));
      },
      maxRows: 3,
      maxBytes: 10,
      bytes: (item) => (item.id.startsWith("big") ? 11 : 1),
    };
    const queue = dialectOf(store).connection.queue;
    const c = dialectOf(store).connection;
    const results = await Promise.allSettled([
      ...["a", "b", "c", "d"].map((id) => queue.mergeable(c, put, { id, v: 1 })),
      write(store, "UPDATE scratch SET v = v"),
      ...["e", "big", "f", "g", "h", "i"].map((id) => queue.mergeable(c, put, { id, v: id === "h" ? -1 : 1 })),
    ]);
    expect(calls).toEqual([["a", "b", "c"], ["d"], ["e"], ["big"], ["f", "g", "h"], ["f"], ["g"], ["h"], ["i"]]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : "rejected"))).toEqual([
      "many:a",
      "many:b",
      "many:c",
      "one:d",
      expect.objectContaining({ numAffectedRows: 4n }),
      "one:e",
      "one:big",
      "one:f",
      "one:g",
      "rejected",
      "one:i",
    ]);
    // h's row broke the merged insert of f, g, h: run again one by one, only h fails, with its own statement's error.
    expect((results[9] as PromiseRejectedResult).reason).toMatchObject({ code: "SQLITE_CONSTRAINT_CHECK" });
    expect((await store.db.selectFrom("scratch").select("id").orderBy("id").execute()).map((r) => r.id)).toEqual(["a", "b", "big", "c", "d", "e", "f", "g", "i"]);
  });
});

describe("merged runs: concurrent owned writes in one group commit share one read-back (§13)", () => {
  async function claimed(store: SQLiteStore, n: number): Promise<Awaited<ReturnType<SQLiteStore["claim"]>>> {
    await Promise.all(Array.from({ length: n }, (_, i) => store.submit({ name: "n", payload: { i } })));
    return store.claim({ queues: ["default"], workerId: "w", limit: n });
  }

  it("every caller gets its own row, matched by id, equal to the row the database holds; a stale attempt gets LostLease alone", async () => {
    const store = openStore();
    const tasks = await claimed(store, 12);
    await store.cancel(tasks[5]!.id);
    const before = statsOf(store);
    const settled = await Promise.allSettled(
      tasks.map((t, i) => store.complete({ taskId: t.id, workerId: "w", attempt: i === 3 ? t.attempt + 1 : t.attempt, result: { r: i } })),
    );
    const after = statsOf(store);
    expect(after.mergedStatements - before.mergedStatements).toBe(1);
    expect(after.merged - before.merged).toBe(12);
    expect(settled[3]).toMatchObject({ status: "rejected", reason: expect.objectContaining({ name: "LostLease" }) });
    for (const [i, r] of settled.entries()) {
      if (i === 3) continue;
      const task = (r as PromiseFulfilledResult<Awaited<ReturnType<SQLiteStore["complete"]>>>).value;
      expect(task.id).toBe(tasks[i]!.id);
      expect(task.status).toBe(i === 5 ? "canceled" : "succeeded");
      expect(task.result).toEqual(i === 5 ? null : { r: i });
      expect(await store.get(task.id)).toEqual(task);
    }
    expect((await store.get(tasks[3]!.id))?.status).toBe("running");
  });

  it("a write the database refuses fails only its caller: the run is undone and each write runs on its own", async () => {
    const store = openStore();
    const tasks = await claimed(store, 8);
    await write(store, `CREATE TRIGGER refuse_one BEFORE UPDATE ON cairnq_tasks WHEN NEW.id = '${tasks[2]!.id}' AND NEW.status = 'succeeded' BEGIN SELECT RAISE(ABORT, 'refused complete'); END`);
    const before = statsOf(store);
    const settled = await Promise.allSettled(tasks.map((t) => store.complete({ taskId: t.id, workerId: "w", attempt: t.attempt, result: null })));
    const after = statsOf(store);
    expect(after.mergeFallbacks - before.mergeFallbacks).toBe(1);
    expect(settled[2]).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: "refused complete" }) });
    expect(settled.filter((r) => r.status === "fulfilled")).toHaveLength(7);
    expect((await store.get(tasks[2]!.id))?.status).toBe("running");
    expect((await store.stats()).default).toMatchObject({ succeeded: 7, running: 1 });
  });

  it("two writes of one task in one run: each runs on its own, in order, as it would alone", async () => {
    const store = openStore();
    const [a, b] = await claimed(store, 2);
    const settled = await Promise.allSettled([
      store.complete({ taskId: a!.id, workerId: "w", result: 1 }),
      store.complete({ taskId: b!.id, workerId: "w", result: 2 }),
      store.complete({ taskId: a!.id, workerId: "w", result: 3 }),
    ]);
    expect(settled.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({ name: "LostLease" });
    expect((await store.get(a!.id))?.result).toBe(1);
  });
});

describe("a claim's transaction shares its commit with the writes queued around it (§13)", () => {
  /** Holds the file's write turn until the returned function is called, so that jobs queue up behind it in order. */
  async function holdTurn(store: SQLiteStore): Promise<() => Promise<void>> {
    await store.connect();
    const c = dialectOf(store).connection;
    let release!: () => void;
    const held = c.queue.exclusive(c, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    return async () => {
      release();
      await held;
    };
  }

  it("writes before and after a claim commit with it in one transaction; each caller gets its own outcome", async () => {
    const store = openStore();
    await Promise.all(Array.from({ length: 5 }, (_, i) => store.submit({ name: "n", payload: { i } })));
    const [a, b] = await store.claim({ queues: ["default"], workerId: "w", limit: 2 });
    const release = await holdTurn(store);
    const before = statsOf(store);
    const done = Promise.all([
      store.complete({ taskId: a!.id, workerId: "w", result: "a" }),
      store.claim({ queues: ["default"], workerId: "w2", limit: 2, probe: false }),
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    const late = store.complete({ taskId: b!.id, workerId: "w", result: "b" });
    await release();
    const [[doneA, claimed], doneB] = await Promise.all([done, late]);
    const after = statsOf(store);
    expect(after.fusedClaims - before.fusedClaims).toBe(1);
    expect(after.groupCommits - before.groupCommits).toBe(1);
    expect(doneA).toMatchObject({ id: a!.id, status: "succeeded", result: "a" });
    expect(doneB).toMatchObject({ id: b!.id, status: "succeeded", result: "b" });
    expect(claimed.map((t) => t.worker_id)).toEqual(["w2", "w2"]);
    for (const t of [doneA, doneB, ...claimed]) expect(await store.get(t.id)).toEqual(t);
  });

  it("a settlement and a claim issued microtasks after it in the same turn share one commit (a worker's slot freeing)", async () => {
    const store = openStore();
    await Promise.all(Array.from({ length: 2 }, (_, i) => store.submit({ name: "n", payload: { i } })));
    const [a] = await store.claim({ queues: ["default"], workerId: "w", limit: 1 });
    const before = statsOf(store);
    const completed = store.complete({ taskId: a!.id, workerId: "w", result: "a" });
    // What lies between a handler's end and the worker's next claim: a chain of awaits, no new turn.
    for (let i = 0; i < 20; i++) await Promise.resolve();
    const claimed = store.claim({ queues: ["default"], workerId: "w", limit: 1 });
    const [done, [next]] = await Promise.all([completed, claimed]);
    const after = statsOf(store);
    expect(after.fusedClaims - before.fusedClaims).toBe(1);
    expect(after.transactions - before.transactions).toBe(1);
    expect(done).toMatchObject({ id: a!.id, status: "succeeded", result: "a" });
    expect(next).toMatchObject({ status: "running", worker_id: "w", attempt: 1 });
    expect(await store.get(a!.id)).toEqual(done);
  });

  it("a claim that fails inside the shared transaction fails alone; the writes around it commit", async () => {
    const store = openStore();
    await Promise.all(Array.from({ length: 3 }, (_, i) => store.submit({ name: "n", payload: { i } })));
    const [a] = await store.claim({ queues: ["default"], workerId: "w", limit: 1 });
    await write(store, "CREATE TRIGGER refuse_claim BEFORE UPDATE ON cairnq_tasks WHEN NEW.worker_id = 'w2' BEGIN SELECT RAISE(ABORT, 'refused claim'); END");
    const release = await holdTurn(store);
    const before = statsOf(store);
    const done = Promise.allSettled([
      store.complete({ taskId: a!.id, workerId: "w", result: "a" }),
      store.claim({ queues: ["default"], workerId: "w2", limit: 2, probe: false }),
    ]);
    await release();
    const [completed, claim] = await done;
    expect(statsOf(store).fusedClaims - before.fusedClaims).toBe(1);
    expect(completed).toMatchObject({ status: "fulfilled", value: { status: "succeeded", result: "a" } });
    expect(claim).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: "refused claim" }) });
    expect((await store.stats()).default).toMatchObject({ succeeded: 1, queued: 2, running: 0 });
  });
});

describe("the write queue under an app's fake timers", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("writes still run while vi.useFakeTimers() (which fakes setImmediate) is on: the queue's turns do not wait on the faked global", async () => {
    const store = openStore();
    await store.connect();
    vi.useFakeTimers();
    const task = await store.submit({ name: "n", payload: { i: 1 } });
    const [claimed] = await store.claim({ queues: ["default"], workerId: "w", limit: 1 });
    expect(claimed?.id).toBe(task.id);
    const done = await store.complete({ taskId: task.id, workerId: "w", result: "ok" });
    expect(done).toMatchObject({ id: task.id, status: "succeeded", result: "ok" });
    expect(await store.get(task.id)).toEqual(done);
  });
});
