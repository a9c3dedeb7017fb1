/**
 * One query at a time on one connection: the LISTEN connection carries the
 * wakeups' own statements (LISTEN, the liveness ping) and the store's writes
 * lent to it (`postgres-listen-lane.ts`), and `pg` queues a second query on a
 * busy client with a deprecation warning (pg 8; the queue goes in pg 9).
 */

/**
 * Runs queries one after another: each is sent once the one before it is
 * answered (or failed), at once when none is waiting or in flight.
 *
 * @example
 * const gate = new QueryGate();
 * await gate.run(() => client.query("LISTEN cairnq_queued"));
 */
export class QueryGate {
  #busy = false;
  #lent = false;
  /** Queries waiting their turn, first to go first. */
  readonly #waiting: (() => void)[] = [];

  /** Whether the connection is held by {@link QueryGate.tryAcquire} (a statement lent it) rather than by {@link QueryGate.run}. */
  get lent(): boolean {
    return this.#lent;
  }

  /** Takes the connection now when it is idle: returns its release (idempotent), else `null`. */
  tryAcquire(): (() => void) | null {
    if (this.#busy) return null;
    this.#busy = true;
    this.#lent = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#lent = false;
      this.#next();
    };
  }

  /** Sends `query()` once the queries before it are done (in this very tick when none is); settles with its answer. */
  async run<T>(query: () => Promise<T>): Promise<T> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#busy = true;
    try {
      return await query();
    } finally {
      this.#next();
    }
  }

  /** Hands the connection to the next waiting query, or marks it idle. */
  #next(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#busy = false;
    else next();
  }
}
