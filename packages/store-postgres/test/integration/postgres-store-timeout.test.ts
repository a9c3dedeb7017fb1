/**
 * `storeQueryTimeoutMs` bounds CairnQ's own statements, and only those: a
 * settlement stuck behind a row lock fails at the bound (so a worker on a
 * dead path gives up quickly), while a `completeIn` body's own long
 * statement and a keyed submit waiting for its key lock run to the end.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { admin, openStore, until } from "../helpers.js";

const BOUND_MS = 400;
const W = "worker_timeout";

describe("the store's own statements have their own, shorter bound", () => {
  it("a settlement blocked past storeQueryTimeoutMs fails at it; a completeIn body's long statement and a key lock wait do not", async () => {
    const store = openStore(undefined, { listen: false, timeouts: { storeQueryTimeoutMs: BOUND_MS } });
    await store.connect();
    const schema = store.schema!;

    // A row lock held elsewhere: the complete waits on it, and gives up at the bound.
    const held = await store.submit({ name: "blocked" });
    const [claimed] = await store.claim({ queues: ["default"], workerId: W, leaseMs: 60_000 });
    expect(claimed?.id).toBe(held.id);
    const locker = await admin();
    await locker.query("BEGIN");
    await locker.query(`SELECT 1 FROM "${schema}".cairnq_tasks WHERE id = $1 FOR UPDATE`, [held.id]);
    const started = performance.now();
    const failure = await store.complete({ taskId: held.id, workerId: W, result: null }).then(
      () => null,
      (error: unknown) => error as Error,
    );
    const waitedMs = performance.now() - started;
    await locker.query("ROLLBACK");
    expect(failure?.message).toBe("Query read timeout");
    expect(waitedMs).toBeGreaterThanOrEqual(BOUND_MS - 50);
    expect(waitedMs).toBeLessThan(BOUND_MS + 2_000);
    // Outcome unknown, as after any timeout: the server kept the statement waiting and applied it once the lock was
    // released (the guard makes the write land at most once). The store goes on, on a fresh connection.
    expect(await until(async () => (await store.get(held.id))?.status === "succeeded")).toBe(true);

    // A completeIn body's own statement is the application's: bounded by queryTimeoutMs only.
    await store.submit({ name: "long-body" });
    const [body] = await store.claim({ queues: ["default"], workerId: W, leaseMs: 60_000 });
    const { task } = await store.completeIn({ taskId: body!.id, workerId: W, attempt: body!.attempt }, async (trx) => {
      await sql`SELECT pg_sleep(${(BOUND_MS * 2) / 1000})`.execute(trx);
      return { slept: true };
    });
    expect(task.status).toBe("succeeded");

    // A keyed submit waits for the key lock as long as its holder keeps it (here: twice the bound).
    await locker.query("BEGIN");
    await locker.query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))", ["long-held-key"]);
    const release = setTimeout(() => void locker.query("COMMIT"), BOUND_MS * 2);
    const keyed = await store.submit({ name: "keyed", key: "long-held-key" });
    clearTimeout(release);
    expect(keyed.status).toBe("queued");
  });
});
