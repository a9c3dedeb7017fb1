/**
 * The store as a test queue's client and workers see it: the real store
 * behind a proxy that counts the calls in flight (so the queue knows when
 * nothing is happening), and whose wake-ups follow the test instead of the
 * system clock.
 *
 * Terminology:
 * - a call is **in flight** from the moment the proxy passes it on until the
 *   promise it returned settles; **activity** counts call starts and ends.
 * - a **kick** ends every pending `claimWake` and `taskDoneWake` at once: the
 *   workers claim again and the waits look again. The queue kicks after
 *   every write that may have made work due or a task terminal, at every
 *   stop of the clock, and when a drain begins.
 * - a call is **parked** while the store's backpressure gate
 *   (`queueDepthGate`, the client's `maxQueueDepth`) holds it: a submit to a
 *   full queue sleeps on the virtual clock between depth probes, so it waits
 *   for time like a delayed task does and is not in flight meanwhile (were
 *   it, the queue would never be quiet and the clock could never move to
 *   the probe that lets it through or fails it with `QueueFull`). Its
 *   probes, made through the proxy, are in flight as any read.
 *
 * A store's wake-ups are sleeps of the system clock (or push signals), and a
 * poll interval of virtual time would make `advance` stop every 500 ms of
 * it: a day would be 172,800 stops. A stop costs ~0.13 ms on the in-memory
 * store and ~0.47 ms on SQLite (`advance(86_400_000)` over one handler that
 * never returns, whose 8,640 heartbeats at the default lease are the stops,
 * took 1.1 s and 4.0 s), so a polled day would take 22 s and 80 s. So here
 * a wait ends only when kicked (or aborted). Nothing is missed by that: what
 * a poll would discover — a delayed task falling due, a lease running out,
 * a rate-limit window ending — happens only at instants the clock stops at
 * and kicks.
 */
import type { ClaimInput, QueueDepthGate, StoreCapabilities, Task, TaskStore } from "@cairnq/protocol";

/** Calls that can make nothing due and no task terminal: they do not kick. */
const QUIET_METHODS = new Set([
  "connect",
  "close",
  "get",
  "getByKey",
  "getStatus",
  "getStatusByKey",
  "list",
  "stats",
  "queueDepth",
  "claim",
  "heartbeat",
  "heartbeatBatch",
  "progress",
  "purge",
  "subscribe",
  "withTransaction",
]);

/** A pending `claimWake` or `taskDoneWake`. */
interface Waiter {
  wake(): void;
}

/** What the proxy tells its owner. */
export interface WatchedStoreHooks {
  /** A write that may have made work due or a task terminal completed. */
  wrote(): void;
  /** A claim returned rows under rate limits: the windows end `perMs` from now. */
  rateLimited(windowsMs: readonly number[]): void;
}

/**
 * Watches a store for a test queue (see the file's opening block). @internal
 */
export class WatchedStore {
  /** The proxy: hand it to the client and the workers. */
  readonly store: TaskStore;
  /** The store behind the proxy, for reads the queue makes for itself (they must not count as activity). */
  readonly inner: TaskStore;
  #inFlight = 0;
  /** Calls in flight that the backpressure gate holds (see "parked" in the file's opening block). */
  #parked = 0;
  #activity = 0;
  readonly #waiters = new Set<Waiter>();
  /** The gate as installed through the proxy, which reads of `queueDepthGate` return (the client and worker compare it). */
  #gate: QueueDepthGate | null = null;

  constructor(inner: TaskStore, hooks: WatchedStoreHooks) {
    this.inner = inner;
    // Without push wake-ups a worker claims after every wake (a kick); with them it would wait for a signal.
    const capabilities: StoreCapabilities = { ...inner.capabilities, pushWakeups: false };
    const wrapped = new Map<PropertyKey, unknown>();
    const wait = (_key: unknown, _timeoutMs: number, signal?: AbortSignal): Promise<void> => this.#wait(signal);
    this.store = new Proxy(inner, {
      get: (target, prop) => {
        if (prop === "capabilities") return capabilities;
        if (prop === "claimWake" || prop === "taskDoneWake") return wait;
        if (prop === "queueDepthGate") return this.#gate ?? (Reflect.get(target, prop, target) as unknown);
        // Getters run on the store itself: its private fields are not on the proxy.
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        let fn = wrapped.get(prop);
        if (fn === undefined) {
          fn = this.#wrap(target, String(prop), value as (...args: unknown[]) => unknown, hooks);
          wrapped.set(prop, fn);
        }
        return fn;
      },
      set: (target, prop, value) => {
        if (prop !== "queueDepthGate") return Reflect.set(target, prop, value, target);
        this.#gate = (value as QueueDepthGate | null | undefined) ?? null;
        return Reflect.set(target, prop, this.#gate === null ? null : this.#parking(this.#gate), target);
      },
    });
  }

  /** Store calls passed on whose promise has not settled yet, less those the backpressure gate holds. */
  get inFlight(): number {
    return this.#inFlight - this.#parked;
  }

  /** Grows with every call start and end; equal readings with nothing in flight mean nothing happened between them. */
  get activity(): number {
    return this.#activity;
  }

  /** Ends every pending wake-up wait (see the file's opening block). */
  kick(): void {
    this.#activity += 1;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const waiter of waiters) waiter.wake();
  }

  /**
   * The gate the store calls: `gate`, with the submit it holds parked while
   * it waits (see the file's opening block), and its probes of the store
   * sent through the proxy so that they count as in flight (a probe of a
   * transaction's store stays in that transaction).
   */
  #parking(gate: QueueDepthGate): QueueDepthGate {
    return {
      acquire: async (queue: string, store: TaskStore): Promise<void> => {
        this.#parked += 1;
        this.#activity += 1;
        try {
          await gate.acquire(queue, store === this.inner ? this.store : store);
        } finally {
          this.#parked -= 1;
          this.#activity += 1;
        }
      },
    };
  }

  #wait(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted === true) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        wake: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        resolve();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.add(waiter);
    });
  }

  #wrap(target: TaskStore, method: string, fn: (...args: unknown[]) => unknown, hooks: WatchedStoreHooks): (...args: unknown[]) => unknown {
    const quiet = QUIET_METHODS.has(method);
    const ended = (args: unknown[], value: unknown): void => {
      this.#inFlight -= 1;
      this.#activity += 1;
      if (method === "claim") {
        const windows = rateWindows(args[0] as ClaimInput, value as Task[]);
        if (windows.length > 0) hooks.rateLimited(windows);
      } else if (!quiet) {
        hooks.wrote();
      }
    };
    const failed = (): void => {
      this.#inFlight -= 1;
      this.#activity += 1;
    };
    return (...args: unknown[]): unknown => {
      this.#inFlight += 1;
      this.#activity += 1;
      let result: unknown;
      try {
        result = fn.apply(target, args);
      } catch (err) {
        failed();
        throw err;
      }
      if (!isThenable(result)) {
        ended(args, result);
        return result;
      }
      return Promise.resolve(result).then(
        (value) => {
          ended(args, value);
          return value;
        },
        (err: unknown) => {
          failed();
          throw err;
        },
      );
    };
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/**
 * The rate-limit windows a claim opened: for each claimed row whose name has
 * a limit with a `perMs` (a `rateLimit`, or any later limit of that shape),
 * that window's length. A claim is allowed again when the window ends, an
 * instant no row shows, so the queue stops the clock there.
 */
function rateWindows(input: ClaimInput | undefined, rows: readonly Task[] | undefined): number[] {
  const limits = input?.flowControl;
  if (limits === null || limits === undefined || !Array.isArray(rows) || rows.length === 0) return [];
  const windows = new Set<number>();
  for (const row of rows) {
    const limit = limits[row.name] as Record<string, unknown> | undefined;
    if (limit === undefined) continue;
    for (const value of Object.values(limit)) {
      const perMs = (value as { perMs?: unknown } | null)?.perMs;
      if (typeof perMs === "number" && perMs > 0) windows.add(perMs);
    }
  }
  return [...windows];
}
