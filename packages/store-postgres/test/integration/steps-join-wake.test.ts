/**
 * A join parking while its last child settles: the wake after the child's
 * settlement must not be lost between the park's read of the children and
 * its commit (READ COMMITTED lets the wake's UPDATE look at the parent row
 * before the park committed its `waiting` entry). The park's commit is held
 * back by another transaction locking the parent row, so the interleaving is
 * the same on every run.
 */
import { sql } from "kysely";
import { expect, it } from "vitest";
import { client, openStore, pgDsn, q, schemaName, until } from "../helpers.js";

const W1 = "worker_join_parent";
const W2 = "worker_join_child";

function claimInput(workerId: string, name: string) {
  return { queues: ["default"], workerId, probe: false, draws: (_so: readonly unknown[], index: number) => (index === 0 ? { names: [name], limit: 1, last: true } : null) };
}

/** Backends waiting for a lock that backend `pid` holds. */
async function blockedBy(pid: number): Promise<number> {
  const [row] = await q<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [pid]);
  return Number(row?.n ?? 0);
}

/** Backends of this database waiting for a lock (a row lock or the step lock). */
async function waitingForLocks(): Promise<number> {
  const [row] = await q<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
  return Number(row?.n ?? 0);
}

/** A store on a fresh schema with a parent task claimed by W1 and one child it spawned (step `kid`). */
async function parentWithChild(prefix: string) {
  const schema = schemaName(prefix);
  const store = openStore(pgDsn(), { schema });
  await store.connect();
  await store.submit({ name: "parent" });
  const [parent] = await store.claim(claimInput(W1, "parent"));
  if (parent === undefined) throw new Error("the parent was not claimed");
  const owned = { taskId: parent.id, workerId: W1, attempt: parent.attempt };
  const childId = await store.spawnStep({ ...owned, name: "kid", seq: 1, child: { name: "child" } });
  return { schema, store, parent, owned, childId };
}

it("a child settled while its parent's join parks wakes the join: the wake waits for the park to commit", async () => {
  const { schema, store, parent, owned, childId } = await parentWithChild("cq_join_wake");
  const [child] = await store.claim(claimInput(W2, "child"));
  expect(child?.id).toBe(childId);

  // Another transaction locks the parent row: the park reads the child (running) and then waits at PARK.
  const blocker = await client();
  await blocker.query("BEGIN");
  await blocker.query(`SELECT id FROM "${schema}".cairnq_tasks WHERE id = $1 FOR UPDATE`, [parent.id]);
  const parking = store.parkStep({ ...owned, name: "all", kind: "join", seq: 2, childIds: [childId], delayMs: 30_000 });
  expect(await until(async () => (await waitingForLocks()) >= 1)).toBe(true);

  // The child settles, and its worker wakes the parent's join while the park is still in flight.
  await store.complete({ taskId: childId, workerId: W2, attempt: child?.attempt ?? 1, result: "done" });
  let answered = false;
  const waking = store.wakeJoin(parent.id).finally(() => (answered = true));
  // The wake either waits for the park (two backends waiting) or answers at once, having seen the parent running.
  expect(await until(async () => answered || (await waitingForLocks()) >= 2)).toBe(true);
  await blocker.query("COMMIT");

  expect(await parking).toEqual({ kind: "parked", status: "queued" });
  expect(await waking).toBe(true);
  const [entry] = (await store.steps(parent.id)).filter((e) => e.name === "all");
  const row = await store.get(parent.id);
  // Due now, not at the join's re-check 30 s later.
  expect(row?.status).toBe("queued");
  expect(row?.run_at_ms).toBeLessThan(entry?.wakeAtMs ?? 0);
});

it("a cancel of a parent and then of its child in the caller's transaction (withTransaction) while the parent's join parks: no deadlock", async () => {
  const { store, parent, owned, childId } = await parentWithChild("cq_join_wake_trx");

  let parking: Promise<string> | null = null;
  const settled = (p: Promise<unknown>): Promise<string> =>
    p.then(
      (value) => JSON.stringify(value),
      (err: unknown) => String(err),
    );
  const caller = settled(
    store.db.transaction().execute(async (trx) => {
      const view = store.withTransaction(trx);
      const callerPid = Number((await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)).rows[0]?.pid ?? -1);
      // The caller's transaction flags the running parent (its row is locked until the caller commits) …
      expect(await view.cancel(parent.id)).toMatchObject({ status: "running" });
      // … the parent's join parks meanwhile: it takes the parent's step lock, reads the child queued and waits at PARK …
      parking = settled(store.parkStep({ ...owned, name: "all", kind: "join", seq: 2, childIds: [childId], delayMs: 30_000 }));
      expect(await until(async () => (await blockedBy(callerPid)) >= 1)).toBe(true);
      // … and the caller cancels the queued child, whose join wake runs in the caller's transaction.
      return (await view.cancel(childId))?.status;
    }),
  );
  const outcome = await caller;
  expect({ caller: outcome, park: await (parking ?? Promise.resolve("not started")) }).toEqual({
    caller: JSON.stringify("canceled"),
    park: JSON.stringify({ kind: "parked", status: "canceled" }),
  });
  expect(await store.get(parent.id)).toMatchObject({ status: "canceled" });
});
