import type { QueueDepthGate, TaskStore } from "@cairnq/protocol";
import { requireRoomNow } from "@cairnq/protocol/sdk";

/**
 * The backpressure gate (§5.6) of a transaction view: a submit inside the
 * caller's transaction checks the queue's depth once and never waits for
 * room, as `requireRoomNow` in `@cairnq/protocol` says why. Same rule on
 * every backend.
 *
 * A gate with `acquireOnce` (`BackpressureGateCore`, which the client and the
 * worker install) checks itself; any other gate runs as it is, over a store
 * whose `queueDepth` rejects when it finds no room, so it cannot sleep either.
 */
class TransactionViewGate implements QueueDepthGate {
  readonly #gate: QueueDepthGate;

  constructor(gate: QueueDepthGate) {
    this.#gate = gate;
  }

  async acquire(queue: string, store: TaskStore): Promise<void> {
    const acquireOnce = (this.#gate as { acquireOnce?: unknown }).acquireOnce;
    if (typeof acquireOnce === "function") return (acquireOnce as QueueDepthGate["acquire"]).call(this.#gate, queue, store);
    const once = new Proxy(store, {
      get: (target, prop) => {
        if (prop === "queueDepth") return (q: string, maxDepth: number) => requireRoomNow(target, q, maxDepth);
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    await this.#gate.acquire(queue, once);
  }
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
