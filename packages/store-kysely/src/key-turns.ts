/**
 * Issue order for keyed submits of one store instance.
 *
 * Terminology:
 * - **turn**: one keyed submit's place in the line of its key, taken when the
 *   submit is called (synchronously, so call order is line order) and given
 *   back when its write transaction has ended, committed or not.
 * - **line**: the turns of one key not yet given back, oldest first; a key
 *   with no turn out has no entry, so the map holds only keys in flight.
 *
 * Why: each keyed submit runs in its own write transaction on a pool
 * connection, so submits issued together (not awaited) reach the key lock in
 * whatever order their connections happen to send it, and a debounced or
 * `conflict: "replace"` submit kept the payload of an arbitrary one of them
 * rather than the last one issued (`reuse`/`reject` kept an arbitrary first).
 * Waiting for the previous turn before opening the transaction (never while
 * holding a connection) makes the key lock see them in call order. Across
 * processes there is no call order to keep: there the last one committed
 * wins. Unkeyed submits take no turn.
 */
export class KeyTurns {
  /** Per key, the promise the next turn waits for: settles when the newest turn out is given back. */
  readonly #tails = new Map<string, Promise<void>>();

  /**
   * Takes the next turn of `key`: `ready` settles once every earlier turn of
   * the key is given back; `release()` gives this one back (idempotent) and
   * must be called whatever happens, or later submits of the key wait forever.
   *
   * @example
   * const turn = turns.take(key);
   * try {
   *   await turn.ready;
   *   await writeTheKeyedSubmit();
   * } finally {
   *   turn.release();
   * }
   */
  take(key: string): { readonly ready: Promise<void>; release(): void } {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The next turn waits for this one and, through it, for every earlier one.
    const tail = previous.then(() => done);
    this.#tails.set(key, tail);
    return {
      ready: previous,
      release: (): void => {
        release();
        // The newest turn of the key given back: nothing waits behind it, so the key leaves the map.
        void tail.then(() => {
          if (this.#tails.get(key) === tail) this.#tails.delete(key);
        });
      },
    };
  }

  /** Keys with a turn out (for tests: the map empties when submits are idle). */
  get keysInFlight(): number {
    return this.#tails.size;
  }
}
