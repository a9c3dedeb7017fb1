/**
 * The write combiner on a real Postgres: concurrent writes of one store share
 * multi-row statements, and every caller still gets exactly what its own
 * statement would have given — its own row, its own error, `LostLease` for
 * its own task — matched by id.
 */
import { Kysely, PostgresDialect } from "kysely";
import type { Task } from "@cairnq/protocol";
import { LostLease } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import type { PostgresStore, PostgresStoreOptions } from "../../src/index.js";
import { freshSchema, openStore, poolFor, q } from "../helpers.js";

const W = "worker_combiner";

/** A store over a Kysely instance that records every statement it sends. */
async function loggedStore(options: PostgresStoreOptions = {}): Promise<{ store: PostgresStore; sql: string[]; schema: string }> {
  const schema = await freshSchema("cq_comb");
  const sql: string[] = [];
  const db = new Kysely<Record<string, never>>({
    dialect: new PostgresDialect({ pool: poolFor(schema) }),
    log: (event) => {
      if (event.level === "query") sql.push(event.query.sql);
    },
  });
  const store = openStore(db, { schema, listen: false, ...options });
  await store.connect();
  sql.length = 0;
  return { store, sql, schema };
}

/** Whether `sql` is `verb`: a transition that can end a task is its UPDATE in a CTE (it NOTIFYs the rows it ended: postgres-done-row.ts). */
const is = (sql: string, verb: "UPDATE" | "INSERT"): boolean => sql.startsWith(verb) || (verb === "UPDATE" && sql.startsWith("WITH cairnq_settled AS (UPDATE"));
const multiRow = (sql: readonly string[], verb: "UPDATE" | "INSERT"): string[] => sql.filter((s) => is(s, verb) && s.includes("unnest("));

async function claimAll(store: PostgresStore, n: number): Promise<Task[]> {
  const claimed = await store.claim({ queues: ["default"], workerId: W, limit: n });
  expect(claimed).toHaveLength(n);
  return claimed;
}

describe("write combiner (Postgres)", () => {
  it("concurrent submits share one multi-row INSERT; each caller gets the row with its own id and payload", async () => {
    const { store, sql } = await loggedStore();
    const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => store.submit({ name: "n", payload: { i }, priority: i % 3 })));
    expect(multiRow(sql, "INSERT")).toHaveLength(1);
    tasks.forEach((task, i) => {
      expect(task).toMatchObject({ name: "n", payload: { i }, priority: i % 3, status: "queued" });
      expect(task.root_id).toBe(task.id);
    });
    expect(new Set(tasks.map((t) => t.id)).size).toBe(20);
    // What each caller got is what the database holds for that id.
    for (const task of tasks) expect(await store.get(task.id)).toEqual(task);
  });

  it("settlements past the combiner's general bound of 128 rows share one statement: Postgres combines up to 512", async () => {
    const { store, sql } = await loggedStore();
    expect(store.dialect.combining?.maxRows).toBe(512);
    await Promise.all(Array.from({ length: 300 }, (_, i) => store.submit({ name: "n", payload: { i } })));
    const claimed = await claimAll(store, 300);
    sql.length = 0;
    const settled = await Promise.all(claimed.map((t) => store.complete({ taskId: t.id, workerId: W, attempt: t.attempt, result: null })));
    expect(settled.every((t) => t.status === "succeeded")).toBe(true);
    expect(multiRow(sql, "UPDATE")).toHaveLength(1);
    // A bound given in `combine` still wins.
    const bounded = await loggedStore({ combine: { maxRows: 100 } });
    await Promise.all(Array.from({ length: 300 }, (_, i) => bounded.store.submit({ name: "n", payload: { i } })));
    const more = await claimAll(bounded.store, 300);
    bounded.sql.length = 0;
    await Promise.all(more.map((t) => bounded.store.complete({ taskId: t.id, workerId: W, attempt: t.attempt, result: null })));
    expect(multiRow(bounded.sql, "UPDATE")).toHaveLength(3);
  });

  it("values a multi-row statement sends as array literals come back exactly: quotes, backslashes, braces, commas, NULL-like text, unicode", async () => {
    const { store, sql } = await loggedStore();
    const tricky: unknown[] = ['say "hi"', "back\\slash \\\"", "{a,b}", "NULL", "", " spaced ", "ünïcödé ✓ 🎉", { nested: 'x"y\\z', list: [1, "}", null] }, 12.5, true, null];
    const names = ['n"1', "n\\2", "n,{3}"];
    const submitted = await Promise.all(tricky.map((payload, i) => store.submit({ name: names[i % names.length] as string, payload: { v: payload }, metadata: { note: `m"${i}\\` } })));
    expect(multiRow(sql, "INSERT")).toHaveLength(1);
    for (const [i, task] of submitted.entries()) {
      expect(task.payload).toEqual({ v: tricky[i] });
      expect(await store.get(task.id)).toEqual(task);
      expect(task.metadata).toEqual({ note: `m"${i}\\` });
    }
    const claimed = await claimAll(store, tricky.length);
    sql.length = 0;
    const byId = new Map(submitted.map((task, i) => [task.id, tricky[i]]));
    const settled = await Promise.all(claimed.map((t) => store.completeRef({ taskId: t.id, workerId: W, attempt: t.attempt, result: byId.get(t.id) })));
    expect(multiRow(sql, "UPDATE")).toHaveLength(1);
    expect(settled.every((ref) => ref.status === "succeeded")).toBe(true);
    for (const [id, result] of byId) expect((await store.get(id))?.result).toEqual(result ?? null);
  });

  it("one bad row among good ones: only its caller fails, with the error its own statement gives; the others are inserted", async () => {
    const { store, sql, schema } = await loggedStore();
    // A row the database refuses although it passes the SDK's validation (here a CHECK of this test's own).
    await q(`ALTER TABLE "${schema}".cairnq_tasks ADD CONSTRAINT no_poison CHECK (name <> 'poison')`);
    const results = await Promise.allSettled([
      ...Array.from({ length: 5 }, (_, i) => store.submit({ name: "n", payload: { i } })),
      store.submit({ name: "poison" }),
      ...Array.from({ length: 5 }, (_, i) => store.submit({ name: "n", payload: { i: i + 5 } })),
    ]);
    expect(multiRow(sql, "INSERT").length).toBeGreaterThanOrEqual(1);
    const single = openStore(poolFor(schema), { schema, listen: false, combine: false });
    const alone = await single.submit({ name: "poison" }).then(
      () => null,
      (error: unknown) => error as { code?: string; constraint?: string },
    );
    expect(alone).toMatchObject({ code: "23514", constraint: "no_poison" });
    const rejected = results.flatMap((r, i) => (r.status === "rejected" ? [{ i, error: r.reason as { code?: string; constraint?: string } }] : []));
    expect(rejected.map((r) => r.i)).toEqual([5]);
    expect(rejected[0]?.error).toMatchObject({ code: alone?.code, constraint: alone?.constraint });
    const inserted = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect(inserted.map((t) => (t.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await store.stats("default")).toMatchObject({ default: { queued: 10 } });
  });

  it("one bad settlement among good ones: only its caller fails; the other tasks complete", async () => {
    const { store, schema } = await loggedStore();
    await q(`ALTER TABLE "${schema}".cairnq_tasks ADD CONSTRAINT no_poison_result CHECK (result IS NULL OR NOT result ? 'poison')`);
    for (let i = 0; i < 6; i++) await store.submit({ name: "n", payload: { i } });
    const claimed = await claimAll(store, 6);
    const poisoned = claimed[3] as Task;
    const results = await Promise.allSettled(
      claimed.map((task) => store.complete({ taskId: task.id, workerId: W, result: task === poisoned ? { poison: true } : { ok: task.id } })),
    );
    results.forEach((result, i) => {
      const task = claimed[i] as Task;
      if (task === poisoned) expect(result).toMatchObject({ status: "rejected", reason: { code: "23514", constraint: "no_poison_result" } });
      else expect(result).toMatchObject({ status: "fulfilled", value: { id: task.id, status: "succeeded", result: { ok: task.id } } });
    });
    expect(await store.get(poisoned.id)).toMatchObject({ status: "running", worker_id: W });
  });

  it("a lost lease among owned rows: only that caller gets LostLease (its own task id); the others complete", async () => {
    const { store, sql } = await loggedStore();
    for (let i = 0; i < 6; i++) await store.submit({ name: "n", payload: { i } });
    const claimed = await claimAll(store, 6);
    const lost = claimed[2] as Task;
    const fenced = claimed[4] as Task;
    await q(`UPDATE "${schemaOf(store)}".cairnq_tasks SET worker_id = 'someone_else' WHERE id = $1`, [lost.id]);
    sql.length = 0;
    const results = await Promise.allSettled(
      claimed.map((task) =>
        store.complete({ taskId: task.id, workerId: W, result: { id: task.id }, attempt: task === fenced ? task.attempt + 1 : task.attempt }),
      ),
    );
    expect(multiRow(sql, "UPDATE")).toHaveLength(1);
    results.forEach((result, i) => {
      const task = claimed[i] as Task;
      if (task === lost || task === fenced) {
        expect(result.status).toBe("rejected");
        const error = (result as PromiseRejectedResult).reason as LostLease;
        expect(error).toBeInstanceOf(LostLease);
        expect(error.taskId).toBe(task.id);
      } else {
        expect(result).toMatchObject({ status: "fulfilled", value: { id: task.id, status: "succeeded", result: { id: task.id } } });
      }
    });
    expect(await store.get(lost.id)).toMatchObject({ status: "running", worker_id: "someone_else" });
    expect(await store.get(fenced.id)).toMatchObject({ status: "running", worker_id: W });
  });

  it("results are matched by id: mixed settlements of one flush each get their own row, cancel still wins per row", async () => {
    const { store } = await loggedStore();
    for (let i = 0; i < 8; i++) await store.submit({ name: "n", payload: { i }, maxAttempts: 2 });
    const claimed = await claimAll(store, 8);
    const flagged = claimed[1] as Task;
    await store.cancel(flagged.id);
    // Reverse order, so that position in the statement and position in the call list differ.
    const settled = await Promise.all(
      [...claimed].reverse().map((task, i) =>
        i % 2 === 0
          ? store.complete({ taskId: task.id, workerId: W, result: { mine: task.id } })
          : store.fail({ taskId: task.id, workerId: W, error: { code: `boom-${task.id}` }, retryable: true }),
      ),
    );
    [...claimed].reverse().forEach((task, i) => {
      const row = settled[i] as Task;
      expect(row.id).toBe(task.id);
      if (task === flagged) expect(row.status).toBe("canceled");
      else if (i % 2 === 0) expect(row).toMatchObject({ status: "succeeded", result: { mine: task.id } });
      else expect(row).toMatchObject({ status: "queued", error: { code: `boom-${task.id}` }, worker_id: null });
    });
  });

  it("a lone settlement is its own single-row statement (attempt fence included); a burst shares one statement, each caller its own row or LostLease", async () => {
    const { store, sql } = await loggedStore();
    for (let i = 0; i < 4; i++) await store.submit({ name: "n", payload: { i } });
    const claimed = await claimAll(store, 4);
    const [a, b, c, d] = claimed as [Task, Task, Task, Task];
    sql.length = 0;
    // Alone, with a stale attempt: its own single-row statement, which the fence refuses.
    await expect(store.complete({ taskId: a.id, workerId: W, attempt: a.attempt + 1, result: null })).rejects.toMatchObject({ taskId: a.id });
    expect(sql.filter((s) => is(s, "UPDATE"))).toHaveLength(1);
    expect(multiRow(sql, "UPDATE")).toHaveLength(0);
    expect(await store.get(a.id)).toMatchObject({ status: "running", worker_id: W });
    sql.length = 0;
    // The three completes of one burst share one multi-row statement; completeRef has a combiner of its own: alone there.
    const results = await Promise.allSettled([
      store.complete({ taskId: a.id, workerId: W, result: { mine: a.id } }),
      store.complete({ taskId: b.id, workerId: W, result: { mine: b.id } }),
      store.complete({ taskId: c.id, workerId: W, attempt: c.attempt + 1, result: { mine: c.id } }),
      store.completeRef({ taskId: d.id, workerId: W, result: { mine: d.id } }),
    ]);
    const updates = sql.filter((s) => is(s, "UPDATE"));
    expect(updates).toHaveLength(2);
    expect(updates.filter((s) => !s.includes("unnest("))).toHaveLength(1);
    expect(multiRow(sql, "UPDATE")).toHaveLength(1);
    expect(results[0]).toMatchObject({ status: "fulfilled", value: { id: a.id, status: "succeeded", result: { mine: a.id } } });
    expect(results[1]).toMatchObject({ status: "fulfilled", value: { id: b.id, status: "succeeded", result: { mine: b.id } } });
    expect(results[2].status).toBe("rejected");
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(LostLease);
    expect(((results[2] as PromiseRejectedResult).reason as LostLease).taskId).toBe(c.id);
    expect(results[3]).toEqual({ status: "fulfilled", value: { id: d.id, status: "succeeded" } });
    expect(await store.get(c.id)).toMatchObject({ status: "running", worker_id: W });
    expect(await store.get(d.id)).toMatchObject({ status: "succeeded", result: { mine: d.id } });
  });

  it("two writes for one task in one turn never share a statement: the second sees the first's outcome", async () => {
    const { store } = await loggedStore();
    const task = await store.submit({ name: "n" });
    await claimAll(store, 1);
    const [first, second] = await Promise.allSettled([
      store.complete({ taskId: task.id, workerId: W, result: { n: 1 } }),
      store.fail({ taskId: task.id, workerId: W, error: { code: "late" } }),
    ]);
    expect(first).toMatchObject({ status: "fulfilled", value: { status: "succeeded", result: { n: 1 } } });
    expect(second.status).toBe("rejected");
    expect((second as PromiseRejectedResult).reason).toBeInstanceOf(LostLease);
  });

  it("two submits with the same key at once keep the key lock: one task, both callers get it", async () => {
    const { store, sql } = await loggedStore();
    const [a, b] = await Promise.all([store.submit({ name: "n", key: "k1" }), store.submit({ name: "n", key: "k1" })]);
    expect(a.id).toBe(b.id);
    expect(sql.filter((s) => s.includes("advisory_xact_lock")).length).toBeGreaterThanOrEqual(2);
    expect((await store.list()).length).toBe(1);
  });

  it("heartbeats and progress reports combine too, each renewing only its own owned row", async () => {
    const { store, sql } = await loggedStore();
    for (let i = 0; i < 4; i++) await store.submit({ name: "n" });
    const claimed = await claimAll(store, 4);
    sql.length = 0;
    const beats = await Promise.all(claimed.map((task) => store.heartbeat({ taskId: task.id, workerId: W, leaseMs: 60_000 })));
    const reports = await Promise.all(claimed.map((task, i) => store.progress({ taskId: task.id, workerId: W, progress: i / 4, message: `m${i}` })));
    expect(multiRow(sql, "UPDATE")).toHaveLength(2);
    claimed.forEach((task, i) => {
      expect(beats[i]?.id).toBe(task.id);
      expect(beats[i]!.lease_until_ms!).toBeGreaterThan(task.lease_until_ms!);
      expect(reports[i]).toMatchObject({ id: task.id, progress: i / 4, message: `m${i}` });
    });
  });

  for (const combine of [true, false]) {
    it(`completeRef (combine: ${String(combine)}) writes what complete writes and answers { id, status }: succeeded, canceled when flagged, LostLease for another worker's task`, async () => {
      const { store, sql } = await loggedStore(combine ? {} : { combine: false });
      expect(store.capabilities.completeRef).toBe(true);
      for (let i = 0; i < 6; i++) await store.submit({ name: "n", payload: { i } });
      const claimed = await claimAll(store, 6);
      const flagged = claimed[2] as Task;
      const foreign = claimed[4] as Task;
      await store.cancel(flagged.id);
      sql.length = 0;
      const results = await Promise.allSettled(
        claimed.map((task) => store.completeRef({ taskId: task.id, workerId: task === foreign ? "someone_else" : W, attempt: task.attempt, result: { r: task.id } })),
      );
      const batched = multiRow(sql, "UPDATE");
      if (combine) {
        expect(batched).toHaveLength(1);
        // Answers id and status only, not the row; and sends no done rows (single-row statements only).
        expect(batched[0]).toMatch(/^UPDATE .*RETURNING id, status$/);
      } else {
        expect(batched).toHaveLength(0);
      }
      for (const [i, task] of claimed.entries()) {
        const outcome = results[i] as PromiseSettledResult<unknown>;
        if (task === foreign) {
          expect(outcome.status).toBe("rejected");
          expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(LostLease);
          expect(await store.get(task.id)).toMatchObject({ status: "running", worker_id: W });
          continue;
        }
        const status = task === flagged ? "canceled" : "succeeded";
        expect(outcome).toEqual({ status: "fulfilled", value: { id: task.id, status } });
        const row = await store.get(task.id);
        expect(row).toMatchObject({ status, lease_until_ms: null, worker_id: W });
        expect(row?.completed_at_ms).not.toBeNull();
        // T7: a flagged task keeps its result and progress; T6 stores the result, progress 1.
        if (task === flagged) expect(row).toMatchObject({ result: null, progress: null });
        else expect(row).toMatchObject({ result: { r: task.id }, progress: 1 });
      }
    });
  }

  it("with combine: false every write is its own statement", async () => {
    const { store, sql } = await loggedStore({ combine: false });
    await Promise.all(Array.from({ length: 5 }, () => store.submit({ name: "n" })));
    expect(multiRow(sql, "INSERT")).toHaveLength(0);
    expect(sql.filter((s) => s.startsWith("INSERT"))).toHaveLength(5);
  });
});

function schemaOf(store: PostgresStore): string {
  const schema = store.schema;
  if (schema === null) throw new Error("the test stores set a schema");
  return schema;
}
