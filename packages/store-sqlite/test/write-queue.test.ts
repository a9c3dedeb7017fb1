import { CompiledQuery } from "kysely";
import { describe, expect, it } from "vitest";
import type { SQLiteDialect, SQLiteStore } from "../src/index.js";
import type { WriteQueueStats } from "../src/write-queue.js";
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
