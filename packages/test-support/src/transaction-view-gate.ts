/**
 * The backpressure gate inside a caller's transaction (`withTransaction`),
 * shared by the SQLite, Postgres and MySQL tests: it checks the queue's depth
 * once and never waits, since waiting would hold the caller's transaction open
 * while workers try to drain the queue.
 */
import type { QueueDepthGate, Task, TaskStore } from "@cairnq/protocol";
import { QueueFull } from "@cairnq/protocol";
import { BackpressureGateCore } from "@cairnq/protocol/sdk";
import { expect } from "vitest";

/** A gate of limit 2 on queue `gated` whose every sleep fails the test: a submit in a transaction must never wait. */
function gateThatMustNotSleep(): BackpressureGateCore {
  return new BackpressureGateCore(
    { maxQueueDepth: { gated: 2 }, maxQueueWaitMs: 600_000 },
    { sleep: (ms) => Promise.reject(new Error(`the gate slept ${ms} ms while the caller's transaction stayed open`)) },
  );
}

/** The gates a store may carry: the client's own, and any other (a wrapper without `limitFor`). */
export const TRANSACTION_VIEW_GATES: [string, (core: BackpressureGateCore) => QueueDepthGate][] = [
  ["the client's gate (BackpressureGateCore)", (core) => core],
  ["any other gate (here a wrapper without limitFor)", (core) => ({ acquire: (queue, store) => core.acquire(queue, store) })],
];

/** A store whose gate the scenario sets. */
export type GatedStore = TaskStore & { queueDepthGate: QueueDepthGate | null };

/**
 * Runs `fn` on a transaction view of the store inside one of the app's own
 * transactions (commits when `fn` resolves, rolls back when it throws).
 */
export type InViewTransaction = <T>(fn: (view: TaskStore) => Promise<T>) => Promise<T>;

/**
 * Asserts the rule on `store` (fresh, connected) with the gate `wrap` makes: a
 * full queue rejects at once with `QueueFull` saying why, counting the
 * transaction's own submits, and nothing is written; other queues are not
 * gated, and a submit with room commits.
 *
 * @example
 * it.each(TRANSACTION_VIEW_GATES)("%s: …", (_label, wrap) => runTransactionViewGate(store, wrap, (fn) => store.db.transaction().execute((trx) => fn(store.withTransaction(trx)))));
 */
export async function runTransactionViewGate(store: GatedStore, wrap: (core: BackpressureGateCore) => QueueDepthGate, inTransaction: InViewTransaction): Promise<void> {
  store.queueDepthGate = wrap(gateThatMustNotSleep());
  await store.submit({ name: "outside", queue: "gated" });

  let inside: string | null = null;
  const failed = await inTransaction(async (view) => {
    inside = (await view.submit({ name: "inside", queue: "gated" })).id; // room for one more
    await view.submit({ name: "inside", queue: "gated" }); // the first one, uncommitted, filled it
  }).catch((err: unknown) => err);
  expect(failed).toBeInstanceOf(QueueFull);
  expect(failed).toMatchObject({ queue: "gated", maxDepth: 2, waitedMs: 0 });
  expect((failed as Error).message).toMatch(/inside withTransaction a submit does not wait for room/);
  expect(inside).not.toBeNull();
  expect((await store.list({ queue: "gated" })).map((t) => t.name)).toEqual(["outside"]);

  // Other queues are not gated, and a submit with room commits.
  const ok: Task = await inTransaction((view) => view.submit({ name: "inside", queue: "gated" }));
  const free: Task = await inTransaction((view) => view.submit({ name: "free", queue: "free" }));
  expect([(await store.get(ok.id))?.status, (await store.get(free.id))?.status]).toEqual(["queued", "queued"]);
}
