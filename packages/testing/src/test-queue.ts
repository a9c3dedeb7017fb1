/**
 * A store, a client and workers on one virtual clock, and the two moves a
 * test makes with them: `drain()` (run what is due now) and `advance(ms)`
 * (let time pass, then drain).
 *
 * Terminology (see also `virtual-clock.ts` and `watched-store.ts`):
 * - the queue is **quiet** when no store call is in flight and nothing
 *   happened for a few event-loop turns: every worker with room has claimed
 *   since the last write and found nothing due, and every running handler
 *   is waiting for something the queue cannot see move (a promise the test
 *   resolves, real I/O, or virtual time that has not passed).
 * - to **settle** is to wait until the queue is quiet.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setImmediate as nextImmediate } from "node:timers";
import type { CairnQOptions } from "@cairnq/client";
import { CairnQ } from "@cairnq/client";
import { MemoryStore } from "@cairnq/conformance";
import type { TaskStore } from "@cairnq/protocol";
import { CairnQError, InvalidArgument } from "@cairnq/protocol";
import { checkOptions } from "@cairnq/runtime";
import type { WorkerOptions } from "@cairnq/worker";
import { Worker } from "@cairnq/worker";
import type * as StoreSqlite from "@cairnq/store-sqlite";
import { DueInstants } from "./due-instants.js";
import type { RunningTask, TaskRun } from "./run-log.js";
import { RunLog } from "./run-log.js";
import { requireAdvanceMs, VirtualClock } from "./virtual-clock.js";
import { WatchedStore } from "./watched-store.js";

/** Builds the store of a test queue on its clock; the queue closes it in `close()`. */
export type TestStoreFactory = (clock: VirtualClock) => TaskStore | Promise<TaskStore>;

/** Options of {@link createTestQueue}. */
export interface TestQueueOptions {
  /**
   * The store: `"memory"` (`MemoryStore`, the fastest), `"sqlite"` (a
   * `SQLiteStore` on a temporary file, removed in `close()`; needs
   * `@cairnq/store-sqlite` installed, and on Node 20 `better-sqlite3` — Node
   * 22.16+ and Bun have a SQLite driver built in), or a function
   * that builds one on the clock it is given. A store must read its time
   * from that clock (`clock: () => clock.now()`); one on the database's
   * clock (Postgres) cannot follow virtual time.
   * @default "memory"
   */
  store?: "memory" | "sqlite" | TestStoreFactory | undefined;
  /** The virtual clock's wall time at the start: a `Date` or an integer of epoch milliseconds within a `Date`'s range. @default the system clock's now */
  now?: Date | number | undefined;
  /**
   * Options of the queue's client (`maxQueueDepth`, `logger`, …), except
   * `clock`, which is the queue's. A `retention` sweeper runs on the system
   * clock, not the virtual one.
   * @default {}
   */
  client?: Omit<CairnQOptions, "clock"> | undefined;
}

/** A test queue's workers take every worker option but `clock`, which is the queue's. */
export type TestWorkerOptions = Omit<WorkerOptions, "clock">;

/** What {@link TestQueue.drain} and {@link TestQueue.advance} resolve with. */
export interface DrainResult {
  /**
   * The runs that ended since the previous `drain` or `advance` resolved
   * (or since the queue was made), in the order they ended: each run is
   * reported once, whether it ended during the call or before it (a submit
   * reaches a started worker at once).
   */
  readonly ran: readonly TaskRun[];
  /**
   * The runs still going when the queue went quiet: handlers waiting for
   * something the queue cannot see move — a promise the test resolves,
   * real I/O, an abort that a later `advance` brings — or that never end.
   */
  readonly running: readonly RunningTask[];
}

/** Event-loop turns with nothing happening after which the queue counts as quiet. */
const QUIET_TURNS = 3;

const OPTION_KEYS = ["store", "now", "client"] as const satisfies readonly (keyof TestQueueOptions)[];

/**
 * Builds a {@link TestQueue}: a store on a new {@link VirtualClock}, a
 * client, and workers made with `queue.worker()`, all on that clock.
 *
 * @throws InvalidArgument for an unknown option or store choice;
 *   `CairnQError` when `"sqlite"` is asked for and `@cairnq/store-sqlite`
 *   is not installed.
 * @example
 * ```ts
 * const queue = await createTestQueue();
 * queue.worker().task("email.send", async (ctx, { to }) => ({ sent: to }));
 * const task = await queue.client.submit("email.send", { to: "a@example.com" }, { runAtDelayMs: 86_400_000 });
 * await queue.advance(86_400_000);
 * expect((await queue.client.get(task.id))?.status).toBe("succeeded");
 * await queue.close();
 * ```
 */
export async function createTestQueue(options: TestQueueOptions = {}): Promise<TestQueue> {
  const opts = checkOptions(options, "createTestQueue(options)", OPTION_KEYS) as TestQueueOptions;
  if (opts.client !== undefined && opts.client !== null && typeof opts.client === "object" && "clock" in opts.client) {
    throw new InvalidArgument("client.clock", "a test queue's client runs on the queue's clock; leave clock out of the client options");
  }
  const clock = new VirtualClock({ now: opts.now });
  const { store, cleanup } = await buildStore(opts.store ?? "memory", clock);
  try {
    await store.connect();
    return new TestQueue(clock, store, opts.client ?? {}, cleanup);
  } catch (err) {
    await store.close();
    await cleanup();
    throw err;
  }
}

async function buildStore(choice: unknown, clock: VirtualClock): Promise<{ store: TaskStore; cleanup: () => Promise<void> }> {
  const none = (): Promise<void> => Promise.resolve();
  if (choice === "memory") return { store: new MemoryStore({ clock: () => clock.now() }), cleanup: none };
  if (choice === "sqlite") {
    let sqlite: typeof StoreSqlite;
    try {
      sqlite = await import("@cairnq/store-sqlite");
    } catch (err) {
      throw new CairnQError(
        `createTestQueue({ store: "sqlite" }) needs @cairnq/store-sqlite: npm install --save-dev @cairnq/store-sqlite ` +
          `(and better-sqlite3 on Node 20; Node 22.16+ and Bun have a SQLite driver built in) ` +
          `(${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const dir = await mkdtemp(join(tmpdir(), "cairnq-testing-"));
    return { store: new sqlite.SQLiteStore(join(dir, "tasks.db"), { clock: () => clock.now() }), cleanup: () => rm(dir, { recursive: true, force: true }) };
  }
  if (typeof choice === "function") {
    const store = (await (choice as TestStoreFactory)(clock)) as TaskStore | null | undefined;
    if (store === null || typeof store !== "object" || typeof store.claim !== "function") {
      throw new InvalidArgument("store", "the store factory must return a TaskStore built on the clock it is given");
    }
    return { store, cleanup: none };
  }
  throw new InvalidArgument("store", `store must be "memory", "sqlite" or a function (clock) => TaskStore, got ${JSON.stringify(choice) ?? typeof choice}`);
}

/**
 * A store, a client and workers on one {@link VirtualClock}, for testing
 * handlers, retries, delays, leases, schedules and waits in milliseconds.
 * Make one with {@link createTestQueue}.
 *
 * Workers made with {@link TestQueue.worker} start with the queue's first
 * submit, drain or advance — declare their handlers and schedules before
 * that, as before `run()` — and run for real: a submit reaches them at
 * once, `client.call` resolves as soon as the handler settled. Only time is
 * virtual: nothing that waits for time (a delay, a backoff, a lease, a
 * heartbeat, `maxRunMs`, a schedule's next slot, a wait's deadline) happens
 * until {@link TestQueue.advance} moves the clock there.
 *
 * @example
 * ```ts
 * const queue = await createTestQueue();
 * const worker = queue.worker({ retryBackoffMs: 1000 });
 * worker.task("flaky", (ctx) => {
 *   if (ctx.attempt === 1) throw new Error("first try fails");
 *   return "ok";
 * });
 * await queue.client.submit("flaky");
 * expect((await queue.drain()).ran.map((r) => r.outcome)).toEqual(["retrying"]);
 * expect((await queue.advance(30_000)).ran.map((r) => [r.attempt, r.outcome])).toEqual([[2, "succeeded"]]);
 * await queue.close();
 * ```
 */
export class TestQueue {
  /** The virtual clock everything here runs on. */
  readonly clock: VirtualClock;
  /** The store the client and the workers use: the one built for the queue, seen through the queue's watch. */
  readonly store: TaskStore;
  /** A client on the queue's store and clock. */
  readonly client: CairnQ;

  readonly #watched: WatchedStore;
  readonly #due: DueInstants;
  readonly #log: RunLog;
  readonly #workers: Worker[] = [];
  /** Workers made and not started yet: they start at the next kick. */
  readonly #idle: Worker[] = [];
  readonly #runs: Promise<void>[] = [];
  /** Due times of the rate-limit timers already set, so a burst of claims sets one per window end. */
  readonly #rateStops = new Set<number>();
  readonly #cleanup: () => Promise<void>;
  /** What a worker's `run()` rejected with: an error retrying cannot fix stopped it. */
  #fatal: Error | null = null;
  /** How many runs of the log a drain or advance already reported. */
  #reported = 0;
  #closing: Promise<void> | null = null;

  /** @internal Use {@link createTestQueue}. */
  constructor(clock: VirtualClock, store: TaskStore, clientOptions: Omit<CairnQOptions, "clock">, cleanup: () => Promise<void>) {
    this.clock = clock;
    this.#cleanup = cleanup;
    this.#log = new RunLog(() => clock.now());
    this.#watched = new WatchedStore(store, {
      wrote: () => this.#kick(),
      rateLimited: (windowsMs) => {
        for (const windowMs of windowsMs) this.#stopAt(windowMs);
      },
    });
    this.store = this.#watched.store;
    this.#due = new DueInstants(store);
    this.client = new CairnQ(this.store, { ...clientOptions, clock });
    clock.drive({
      settle: () => this.#settle(),
      nextStopAtMs: () => this.#due.next(clock.now(), this.#watched.activity),
      stopped: () => this.#kick(),
    });
  }

  /**
   * A new worker on the queue's store and clock. It starts with the next
   * submit, drain or advance (see {@link TestQueue}); `close()` stops it.
   * Its runs appear in what `drain` and `advance` resolve with.
   *
   * @param options - Any {@link WorkerOptions} but `clock`.
   * @throws InvalidArgument for a bad option (as `new Worker` would), or a `clock`.
   */
  worker(options: TestWorkerOptions = {}): Worker {
    this.#throwIfClosed();
    if (options !== null && typeof options === "object" && "clock" in options) {
      throw new InvalidArgument("clock", "a test queue's workers run on the queue's clock; leave clock out of the worker options");
    }
    const worker = new Worker(this.store, { ...options, clock: this.clock });
    this.#log.watch(worker);
    this.#workers.push(worker);
    this.#idle.push(worker);
    return worker;
  }

  /**
   * Runs everything due now, without moving the clock: starts the workers
   * not yet running, lets them claim, run handlers and settle until nothing
   * due is left to claim and every handler still running waits for
   * something (see {@link DrainResult.running}).
   *
   * @returns the runs that ended since the last drain or advance, and those still going.
   * @throws the error that stopped a worker for good (`ProtocolVersionMismatch`, …), if one did.
   */
  async drain(): Promise<DrainResult> {
    return this.#moving(0);
  }

  /**
   * Lets `ms` of virtual time pass, then drains: the clock stops at every
   * timer (heartbeats, `maxRunMs`, sleeps, schedules, wait deadlines) and
   * every instant a task falls due or a lease runs out on the way, and at
   * each the workers claim and run what is due, so a task retried three
   * times within the span runs three times.
   *
   * @param ms - An integer number of milliseconds from 0 to `MAX_DELAY_MS`
   *   (`@cairnq/protocol`, 100 years), the bound of every delay in CairnQ.
   * @returns the runs that ended since the last drain or advance, and those still going.
   * @throws InvalidArgument for an `ms` that is not such an integer (the message says what it got) or that would move
   *   the wall clock past the last instant a `Date` holds; the error that stopped a worker for good, if one did.
   */
  async advance(ms: number): Promise<DrainResult> {
    // Checked before the queue kicks its workers into starting: a call refused does nothing.
    requireAdvanceMs(ms, this.clock.now());
    return this.#moving(ms);
  }

  /**
   * Stops every worker (running handlers get the worker's `stopTimeoutMs` of
   * virtual time, which the clock is moved through; then they are let go of,
   * as `stop()` does), closes the client and the store, and removes a
   * temporary SQLite file. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #moving(ms: number): Promise<DrainResult> {
    this.#throwIfClosed();
    this.#kick();
    await this.clock.advance(ms);
    await this.#log.reconcile(this.#watched.inner);
    if (this.#fatal !== null) throw this.#fatal;
    const ran = this.#log.runs.slice(this.#reported);
    this.#reported = this.#log.runs.length;
    return { ran, running: this.#log.running() };
  }

  async #close(): Promise<void> {
    const stopped = { done: false };
    const stopping = Promise.allSettled(this.#workers.map((worker) => worker.close())).then(() => {
      stopped.done = true;
    });
    // A handler that outlives the stop: the stop deadline is a timer of the virtual clock, so time is moved to it.
    while (!stopped.done) {
      await this.#settle();
      const nextMs = this.clock.nextTimerAtMs();
      if (stopped.done || nextMs === null) break;
      await this.clock.advance(Math.max(0, nextMs - this.clock.now()));
    }
    await stopping;
    await Promise.allSettled(this.#runs);
    try {
      await this.client.close();
    } finally {
      await this.#cleanup();
    }
  }

  #throwIfClosed(): void {
    if (this.#closing !== null) throw new CairnQError("this test queue is closed; create a new one with createTestQueue()");
  }

  /** Starts the workers waiting to start, and ends every wake-up wait so that workers claim and waits look again. */
  #kick(): void {
    if (this.#closing === null) {
      for (const worker of this.#idle.splice(0)) {
        this.#runs.push(
          worker.run().catch((err: unknown) => {
            this.#fatal ??= err instanceof Error ? err : new CairnQError(`a worker of the test queue stopped: ${String(err)}`);
          }),
        );
      }
    }
    this.#watched.kick();
  }

  /** A stop of the clock `windowMs` from now (the end of a rate-limit window); the stop itself kicks. */
  #stopAt(windowMs: number): void {
    const atMs = this.clock.now() + windowMs;
    if (this.#rateStops.has(atMs)) return;
    this.#rateStops.add(atMs);
    this.clock.startTimer(() => this.#rateStops.delete(atMs), windowMs);
  }

  /** Waits until the queue is quiet (see the file's opening block). */
  async #settle(): Promise<void> {
    let seen = -1;
    for (let quiet = 0; quiet < QUIET_TURNS; ) {
      await new Promise<void>((resolve) => nextImmediate(resolve));
      const activity = this.#watched.activity + this.#log.runs.length;
      if (this.#watched.inFlight > 0 || activity !== seen) {
        seen = activity;
        quiet = 0;
      } else {
        quiet += 1;
      }
    }
  }
}
