/**
 * The backpressure gate of protocol v1 §5.6: before a submit inserts into a
 * gated queue it takes one unit of a local *grant*; an empty grant is
 * refilled by probing `queueDepth`, and while the queue stays full the submit
 * sleeps and probes again until `maxQueueWaitMs`, then fails with `QueueFull`
 * having enqueued nothing.
 *
 * Terminology: *headroom* is what `queueDepth(queue, maxDepth)` returns
 * (`maxDepth − queued`, floor 0); a *grant* is the number of submits this
 * process may still make on a queue before probing again.
 *
 * Pure in the protocol's sense: the gate starts no timer. Its sleeps, its
 * clock and its event-loop yield are injected by whoever builds it (the
 * client, the worker), each with the timers that fit that package.
 */
import { describe, isPlainObject } from "./describe.js";
import { CairnQError, InvalidArgument, QueueFull } from "./errors.js";
import type { Logger } from "./logger.js";
import { logSafely } from "./logger.js";
import type { QueueDepthGate, TaskStore } from "./store.js";

/**
 * A depth limit for every queue (a number), or for the named queues only (a
 * map); each limit is an integer ≥ 1 counting `queued` rows (delayed ones
 * included, running ones not).
 */
export type MaxQueueDepth = number | Readonly<Record<string, number>>;

/** Options of a {@link BackpressureGateCore}. */
export interface BackpressureGateOptions {
  /** The limit(s) to enforce; see {@link MaxQueueDepth}. */
  maxQueueDepth: MaxQueueDepth;
  /** How long a submit may wait for headroom before `QueueFull`. Integer ≥ 0. @default 600000 */
  maxQueueWaitMs?: number | undefined;
  /** First sleep after a full probe; doubles up to 5000 ms. Integer ≥ 1. @default 250 */
  queuePollIntervalMs?: number | undefined;
  /** Receives a `debug` line when a submit starts waiting. @default undefined (silent) */
  logger?: Logger | undefined;
  /**
   * What owns the gate (`"client"`, `"worker"`), named in the error a submit
   * gets when the gate closes under it. @default "backpressure gate"
   */
  owner?: string | undefined;
}

/** What a {@link BackpressureGateCore} runs on besides the store. */
export interface BackpressureGateDeps {
  /**
   * Sleeps `ms`, resolving early (never rejecting) when `signal` aborts.
   * Required: the protocol starts no timer, and whether a sleep may hold the
   * process open is the caller's decision (a submit waiting for headroom is
   * awaited by someone, so first-party callers use a ref'd timer).
   */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** A monotonic clock in ms: deadlines must not move with the wall clock. @default performance.now() */
  now?: (() => number) | undefined;
  /**
   * Resolves after one macrotask turn of the event loop (Node: `setImmediate`),
   * so inserts granted by a probe land before the next probe counts the queue.
   * @default a 1 ms `sleep`
   */
  nextTurn?: (() => Promise<void>) | undefined;
}

/** Default of {@link BackpressureGateOptions.maxQueueWaitMs} (§5.6): ten minutes. */
export const DEFAULT_MAX_QUEUE_WAIT_MS = 600_000;
/** Default of {@link BackpressureGateOptions.queuePollIntervalMs} (§5.6). */
export const DEFAULT_QUEUE_POLL_INTERVAL_MS = 250;
/**
 * Most submits one probe may grant (§5.6). It bounds the overshoot of a soft
 * limit: N producers may exceed `maxDepth` by at most (N − 1) × 64, while a
 * producer submitting in bulk pays one `queueDepth` read per 64 submits.
 */
export const MAX_GRANT = 64;
/** The poll interval stops doubling here (§5.6). */
export const MAX_QUEUE_POLL_INTERVAL_MS = 5_000;

interface QueueState {
  /** Submits this process may still make before probing again. */
  grant: number;
  /** The probe in flight, shared by every submit waiting on this queue. */
  probe: Promise<number> | null;
}

function depthLimit(value: unknown, argument: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new InvalidArgument(
      argument,
      `${argument} must be an integer ≥ 1 (the most queued tasks allowed before submits wait), got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * Validates a {@link MaxQueueDepth}: a number for every queue, or a plain
 * object mapping queue names to limits.
 *
 * @returns the single limit, or a map of the gated queues.
 * @throws InvalidArgument naming the option (`maxQueueDepth`, `maxQueueDepth.<queue>`).
 * @example
 * ```ts
 * normalizeMaxQueueDepth({ emails: 1000 }); // Map { "emails" => 1000 }
 * ```
 */
export function normalizeMaxQueueDepth(value: unknown): number | ReadonlyMap<string, number> {
  if (typeof value === "number") return depthLimit(value, "maxQueueDepth");
  if (!isPlainObject(value)) {
    throw new InvalidArgument(
      "maxQueueDepth",
      `maxQueueDepth must be an integer ≥ 1 for every queue, or an object such as { emails: 1000 } gating only the named queues; got ${describe(value)}`,
    );
  }
  const limits = new Map<string, number>();
  for (const [queue, limit] of Object.entries(value)) {
    if (queue === "") throw new InvalidArgument("maxQueueDepth", "maxQueueDepth keys must be queue names; one is empty");
    limits.set(queue, depthLimit(limit, `maxQueueDepth.${queue}`));
  }
  return limits;
}

function durationOption(value: unknown, argument: string, fallback: number, min: number, why: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new InvalidArgument(argument, `${argument} must be an integer ≥ ${min} (${why}), got ${describe(value)}`);
  }
  return value;
}

/**
 * Validates the gate's timing options and applies their defaults; a gate
 * calls it, and so does an owner without `maxQueueDepth` so that a bad value
 * fails at construction instead of being ignored.
 *
 * @throws InvalidArgument naming the option.
 * @example
 * ```ts
 * resolveGateTiming({}); // { maxQueueWaitMs: 600000, queuePollIntervalMs: 250 }
 * ```
 */
export function resolveGateTiming(options: { maxQueueWaitMs?: unknown; queuePollIntervalMs?: unknown }): {
  maxQueueWaitMs: number;
  queuePollIntervalMs: number;
} {
  return {
    maxQueueWaitMs: durationOption(
      options.maxQueueWaitMs,
      "maxQueueWaitMs",
      DEFAULT_MAX_QUEUE_WAIT_MS,
      0,
      "how long a submit waits for headroom before QueueFull; 0 fails at once",
    ),
    queuePollIntervalMs: durationOption(
      options.queuePollIntervalMs,
      "queuePollIntervalMs",
      DEFAULT_QUEUE_POLL_INTERVAL_MS,
      1,
      "the first sleep between queue-depth probes while a queue is full",
    ),
  };
}

/**
 * The §5.6 backpressure gate over injected timers: the algorithm that
 * `@cairnq/client`'s `BackpressureGate` runs on Node's timers. Apps use that
 * one; this core is for SDK layers that bring their own sleep. The client (`maxQueueDepth`) and the worker
 * (`maxQueueDepth`, when the store has no gate yet) build one and install it
 * on `store.queueDepthGate`, so every submit through that store object —
 * the client's and child submits from handlers — passes the gate.
 *
 * Per queue, each submit takes one unit of a local grant. At zero it probes
 * `queueDepth(queue, maxDepth)` (one probe in flight per queue, shared by all
 * waiting submits) and sets the grant to `min(headroom, 64)`. Still zero: it
 * sleeps `queuePollIntervalMs`, doubling up to 5000 ms and never past the
 * deadline, then probes again; once it has waited `maxQueueWaitMs` it throws
 * `QueueFull(queue, maxDepth, waitedMs)`. The limit is soft: N producers may
 * overshoot it by (N − 1) × 64 (and one process submitting concurrently
 * against a store whose inserts take more than one event-loop turn by up to
 * one more grant, because the gate is not told when a granted insert lands).
 *
 * @example
 * ```ts
 * store.queueDepthGate = new BackpressureGateCore({ maxQueueDepth: { emails: 10_000 } }, { sleep });
 * await store.submit({ name: "send", queue: "emails" }); // waits while 10 000 emails are queued
 * ```
 */
export class BackpressureGateCore implements QueueDepthGate {
  /** How long a submit may wait for headroom. */
  readonly maxQueueWaitMs: number;
  /** The first sleep after a full probe. */
  readonly queuePollIntervalMs: number;

  readonly #limits: number | ReadonlyMap<string, number>;
  readonly #queues = new Map<string, QueueState>();
  readonly #logger: Logger | undefined;
  readonly #owner: string;
  readonly #sleep: BackpressureGateDeps["sleep"];
  readonly #now: () => number;
  readonly #nextTurn: () => Promise<void>;
  /**
   * One controller per sleeping submit, aborted by `close()`. Per sleep, not
   * one shared signal: hundreds of submits may wait at once, and one signal
   * with that many listeners trips Node's listener-leak warning.
   */
  readonly #sleeping = new Set<AbortController>();
  #closed = false;

  /**
   * @param options - See {@link BackpressureGateOptions}.
   * @param deps - The sleep (required), clock and event-loop yield; see {@link BackpressureGateDeps}.
   * @throws InvalidArgument when an option is out of range or `deps.sleep` is missing.
   */
  constructor(options: BackpressureGateOptions, deps: BackpressureGateDeps) {
    if (!isPlainObject(options)) {
      throw new InvalidArgument("options", `BackpressureGate needs an options object with maxQueueDepth, got ${describe(options)}`);
    }
    this.#limits = normalizeMaxQueueDepth(options.maxQueueDepth);
    const timing = resolveGateTiming(options);
    this.maxQueueWaitMs = timing.maxQueueWaitMs;
    this.queuePollIntervalMs = timing.queuePollIntervalMs;
    this.#logger = options.logger;
    this.#owner = options.owner ?? "backpressure gate";
    if (typeof deps?.sleep !== "function") {
      throw new InvalidArgument("sleep", "BackpressureGateCore needs deps.sleep(ms, signal): the protocol starts no timers of its own");
    }
    const sleep = deps.sleep;
    this.#sleep = sleep;
    this.#now = deps.now ?? (() => performance.now());
    this.#nextTurn = deps.nextTurn ?? (() => sleep(1, new AbortController().signal));
  }

  /** The depth limit of `queue`, or `null` when the queue is not gated. */
  limitFor(queue: string): number | null {
    if (typeof this.#limits === "number") return this.#limits;
    return this.#limits.get(queue) ?? null;
  }

  /** False when the map form names no queue: installing the gate would change nothing. */
  get gatesAnything(): boolean {
    return typeof this.#limits === "number" || this.#limits.size > 0;
  }

  /**
   * One check of `queue`'s depth, never waiting: the gate of a submit inside
   * a caller's transaction (`withTransaction`), where a wait would hold the
   * transaction open (see {@link requireRoomNow}). Resolves at once for an
   * ungated queue; spends no grant.
   *
   * @throws QueueFull (`waitedMs` 0) when the queue has no room.
   */
  async acquireOnce(queue: string, store: TaskStore): Promise<void> {
    const maxDepth = this.limitFor(queue);
    if (maxDepth !== null) await requireRoomNow(store, queue, maxDepth);
  }

  /**
   * Waits until a submit to `queue` may proceed; resolves at once for an
   * ungated queue or while a grant lasts.
   *
   * @throws QueueFull when the queue stayed full for `maxQueueWaitMs`.
   * @throws CairnQError when the gate was closed while waiting.
   * @throws whatever `store.queueDepth` throws.
   */
  async acquire(queue: string, store: TaskStore): Promise<void> {
    const maxDepth = this.limitFor(queue);
    if (maxDepth === null) return;
    this.#throwIfClosed(queue);
    let state = this.#queues.get(queue);
    if (state === undefined) {
      state = { grant: 0, probe: null };
      this.#queues.set(queue, state);
    }
    const startedAt = this.#now();
    const deadline = startedAt + this.maxQueueWaitMs;
    const maxInterval = Math.max(MAX_QUEUE_POLL_INTERVAL_MS, this.queuePollIntervalMs);
    let interval = this.queuePollIntervalMs;
    let announced = false;
    for (;;) {
      // Units may be left by a probe another submit made while this one slept or yielded.
      if (state.grant > 0) {
        state.grant -= 1;
        return;
      }
      const headroom = await this.#probe(queue, maxDepth, state, store);
      if (state.grant > 0) {
        state.grant -= 1;
        return;
      }
      if (headroom > 0) {
        // The probe found room, but submits sharing it took every unit first. Probe again, but
        // only after a macrotask turn, so those submits' inserts can land and be counted:
        // probing at once reads the same headroom and lets this process overshoot the limit by
        // a whole extra grant (measured with MemoryStore: 1000 concurrent submits, limit 100 →
        // 164 enqueued; with the yield, exactly 100).
        await this.#nextTurn();
        continue;
      }
      const waitedMs = this.#now() - startedAt;
      if (waitedMs >= this.maxQueueWaitMs) throw new QueueFull(queue, maxDepth, Math.floor(waitedMs));
      if (!announced) {
        announced = true;
        logSafely(this.#logger, "debug", "queue full, submit waiting for headroom", { queue, maxDepth });
      }
      await this.#sleepUnlessClosed(Math.min(interval, deadline - this.#now()));
      this.#throwIfClosed(queue);
      interval = Math.min(interval * 2, maxInterval);
    }
  }

  /**
   * Wakes every submit waiting for headroom and makes it (and any later
   * acquire on a gated queue) throw: nothing waiting is enqueued. Idempotent.
   */
  close(): void {
    this.#closed = true;
    for (const wake of this.#sleeping) wake.abort();
    this.#sleeping.clear();
  }

  async #sleepUnlessClosed(ms: number): Promise<void> {
    const wake = new AbortController();
    this.#sleeping.add(wake);
    try {
      await this.#sleep(ms, wake.signal);
    } finally {
      this.#sleeping.delete(wake);
    }
  }

  #throwIfClosed(queue: string): void {
    if (this.#closed) {
      throw new CairnQError(
        `the ${this.#owner} was closed while a submit waited for headroom on queue '${queue}', so nothing was submitted; ` +
          `submit through an open ${this.#owner}`,
      );
    }
  }

  #probe(queue: string, maxDepth: number, state: QueueState, store: TaskStore): Promise<number> {
    state.probe ??= store.queueDepth(queue, maxDepth).then(
      (headroom) => {
        state.probe = null;
        state.grant = Math.max(0, Math.min(headroom, MAX_GRANT));
        return headroom;
      },
      (error: unknown) => {
        state.probe = null;
        throw error;
      },
    );
    return state.probe;
  }
}

/**
 * The queue's headroom from one `store.queueDepth(queue, maxDepth)` — read
 * through the caller's transaction when `store` is a transaction view, so its
 * own uncommitted submits count — or `QueueFull` (`waitedMs` 0, nothing
 * written) when there is none. Inside a caller's transaction the gate does
 * not wait (§5.6): waiting would hold that transaction open — on SQLite the
 * database's write lock, so no worker could drain the queue; under MySQL's
 * REPEATABLE READ the snapshot would never see the room.
 *
 * @example
 * ```ts
 * await requireRoomNow(view, "emails", 1000); // QueueFull at once when 1000 are queued
 * ```
 */
export async function requireRoomNow(store: TaskStore, queue: string, maxDepth: number): Promise<number> {
  const headroom = await store.queueDepth(queue, maxDepth);
  if (headroom > 0) return headroom;
  throw new QueueFull(queue, maxDepth, 0, {
    message:
      `queue '${queue}' is full (${maxDepth} queued tasks, the maxQueueDepth limit), so nothing was submitted; inside withTransaction ` +
      "a submit does not wait for room, because waiting would hold your transaction (on SQLite, the database's write lock) open while " +
      `workers try to drain the queue; retry the transaction later, submit after it commits, or add workers for '${queue}'`,
  });
}
