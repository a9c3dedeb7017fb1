/**
 * The instants at which a store's rows fall due that no timer marks: a
 * delayed, backed-off (or, with durable steps, parked) task's `run_at_ms`,
 * and a running task's `lease_until_ms`, after which a claim recovers it. A
 * test queue's clock stops at each on its way, so that a retry three
 * backoffs deep or a lease that runs out mid-`advance` happens when it
 * would, not all at the end.
 */
import type { Task, TaskStore } from "@cairnq/protocol";

/** Rows read per `list` page. */
const PAGE = 500;

/**
 * Reads the due instants of a store's `queued` and `running` rows, and
 * answers "which is next after now" from them until the store changes.
 * @internal
 */
export class DueInstants {
  readonly #store: TaskStore;
  /** Sorted ascending; valid while the watched store's activity is `#readAt`. */
  #instants: number[] = [];
  #readAt = -1;

  /** @param store - Read directly: these reads are the queue's own and must not count as activity. */
  constructor(store: TaskStore) {
    this.#store = store;
  }

  /**
   * The first instant after `nowMs`, or `null`.
   *
   * @param activity - The watched store's activity now: the rows are read again only when it moved.
   */
  async next(nowMs: number, activity: number): Promise<number | null> {
    if (activity !== this.#readAt) {
      this.#instants = await this.#read();
      this.#readAt = activity;
    }
    for (const atMs of this.#instants) if (atMs > nowMs) return atMs;
    return null;
  }

  async #read(): Promise<number[]> {
    const instants: number[] = [];
    for (const status of ["queued", "running"] as const) {
      for (let beforeId: string | undefined; ; ) {
        const page: Task[] = await this.#store.list({ status, order: "id", limit: PAGE, ...(beforeId === undefined ? {} : { beforeId }) });
        for (const row of page) {
          const atMs = status === "queued" ? row.run_at_ms : row.lease_until_ms;
          if (atMs !== null) instants.push(atMs);
        }
        if (page.length < PAGE) break;
        beforeId = (page[page.length - 1] as Task).id;
      }
    }
    return instants.sort((a, b) => a - b);
  }
}
