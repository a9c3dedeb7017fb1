/**
 * The bookkeeping every push wake-up channel needs: pending waits that each
 * end at their timeout, on abort, or when the channel wakes them.
 */
import { startTimer } from "./timers.js";

/** One pending wait of a {@link WaiterSet}. */
export interface Waiter<T> {
  /** What the waiter waits for (a task id, a set of queues, …), as given to `wait`. */
  readonly data: T;
  /** Ends this wait now (idempotent; safe to pass around unbound). */
  readonly wake: () => void;
}

/** Options of {@link WaiterSet}. */
export interface WaiterSetOptions<T> {
  /**
   * Indexes waiters by this key so {@link WaiterSet.wakeKey} finds them
   * without scanning (e.g. the task id of a task-done waiter).
   * @default undefined (no index; `wakeKey` is unavailable)
   */
  keyOf?: ((data: T) => string) | undefined;
  /** Called after a waiter left (woken, timed out or aborted). @default undefined */
  onLeave?: ((waiter: Waiter<T>) => void) | undefined;
  /**
   * Let the process exit while only these timeouts are pending. Wake-ups are
   * an accelerator, so a channel's waits never hold a process open by
   * themselves; whoever awaits one holds their own keep-alive handle.
   * @default true
   */
  unref?: boolean | undefined;
}

/**
 * A set of pending waits. `wait` resolves after its timeout (honoured past
 * 2^31 ms), when its signal aborts, or when the owner wakes it with
 * {@link WaiterSet.wakeAll}, {@link WaiterSet.wakeWhere},
 * {@link WaiterSet.wakeKey} or the waiter's own `wake`. It never rejects: to
 * its caller an early resolve means "look again".
 *
 * @example
 * ```ts
 * const dones = new WaiterSet<string>({ keyOf: (taskId) => taskId });
 * const waiting = dones.wait(taskId, 500, signal);
 * dones.wakeKey(taskId); // a `done` signal arrived
 * await waiting;
 * ```
 */
export class WaiterSet<T> {
  readonly #waiters = new Set<Waiter<T>>();
  readonly #byKey: Map<string, Set<Waiter<T>>> | null;
  readonly #keyOf: ((data: T) => string) | undefined;
  readonly #onLeave: ((waiter: Waiter<T>) => void) | undefined;
  readonly #unref: boolean;

  constructor(options: WaiterSetOptions<T> = {}) {
    this.#keyOf = options.keyOf;
    this.#byKey = options.keyOf === undefined ? null : new Map();
    this.#onLeave = options.onLeave;
    this.#unref = options.unref ?? true;
  }

  /** Waits pending now. */
  get size(): number {
    return this.#waiters.size;
  }

  /** A snapshot of the pending waiters (safe to wake while iterating). */
  waiters(): Waiter<T>[] {
    return [...this.#waiters];
  }

  /**
   * Registers a wait for `data`; resolves after `timeoutMs`, on abort of
   * `signal`, or when woken. A `timeoutMs` ≤ 0 or an aborted signal resolves
   * at once without registering.
   */
  wait(data: T, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true || !(timeoutMs > 0)) return Promise.resolve();
    return new Promise((resolve) => {
      let left = false;
      const waiter: Waiter<T> = {
        data,
        wake: () => {
          if (left) return;
          left = true;
          timer.clear();
          signal?.removeEventListener("abort", waiter.wake);
          this.#remove(waiter);
          resolve();
          this.#onLeave?.(waiter);
        },
      };
      const timer = startTimer(waiter.wake, timeoutMs, { unref: this.#unref });
      signal?.addEventListener("abort", waiter.wake, { once: true });
      this.#add(waiter);
    });
  }

  /** Wakes every pending waiter; returns how many woke. */
  wakeAll(): number {
    const all = this.waiters();
    for (const waiter of all) waiter.wake();
    return all.length;
  }

  /** Wakes the waiters whose data matches `predicate`; returns how many woke. */
  wakeWhere(predicate: (data: T) => boolean): number {
    let woken = 0;
    for (const waiter of this.waiters()) {
      if (!predicate(waiter.data)) continue;
      waiter.wake();
      woken++;
    }
    return woken;
  }

  /**
   * Whether a waiter is indexed under `key` (see {@link WaiterSetOptions.keyOf}).
   *
   * @throws Error when the set was built without `keyOf`.
   */
  hasKey(key: string): boolean {
    if (this.#byKey === null) throw new Error("WaiterSet.hasKey needs the keyOf option");
    return this.#byKey.has(key);
  }

  /**
   * Wakes the waiters indexed under `key` (see {@link WaiterSetOptions.keyOf});
   * returns how many woke. `before` sees each one's data just before it wakes
   * (e.g. to hand it what woke it).
   *
   * @throws Error when the set was built without `keyOf`.
   */
  wakeKey(key: string, before?: (data: T) => void): number {
    if (this.#byKey === null) throw new Error("WaiterSet.wakeKey needs the keyOf option");
    const set = this.#byKey.get(key);
    if (set === undefined) return 0;
    const waiters = [...set];
    for (const waiter of waiters) {
      before?.(waiter.data);
      waiter.wake();
    }
    return waiters.length;
  }

  #add(waiter: Waiter<T>): void {
    this.#waiters.add(waiter);
    if (this.#byKey === null || this.#keyOf === undefined) return;
    const key = this.#keyOf(waiter.data);
    let set = this.#byKey.get(key);
    if (set === undefined) {
      set = new Set();
      this.#byKey.set(key, set);
    }
    set.add(waiter);
  }

  #remove(waiter: Waiter<T>): void {
    this.#waiters.delete(waiter);
    if (this.#byKey === null || this.#keyOf === undefined) return;
    const key = this.#keyOf(waiter.data);
    const set = this.#byKey.get(key);
    if (set === undefined) return;
    set.delete(waiter);
    if (set.size === 0) this.#byKey.delete(key);
  }
}
