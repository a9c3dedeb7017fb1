/**
 * `CairnQ`, the client: what an API process uses to submit tasks and read,
 * wait for, cancel, retry and purge them. It talks to the database only
 * through the `TaskStore` contract, so the same code runs on any store.
 */
import type {
  Conflict,
  ListInput,
  PurgeInput,
  QueueStats,
  RetryOptions,
  SubmitInput,
  Task,
  TaskDef,
  TaskRef,
  TaskStore,
} from "@cairnq/protocol";
import { InvalidArgument, requireName, TaskCanceled, TaskFailed } from "@cairnq/protocol";
import type { MaxQueueDepth } from "./backpressure-gate.js";
import { BackpressureGate, resolveGateTiming } from "./backpressure-gate.js";
import type { Logger } from "./logger.js";
import { log } from "./logger.js";
import type { WaitOptions } from "./wait.js";
import { resolveWaitOptions, waitForTask } from "./wait.js";
import type { StopWatching, WatchOptions, WatchSignal } from "./watch.js";
import { watchStore } from "./watch.js";

/**
 * Something that deletes old terminal tasks on a schedule — in practice a
 * `RetentionSweeper` from `@cairnq/retention` — whose life cycle the client
 * owns.
 *
 * The client calls `start()` once, when it connects (`connect()`, or lazily on
 * its first operation), and awaits `stop()` in `close()` *before* closing the
 * store, so a sweep in flight never runs against a closed store. Any object
 * with these two methods fits.
 */
export interface RetentionHook {
  /** Starts the schedule; must not throw for an already-started hook. */
  start(): void;
  /** Stops the schedule and resolves once a sweep in flight has finished. */
  stop(): Promise<void>;
}

/** Options of {@link CairnQ}. */
export interface CairnQOptions {
  /**
   * Backpressure (§5.6): the most `queued` tasks a queue may hold before a
   * submit waits for room — an integer ≥ 1 for every queue, or an object
   * `{ [queue]: limit }` gating only the named queues. The gate is installed
   * on `store.queueDepthGate`, so child submits from workers sharing this
   * store object are gated too. A soft limit: N producers may overshoot it by
   * (N − 1) × 64. @default undefined (no limit)
   */
  maxQueueDepth?: MaxQueueDepth | undefined;
  /**
   * How long a gated submit waits for room before it rejects with
   * `QueueFull` (nothing enqueued). Integer ≥ 0. @default 600000
   */
  maxQueueWaitMs?: number | undefined;
  /** First sleep between depth probes while a queue is full; doubles up to 5000 ms. Integer ≥ 1. @default 250 */
  queuePollIntervalMs?: number | undefined;
  /**
   * A retention sweeper (`new RetentionSweeper(store, { olderThanMs })` from
   * `@cairnq/retention`) for the client to start when it connects and stop
   * in `close()`, before the store closes. @default undefined (nothing is purged automatically)
   */
  retention?: RetentionHook | null | undefined;
  /** Structural logger (`console`, pino, …). @default undefined (silent) */
  logger?: Logger | undefined;
}

/** Per-submit options; a {@link TaskDef}'s `queue`, `maxAttempts` and `priority` are defaults these override. */
export interface SubmitOptions {
  /** Business key: at most one current task per key (§5.1). @default null */
  key?: string | null | undefined;
  /** What a submit does when `key` already points at a task. @default "reuse" */
  conflict?: Conflict | undefined;
  /** @default the TaskDef's queue, else "default" */
  queue?: string | undefined;
  /** Higher is claimed first; a 32-bit integer. @default the TaskDef's priority, else 0 */
  priority?: number | undefined;
  /** Claims allowed before a failure is final; integer ≥ 1. @default the TaskDef's maxAttempts, else 3 */
  maxAttempts?: number | undefined;
  /** Do not claim before this many ms from now; integer ≥ 0. @default 0 */
  runAtDelayMs?: number | undefined;
  /** Groups related tasks for `list({ correlationId })`; copied to child tasks. @default null */
  correlationId?: string | null | undefined;
  /** Free-form JSON object stored with the task. @default {} */
  metadata?: Record<string, unknown> | null | undefined;
  /** The task that submitted this one (set by a worker's `ctx.submit`). @default null */
  parentId?: string | null | undefined;
  /** The root of the task tree. @default the new task's id */
  rootId?: string | null | undefined;
}

/** Options of {@link CairnQ.call}: submit options plus how to wait. */
export interface CallOptions extends SubmitOptions {
  /** Give up with `TaskTimeout` after this long (the task keeps running). Integer ≥ 0. @default 30000 */
  waitTimeoutMs?: number | undefined;
  /** First poll interval. @default 100 */
  pollMs?: number | undefined;
  /** Largest poll interval. @default 500 */
  maxPollMs?: number | undefined;
  /** Aborts the wait (not the task): rejects with `signal.reason`. @default undefined */
  signal?: AbortSignal | undefined;
}

/**
 * Options of {@link CairnQ.purge}. Unlike the store's input, `olderThanMs` is
 * required: `0` deletes every terminal task, which should be said explicitly.
 */
export interface PurgeOptions extends Omit<PurgeInput, "olderThanMs"> {
  /** Delete only rows completed more than this long ago; `0` = every terminal row. */
  olderThanMs: number;
}

/**
 * The payload and options arguments after a {@link TaskDef}: the payload is
 * optional only when the definition's payload type accepts `undefined`.
 */
export type PayloadArgs<P, O> = undefined extends P ? [payload?: P, options?: O] : [payload: P, options?: O];

const SUBMIT_KEYS = [
  "key",
  "conflict",
  "queue",
  "priority",
  "maxAttempts",
  "runAtDelayMs",
  "correlationId",
  "metadata",
  "parentId",
  "rootId",
] as const satisfies readonly (keyof SubmitOptions)[];
const CALL_KEYS = [...SUBMIT_KEYS, "waitTimeoutMs", "pollMs", "maxPollMs", "signal"] as const satisfies readonly (keyof CallOptions)[];
const WAIT_KEYS = ["timeoutMs", "pollMs", "maxPollMs", "signal"] as const satisfies readonly (keyof WaitOptions)[];
const CLIENT_KEYS = ["maxQueueDepth", "maxQueueWaitMs", "queuePollIntervalMs", "retention", "logger"] as const satisfies readonly (keyof CairnQOptions)[];
const STORE_METHODS = ["connect", "close", "submit", "get", "getByKey", "getStatus", "getStatusByKey", "taskDoneWake", "subscribe"] as const;

/**
 * Rejects anything but a plain options object, and keys that are not
 * options: a misspelt option (`delayMs`) silently ignored would be worse.
 */
function checkOptions(value: unknown, what: string, allowed: readonly string[]): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidArgument("options", `${what} options must be an object, got ${Array.isArray(value) ? "an array" : typeof value}`);
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new InvalidArgument(key, `'${key}' is not an option of ${what}; the options are ${allowed.join(", ")}`);
    }
  }
  return value as Record<string, unknown>;
}

interface ResolvedTask {
  readonly name: string;
  readonly queue?: string | undefined;
  readonly maxAttempts?: number | undefined;
  readonly priority?: number | undefined;
}

function resolveTask(task: unknown): ResolvedTask {
  if (typeof task === "string" && task !== "") return { name: task };
  if (typeof task === "object" && task !== null && typeof (task as { name?: unknown }).name === "string" && (task as TaskDef).name !== "") {
    return task as TaskDef;
  }
  throw new InvalidArgument(
    "name",
    "the first argument must be a task name (a non-empty string) or a TaskDef from defineTask(...): workers find handlers by that name",
  );
}

/**
 * The CairnQ client: submits tasks into the store and reads, waits for,
 * cancels, retries and purges them. It never runs handlers (that is
 * `Worker`), holds no connection of its own and keeps no state beyond the
 * backpressure grant, so any number of clients may share a database.
 *
 * Every method connects lazily; `connect()` only makes the first call's cost
 * (migrations, version guard) explicit. `close()` stops the retention hook,
 * then closes the store.
 *
 * @example
 * ```ts
 * import { CairnQ } from "@cairnq/client";
 * import { defineTask } from "@cairnq/protocol";
 * import { SQLiteStore } from "@cairnq/store-sqlite";
 *
 * const summarize = defineTask<{ url: string }, { summary: string }>("summarize", { queue: "llm" });
 * const client = new CairnQ(new SQLiteStore("cairnq.db"), { maxQueueDepth: 10_000 });
 *
 * const task = await client.submit(summarize, { url: "https://example.com" }, { key: "example.com" });
 * const done = await client.wait(task.id, { timeoutMs: 60_000 }); // the terminal row, any status
 * const { summary } = await client.call(summarize, { url: "https://example.org" }); // result, or throws
 * await client.close();
 * ```
 */
export class CairnQ {
  /** The store every operation goes through. */
  readonly store: TaskStore;

  readonly #gate: BackpressureGate | null;
  readonly #retention: RetentionHook | null;
  readonly #logger: Logger | undefined;
  #retentionStarted = false;
  #closing: Promise<void> | null = null;

  /**
   * @param store - Any `TaskStore` (`SQLiteStore`, `PostgresStore`, a third-party adapter).
   * @param options - See {@link CairnQOptions}.
   * @throws InvalidArgument when `store` is not a store or an option is invalid; nothing is installed then.
   * @example
   * ```ts
   * const client = new CairnQ(store, { maxQueueDepth: { emails: 5000 }, maxQueueWaitMs: 30_000 });
   * ```
   */
  constructor(store: TaskStore, options: CairnQOptions = {}) {
    const missing =
      typeof store === "object" && store !== null ? STORE_METHODS.filter((m) => typeof (store as unknown as Record<string, unknown>)[m] !== "function") : STORE_METHODS;
    if (missing.length > 0) {
      throw new InvalidArgument(
        "store",
        `new CairnQ(store) needs a TaskStore (e.g. new SQLiteStore("cairnq.db")); the value given lacks ${missing.join(", ")}`,
      );
    }
    const opts = checkOptions(options, "new CairnQ(store, options)", CLIENT_KEYS) as CairnQOptions;
    this.store = store;
    this.#logger = opts.logger ?? undefined;
    if (opts.logger !== undefined && (typeof opts.logger !== "object" || opts.logger === null)) {
      throw new InvalidArgument("logger", "logger must be an object with debug/info/warn/error(message, fields) methods, such as console");
    }
    const retention = opts.retention ?? null;
    if (retention !== null && (typeof retention.start !== "function" || typeof retention.stop !== "function")) {
      throw new InvalidArgument(
        "retention",
        "retention must have start() and stop() methods, e.g. new RetentionSweeper(store, { olderThanMs: 7 * 24 * 3600_000 }) from @cairnq/retention",
      );
    }
    this.#retention = retention;

    const timing = resolveGateTiming(opts);
    if (opts.maxQueueDepth === undefined) {
      this.#gate = null;
    } else {
      const gate = new BackpressureGate({ maxQueueDepth: opts.maxQueueDepth, ...timing, logger: this.#logger });
      this.#gate = gate.gatesAnything ? gate : null;
    }
    if (this.#gate !== null) {
      if (store.queueDepthGate !== null && store.queueDepthGate !== undefined) {
        log(this.#logger, "warn", "replacing the queue-depth gate already installed on this store; the last client's maxQueueDepth applies", {});
      }
      store.queueDepthGate = this.#gate;
    }
  }

  /**
   * Opens the store (migrations, version guard) and starts the retention
   * hook. Optional — every method connects lazily — but it surfaces a bad
   * database at startup rather than on the first request. Idempotent.
   *
   * @example
   * ```ts
   * await client.connect(); // fail fast at boot
   * ```
   */
  async connect(): Promise<void> {
    await this.store.connect();
    this.#startRetention();
  }

  /**
   * Stops the client: wakes submits waiting on the backpressure gate (they
   * reject, nothing enqueued) and uninstalls the gate, awaits the retention
   * hook's `stop()` (a sweep in flight finishes first), then closes the
   * store. Idempotent; concurrent calls share one close.
   *
   * @example
   * ```ts
   * process.on("SIGTERM", () => void client.close());
   * ```
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (this.#gate !== null) {
      this.#gate.close();
      if (this.store.queueDepthGate === this.#gate) this.store.queueDepthGate = null;
    }
    try {
      if (this.#retention !== null) await this.#retention.stop();
    } finally {
      await this.store.close();
    }
  }

  #startRetention(): void {
    if (this.#retentionStarted || this.#retention === null || this.#closing !== null) return;
    this.#retentionStarted = true;
    this.#retention.start();
  }

  /** The store, after making sure the retention hook runs. */
  #use(): TaskStore {
    if (!this.#retentionStarted) this.#startRetention();
    return this.store;
  }

  /**
   * Submits a task (T1) and returns its row, `queued` — or, with a `key`, the
   * row the conflict strategy chose (§5.1). Passes the backpressure gate
   * first when `maxQueueDepth` applies to the queue.
   *
   * A {@link TaskDef} supplies the name, types the payload and result, and
   * gives defaults for `queue`, `maxAttempts` and `priority`.
   *
   * @throws InvalidArgument / SerializationError for bad input (nothing written).
   * @throws AlreadyExists with `conflict: "reject"` when the key is taken.
   * @throws QueueFull when the queue stayed full for `maxQueueWaitMs`.
   * @example
   * ```ts
   * const task = await client.submit(sendEmail, { to: "a@example.com" }, { key: `welcome:${userId}` });
   * await client.submit("report", { month: "2024-05" }, { queue: "slow", runAtDelayMs: 60_000 });
   * ```
   */
  submit<P, R>(task: TaskDef<P, R>, ...args: PayloadArgs<P, SubmitOptions>): Promise<Task<P, R>>;
  submit<P = unknown, R = unknown>(name: string, payload?: P, options?: SubmitOptions): Promise<Task<P, R>>;
  async submit(task: string | TaskDef, payload?: unknown, options?: SubmitOptions): Promise<Task> {
    return this.#use().submit(this.#submitInput(task, payload, checkOptions(options, "submit", SUBMIT_KEYS)));
  }

  #submitInput(task: unknown, payload: unknown, options: SubmitOptions): SubmitInput {
    const def = resolveTask(task);
    return {
      name: def.name,
      payload,
      queue: options.queue ?? def.queue,
      maxAttempts: options.maxAttempts ?? def.maxAttempts,
      priority: options.priority ?? def.priority,
      key: options.key,
      conflict: options.conflict,
      runAtDelayMs: options.runAtDelayMs,
      correlationId: options.correlationId,
      metadata: options.metadata,
      parentId: options.parentId,
      rootId: options.rootId,
    };
  }

  /** The full row of task `id`, or `null`. */
  get(id: string): Promise<Task | null> {
    return this.#use().get(id);
  }

  /** The full row the key currently points at, or `null`. */
  getByKey(key: string): Promise<Task | null> {
    return this.#use().getByKey(key);
  }

  /** `{ id, status }` of task `id` (a cheap probe), or `null`. */
  getStatus(id: string): Promise<TaskRef | null> {
    return this.#use().getStatus(id);
  }

  /** `{ id, status }` of the task the key points at now (after a `replace`, the new one), or `null`. */
  getStatusByKey(key: string): Promise<TaskRef | null> {
    return this.#use().getStatusByKey(key);
  }

  /**
   * Rows matching every given filter, newest first (`created_at_ms DESC`).
   *
   * @example
   * ```ts
   * const failed = await client.list({ queue: "emails", status: "failed", limit: 20 });
   * ```
   */
  list(input?: ListInput): Promise<Task[]> {
    return this.#use().list(input);
  }

  /** Row counts by queue and status, zero-filled; `queue` restricts to one queue (present even if empty). */
  stats(queue?: string): Promise<QueueStats> {
    return this.#use().stats(queue);
  }

  /** Headroom of `queue` under `maxDepth`: `maxDepth − queued` (floor 0), reading at most `maxDepth` rows. */
  queueDepth(queue: string, maxDepth: number): Promise<number> {
    return this.#use().queueDepth(queue, maxDepth);
  }

  /**
   * Cancels task `id`: a queued task ends `canceled` now; a running one is
   * flagged and ends `canceled` when its handler settles (cancel wins).
   *
   * @returns the updated row, or `null` when the task is terminal or missing.
   */
  cancel(id: string): Promise<Task | null> {
    return this.#use().cancel(id);
  }

  /** {@link CairnQ.cancel} for the task the key points at; `null` for an unknown key. */
  cancelByKey(key: string): Promise<Task | null> {
    return this.#use().cancelByKey(key);
  }

  /**
   * Requeues a `failed` or `canceled` task, clearing its error. Without
   * `resetAttempt` an exhausted task gets exactly one more attempt.
   *
   * @returns the requeued row, or `null` unless the task was failed or canceled.
   */
  retry(id: string, options?: RetryOptions): Promise<Task | null> {
    return this.#use().retry(id, options);
  }

  /** {@link CairnQ.retry} for the task the key points at. */
  retryByKey(key: string, options?: RetryOptions): Promise<Task | null> {
    return this.#use().retryByKey(key, options);
  }

  /**
   * Deletes up to `limit` (default 1000) terminal tasks completed more than
   * `olderThanMs` ago, oldest first, freeing their keys. Loop until fewer than
   * `limit` ids come back to delete everything eligible.
   *
   * @returns the deleted ids.
   * @example
   * ```ts
   * const ids = await client.purge({ olderThanMs: 7 * 24 * 3600_000, status: "succeeded" });
   * ```
   */
  async purge(options: PurgeOptions): Promise<string[]> {
    if (typeof options !== "object" || options === null || options.olderThanMs === undefined) {
      throw new InvalidArgument(
        "olderThanMs",
        "purge needs olderThanMs, e.g. purge({ olderThanMs: 86_400_000 }); pass olderThanMs: 0 to delete every terminal task",
      );
    }
    return this.#use().purge(options);
  }

  /**
   * Waits until task `id` is terminal and returns its row — whatever the
   * status: check `task.status` (or use {@link CairnQ.call} to get the result
   * or an error). Polls the status (§7) at 100, 150, 225, 337, 500 ms…, waking
   * early when the store pushes a done signal.
   *
   * @throws TaskTimeout after `timeoutMs` (default 30000); its `task` and
   *   message say where the task was stuck. The task is unaffected.
   * @example
   * ```ts
   * const task = await client.wait(id, { timeoutMs: 10_000 });
   * if (task.status === "succeeded") console.log(task.result);
   * ```
   */
  async wait(id: string, options: WaitOptions = {}): Promise<Task> {
    const resolved = resolveWaitOptions(checkOptions(options, "wait", WAIT_KEYS));
    return waitForTask(this.#use(), { id: requireName(id, "id") }, resolved);
  }

  /**
   * {@link CairnQ.wait} by business key. The key is re-resolved on every
   * poll, so the wait follows a `replace` to the new task, and it waits for a
   * key that has no task yet.
   *
   * @throws TaskTimeout (`key` set; `taskId` the last task seen, else the key).
   */
  async waitByKey(key: string, options: WaitOptions = {}): Promise<Task> {
    const resolved = resolveWaitOptions(checkOptions(options, "waitByKey", WAIT_KEYS));
    return waitForTask(this.#use(), { key: requireName(key, "key") }, resolved);
  }

  /**
   * Submits a task and waits for its outcome, like a function call: resolves
   * with the result (`null` when the handler returned nothing) and rejects
   * on any other outcome. Typed by a {@link TaskDef}.
   *
   * @throws TaskFailed with the stored envelope (`code`, `message`, `retryable`, `details`) when it ended failed.
   * @throws TaskCanceled when it ended canceled.
   * @throws TaskTimeout after `waitTimeoutMs` (default 30000); the task keeps running.
   * @throws whatever {@link CairnQ.submit} throws.
   * @example
   * ```ts
   * try {
   *   const { summary } = await client.call(summarize, { url }, { waitTimeoutMs: 60_000 });
   * } catch (err) {
   *   if (err instanceof TaskFailed && err.code === "bad_input") return reply(400, err.message);
   *   throw err;
   * }
   * ```
   */
  call<P, R>(task: TaskDef<P, R>, ...args: PayloadArgs<P, CallOptions>): Promise<R>;
  call<R = unknown, P = unknown>(name: string, payload?: P, options?: CallOptions): Promise<R>;
  async call(task: string | TaskDef, payload?: unknown, options?: CallOptions): Promise<unknown> {
    const opts = checkOptions(options, "call", CALL_KEYS) as CallOptions;
    const wait = resolveWaitOptions(
      { timeoutMs: opts.waitTimeoutMs, pollMs: opts.pollMs, maxPollMs: opts.maxPollMs, signal: opts.signal },
      "waitTimeoutMs",
    );
    const submitted = await this.#use().submit(this.#submitInput(task, payload, opts));
    const done = await waitForTask(this.store, { id: submitted.id }, wait);
    switch (done.status) {
      case "succeeded":
        return done.result;
      case "failed":
        throw new TaskFailed(done.error, { taskId: done.id });
      case "canceled":
        throw new TaskCanceled(done.id);
      case "queued":
      case "running":
        // waitForTask returns terminal rows only.
        throw new Error(`unreachable: wait returned a ${done.status} task`);
    }
  }

  /**
   * Calls `onSignal` whenever something may have changed: `{ reason: "queued", queue }`
   * and `{ reason: "done", taskId }` from the store's push signals (Postgres;
   * `queued` filtered by `queues`), and `{ reason: "poll" }` every `pollMs`
   * (default 2000; the timer never holds the process open). A signal means
   * "re-read", never "this changed". Errors thrown by `onSignal` go to
   * `logger.error`.
   *
   * @returns a function that stops watching (idempotent).
   * @example
   * ```ts
   * const stop = client.watch({ queues: ["emails"] }, () => void refreshDashboard());
   * // later
   * stop();
   * ```
   */
  watch(options: WatchOptions, onSignal: (signal: WatchSignal) => void | Promise<void>): StopWatching {
    return watchStore(this.#use(), options, onSignal, this.#logger);
  }
}
