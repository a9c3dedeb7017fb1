/**
 * The settlements (succeed, complete, completeRef, fail) a store issued
 * whose commit has not been answered yet, for a dialect whose claims do not
 * see them by themselves (`DialectCapabilities.claimsSeeSettlements` false:
 * concurrent connections, settlements combined across a tick).
 *
 * Why: a worker claims as soon as its handlers end, while their settlements
 * are still on their way, so a group draw counted those tasks as running
 * (`groupConcurrency`) and took less than the worker had room for: on
 * Postgres the c64 drain with `groupConcurrency: 8` over 10 groups took 33
 * tasks per claim instead of 62, a third of its claims empty. A group draw
 * does not count a task whose settlement this store has in flight while the
 * task is still held by that very attempt (`sweepGroupTask`'s `settling`):
 * its handler has ended, so no handler of the group runs for it.
 *
 * A settlement is named by its **fence**, `<task id>#<attempt>#<worker id>`
 * ({@link settlementFence}), which the group draw's sweep compares with the
 * task row's own columns.
 */
export class SettlementsInFlight {
  /** Fence → settlements in flight with it (a retried settlement may overlap the first). */
  readonly #pending = new Map<string, number>();
  /** Whether settlements are followed: from the store's first group claim on, so a store that never draws groups pays nothing. */
  #following = false;

  /** Starts following settlements (the store's first claim with group limits). */
  follow(): void {
    this.#following = true;
  }

  /** Follows `settlement` of the attempt `fence` until it is answered (either way), once {@link follow} was called; returns it unchanged. */
  track<T>(settlement: Promise<T>, fence: string): Promise<T> {
    if (!this.#following) return settlement;
    const pending = this.#pending;
    pending.set(fence, (pending.get(fence) ?? 0) + 1);
    const forget = (): void => {
      const left = (pending.get(fence) ?? 1) - 1;
      if (left > 0) pending.set(fence, left);
      else pending.delete(fence);
    };
    settlement.then(forget, forget);
    return settlement;
  }

  /** The fences of the settlements in flight now. */
  fences(): string[] {
    return [...this.#pending.keys()];
  }
}

/** The fence of a settlement's attempt, as the group draw's sweep builds it from the task row (`id || '#' || attempt || '#' || worker_id`). */
export function settlementFence(params: { readonly taskId?: unknown; readonly attempt?: unknown; readonly workerId?: unknown }): string {
  return `${String(params.taskId)}#${String(params.attempt)}#${String(params.workerId)}`;
}
