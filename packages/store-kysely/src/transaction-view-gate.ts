import type { QueueDepthGate, TaskStore } from "@cairnq/protocol";
import { QueueFull } from "@cairnq/protocol";

/**
 * The backpressure gate (§5.6) of a transaction view: a submit inside the
 * caller's transaction checks the queue's depth once and never waits for
 * room. Waiting would hold the caller's transaction open the whole time — on
 * SQLite that is the database's write lock, so no worker in any process could
 * drain the queue it waits on; on MySQL's REPEATABLE READ the snapshot never
 * sees the room — so a full queue rejects at once with `QueueFull` (nothing
 * written), and the caller retries the transaction later or submits after
 * the commit. Same rule on every backend.
 *
 * The gate's depth limit is read from `limitFor(queue)` when the gate has one
 * (`BackpressureGateCore`, which the client and the worker install); any
 * other gate runs as it is, over a store whose `queueDepth` rejects when it
 * finds no room, so it cannot sleep either.
 */
class TransactionViewGate implements QueueDepthGate {
  readonly #gate: QueueDepthGate;

  constructor(gate: QueueDepthGate) {
    this.#gate = gate;
  }

  async acquire(queue: string, store: TaskStore): Promise<void> {
    const limitFor = (this.#gate as { limitFor?: unknown }).limitFor;
    if (typeof limitFor === "function") {
      const maxDepth = (limitFor as (queue: string) => unknown).call(this.#gate, queue);
      if (typeof maxDepth !== "number") return;
      await checkOnce(store, queue, maxDepth);
      return;
    }
    const once = new Proxy(store, {
      get: (target, prop) => {
        if (prop === "queueDepth") return (q: string, maxDepth: number) => checkOnce(target, q, maxDepth);
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    await this.#gate.acquire(queue, once);
  }
}

/** The queue's headroom read through the view (the caller's own uncommitted submits count); `QueueFull` when none. */
async function checkOnce(store: TaskStore, queue: string, maxDepth: number): Promise<number> {
  const headroom = await store.queueDepth(queue, maxDepth);
  if (headroom > 0) return headroom;
  throw new QueueFull(queue, maxDepth, 0, {
    message:
      `queue '${queue}' is full (${maxDepth} queued tasks, the maxQueueDepth limit), so nothing was submitted; inside withTransaction ` +
      "a submit does not wait for room, because waiting would hold your transaction (on SQLite, the database's write lock) open while " +
      `workers try to drain the queue; retry the transaction later, submit after it commits, or add workers for '${queue}'`,
  });
}

/**
 * The gate a transaction view installs: `gate`'s limits, checked once per
 * submit without waiting (see {@link TransactionViewGate}); `null` for none.
 *
 * @example
 * ```ts
 * this.queueDepthGate = transactionViewGate(store.queueDepthGate);
 * ```
 */
export function transactionViewGate(gate: QueueDepthGate | null | undefined): QueueDepthGate | null {
  return gate === null || gate === undefined ? null : new TransactionViewGate(gate);
}
