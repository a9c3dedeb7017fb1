import { CairnQError } from "@cairnq/protocol";
import type { StoreDialect } from "./dialect.js";
import type { AnyKysely } from "./executor.js";

type State = "idle" | "open" | "closing" | "closed";

/**
 * A store's open/close state and its gate for calls: every operation runs
 * through {@link StoreLifecycle.run}, which connects lazily (the dialect's
 * schema manager: setup, migrations, guards), refuses calls once closing, and
 * counts the calls in flight so that `close()` waits for them before it
 * releases anything.
 */
export class StoreLifecycle {
  #state: State = "idle";
  #connecting: Promise<void> | null = null;
  /** Calls of {@link StoreLifecycle.run} not yet settled; `close()` waits for them (see {@link StoreLifecycle.#settledOne}). */
  #inFlight = 0;
  /** Wakes `close()` when the last call in flight settles; set only while it waits. */
  #whenIdle: (() => void) | null = null;
  /** The close in progress or done, which a second `close()` waits for. */
  #closing: Promise<void> | null = null;

  /**
   * @param db - The store's Kysely instance.
   * @param dialect - The store's dialect (its schema manager opens and releases the database).
   * @param destroyOnClose - Whether `close()` destroys `db` (the store built it).
   */
  constructor(
    private readonly db: AnyKysely,
    private readonly dialect: StoreDialect,
    private readonly destroyOnClose: boolean,
  ) {}

  /** Opens the database once; idempotent. Rejects once closing. */
  async connect(): Promise<void> {
    if (this.#state === "open") return;
    if (this.#state !== "idle") throw this.#closedError();
    this.#connecting ??= this.dialect.schema.connect(this.db, this.dialect.executor).then(
      () => {
        if (this.#state === "idle") this.#state = "open";
      },
      (err: unknown) => {
        this.#connecting = null;
        throw err;
      },
    );
    await this.#connecting;
  }

  /** Waits for calls in flight, then releases what the store opened; idempotent. */
  async close(): Promise<void> {
    if (this.#closing !== null) {
      // A second close waits for the first, and does not repeat its error.
      await this.#closing.catch(() => {});
      return;
    }
    this.#closing = this.#close();
    await this.#closing;
  }

  async #close(): Promise<void> {
    const wasConnecting = this.#connecting;
    this.#state = "closing";
    try {
      if (wasConnecting !== null) await wasConnecting.catch(() => {});
      while (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#whenIdle = resolve));
      await this.dialect.schema.close(this.db);
      if (this.destroyOnClose) await this.db.destroy();
    } finally {
      this.#state = "closed";
    }
  }

  #closedError(): CairnQError {
    // Fatal: no retry reopens it, so a worker whose store was closed under it stops (its run() rejects) instead of retrying for ever.
    return new CairnQError(`this ${this.dialect.name} store is closed, so the call was not run; create a new store to keep using the database`, { fatal: true });
  }

  /**
   * Runs `fn` connected, counted as in flight so `close()` waits for it. A count and one reaction
   * per call, not a set of promises and a `finally` chain: on a Postgres c64 drain every settlement
   * passes here, and those were objects for the garbage collector per task.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#state === "closing" || this.#state === "closed") return Promise.reject(this.#closedError());
    const promise = this.#state === "open" ? fn() : this.connect().then(fn);
    this.#inFlight += 1;
    promise.then(this.#settledOne, this.#settledOne);
    return promise;
  }

  /** {@link StoreLifecycle.run} of `fn(arg)`: the same gate and count, without a closure per call. */
  runWith<A, T>(fn: (arg: A) => Promise<T>, arg: A): Promise<T> {
    if (this.#state === "closing" || this.#state === "closed") return Promise.reject(this.#closedError());
    let promise: Promise<T>;
    try {
      promise = this.#state === "open" ? fn(arg) : this.connect().then(() => fn(arg));
    } catch (error) {
      // A caller of an async operation gets a rejection, never a throw.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller gets exactly what was thrown
      return Promise.reject(error);
    }
    this.#inFlight += 1;
    promise.then(this.#settledOne, this.#settledOne);
    return promise;
  }

  readonly #settledOne = (): void => {
    this.#inFlight -= 1;
    if (this.#inFlight > 0 || this.#whenIdle === null) return;
    const wake = this.#whenIdle;
    this.#whenIdle = null;
    wake();
  };
}
