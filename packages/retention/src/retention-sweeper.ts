/**
 * Terminology: a *sweep* drains every rule once; a *batch* is one `purge`
 * call (one bounded statement) of `limit` rows at most; the *schedule* is the
 * loop `sleep intervalMs → sweep → sleep …` between `start()` and `stop()`.
 */
import type { Logger, PurgeInput, TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { DEFAULT_PURGE_LIMIT, describe } from "@cairnq/protocol/adapter";
import { logSafely } from "@cairnq/protocol/sdk";
import type { RetentionPolicy, RetentionRule } from "./retention-rules.js";
import { normalizeRetentionPolicy } from "./retention-rules.js";
import { checkOptions, fallbackLogger, nextTurn, optionalCount, optionalDurationMs, requireHook, sleep } from "@cairnq/runtime";

/** One hour: the protocol's default interval between sweeps (§5.9). */
export const DEFAULT_RETENTION_INTERVAL_MS = 3_600_000;

/**
 * The part of the `TaskStore` contract a sweeper calls: only `purge`.
 *
 * Any `TaskStore` fits; so does a wrapper that counts or delays purges.
 */
export type RetentionStore = Pick<TaskStore, "purge">;

/** What `onError` learns besides the error: the rule being drained and the sweep's progress. */
export interface RetentionErrorInfo {
  /** The rule whose `purge` failed; later batches and later rules were skipped for this sweep. */
  readonly rule: RetentionRule;
  /** Rows the failed sweep had already deleted (they stay deleted). */
  readonly deleted: number;
}

/**
 * Options of {@link RetentionSweeper}. Validated at construction; anything
 * invalid throws `InvalidArgument` naming the field.
 *
 * @example
 * ```ts
 * const DAY = 24 * 3_600_000;
 * const options: RetentionSweeperOptions = {
 *   olderThanMs: { succeeded: DAY, failed: 30 * DAY },
 *   intervalMs: 15 * 60_000,
 *   onError: (err) => console.error("retention failed", err),
 * };
 * ```
 */
export interface RetentionSweeperOptions {
  /**
   * What to delete: one cutoff in ms for all terminal statuses, a per-status
   * map (a status left out is never swept), or a non-empty list of rules
   * `{ queue?, status?, name?, olderThanMs }`, each drained as an
   * independent purge. Cutoffs are measured from `completed_at_ms` on the
   * store's clock.
   */
  olderThanMs: RetentionPolicy;
  /**
   * Milliseconds between sweeps; the first sweep happens one interval after
   * `start()`, not at boot, so restarts in a crash loop do not each run a
   * full sweep. Integer milliseconds ≥ 1; any length is honoured.
   * @default 3_600_000
   */
  intervalMs?: number;
  /**
   * Rows per purge statement (integer ≥ 1). Bounds how long one statement
   * holds the database's write lock; a rule is drained batch after batch
   * until one comes back shorter than this.
   * @default 1000
   */
  limit?: number;
  /**
   * Called when a scheduled sweep fails (the rest of that sweep is abandoned;
   * the schedule goes on). Whatever it throws or rejects with is swallowed:
   * a broken hook never stops retention. It may be async; the next sweep
   * does not wait for it. Not called for direct `sweep()` calls, which
   * reject instead.
   * @default undefined (the failure is only logged)
   */
  onError?: (error: unknown, info: RetentionErrorInfo) => unknown;
  /**
   * Structural logger (`console`, pino, …): `info` after a sweep that
   * deleted rows, `debug` after an empty one, `warn` when a scheduled sweep
   * fails, `error` when `onError` throws. Without a logger and without
   * `onError`, warnings and errors go to stderr (a retention that keeps
   * failing must not look healthy); `null` silences it.
   * @default a stderr logger (warnings and errors only) when `onError` is not given either
   */
  logger?: Logger | null;
}

/**
 * What a client's `retention` option accepts: options for a sweeper it
 * builds and owns, or a sweeper built beforehand. Turn either into a
 * sweeper with {@link RetentionSweeper.from}.
 *
 * @example
 * ```ts
 * const retention: RetentionOptions = { olderThanMs: 7 * 24 * 3_600_000 };
 * const sweeper = RetentionSweeper.from(store, retention);
 * ```
 */
export type RetentionOptions = RetentionSweeperOptions | RetentionSweeper;

/** Every key of {@link RetentionSweeperOptions}, for the unknown-key check. */
export const RETENTION_OPTION_KEYS = ["olderThanMs", "intervalMs", "limit", "onError", "logger"] as const satisfies readonly (keyof RetentionSweeperOptions)[];

/** Marks sweepers from any copy of this package, so `instanceof` survives two copies in one process. */
const SWEEPER_BRAND: symbol = Symbol.for("cairnq.retention.RetentionSweeper");

/** How one sweep ended; never rejected, so the schedule and `stop()` can await it safely. */
type SweepOutcome = { deleted: number; batches: number; durationMs: number } & ({ failed: false } | { failed: true; error: unknown; rule: RetentionRule });

function validatedOptions(options: unknown): RetentionSweeperOptions {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidArgument(
      "options",
      `RetentionSweeper needs an options object such as { olderThanMs: 7 * 24 * 3_600_000 }, got ${describe(options)}`,
    );
  }
  return checkOptions(options, "new RetentionSweeper(store, options)", RETENTION_OPTION_KEYS) as unknown as RetentionSweeperOptions;
}

/** The pause between sweeps: integer milliseconds ≥ 1; any length is honoured (the sleep chains past 2^31 ms). */
function intervalOf(value: unknown): number {
  return optionalDurationMs(value, "intervalMs", DEFAULT_RETENTION_INTERVAL_MS, { min: 1 });
}

/** Rows deleted per purge statement: an integer ≥ 1. */
function limitOf(value: unknown): number {
  return optionalCount(value, "limit", DEFAULT_PURGE_LIMIT);
}

function ruleFields(rule: RetentionRule): Record<string, unknown> {
  return { queue: rule.queue ?? null, status: rule.status ?? null, name: rule.name ?? null, olderThanMs: rule.olderThanMs };
}

/**
 * Deletes terminal tasks on a schedule (protocol v1 §5.9): sleeps
 * `intervalMs`, then drains every rule through `store.purge` in batches of
 * at most `limit` rows, yielding to the event loop between batches, and
 * sleeps again.
 *
 * Only finished tasks are ever deleted — the store tests the terminal status
 * on every purge — and a task's idempotency key goes with it. A finished
 * child whose parent is still queued or running (a parent parked on
 * `ctx.join` is queued) is kept until the parent has finished, so the join
 * never loses its result. Timers are
 * unref'd, so a sweeper never keeps a process alive. `stop()` interrupts the
 * sleep and waits for a sweep in flight (it issues no further batch), so
 * calling it before `store.close()` guarantees no purge outlives the store.
 * At most one sweep runs at a time per sweeper; a `sweep()` called while one
 * is in flight runs after it.
 *
 * @example
 * ```ts
 * import { RetentionSweeper } from "@cairnq/retention";
 * import { SQLiteStore } from "@cairnq/store-sqlite";
 *
 * const DAY = 24 * 3_600_000;
 * const store = new SQLiteStore("cairnq.db");
 * const sweeper = new RetentionSweeper(store, {
 *   olderThanMs: { succeeded: DAY, failed: 30 * DAY, canceled: 7 * DAY },
 *   onError: (err) => console.error("retention sweep failed", err),
 * });
 * sweeper.start();             // first sweep in one hour, then hourly
 * const deleted = await sweeper.sweep(); // or drain right now
 * await sweeper.stop();        // before store.close()
 * await store.close();
 * ```
 */
export class RetentionSweeper {
  static {
    Object.defineProperty(this.prototype, SWEEPER_BRAND, { value: true });
  }

  /** True for a sweeper from any copy of `@cairnq/retention`. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[SWEEPER_BRAND] === true;
  }

  /**
   * Returns `retention` itself when it is already a sweeper, else a new
   * sweeper over `store` built from those options — the one call a client
   * needs to support a `retention` option that takes either.
   *
   * A sweeper passed in keeps the store it was built with.
   *
   * @example
   * ```ts
   * // in a client constructor:
   * this.#sweeper = options.retention === undefined ? null : RetentionSweeper.from(store, options.retention);
   * this.#sweeper?.start();
   * // in close(): await this.#sweeper?.stop(); await store.close();
   * ```
   */
  static from(store: RetentionStore, retention: RetentionOptions): RetentionSweeper {
    return retention instanceof RetentionSweeper ? retention : new RetentionSweeper(store, retention);
  }

  /** The store this sweeper purges. */
  readonly store: RetentionStore;
  /** The validated rules, drained in this order by every sweep. */
  readonly rules: readonly RetentionRule[];
  /** Milliseconds between sweeps. */
  readonly intervalMs: number;
  /** Rows per purge statement. */
  readonly limit: number;

  readonly #onError: RetentionSweeperOptions["onError"];
  readonly #logger: Logger | undefined;
  /** Aborted by `stop()`: ends the schedule's sleep and stops every sweep started before it after its current batch. */
  #halt = new AbortController();
  /** The schedule while started. */
  #loop: Promise<void> | null = null;
  /** The last sweep queued; sweeps run one after the other. Never rejects. */
  #tail: Promise<unknown> = Promise.resolve();

  /**
   * Validates `options` (throwing `InvalidArgument` that names the field) and
   * builds a stopped sweeper; call `start()` to schedule it.
   *
   * @example
   * ```ts
   * const sweeper = new RetentionSweeper(store, { olderThanMs: 7 * 24 * 3_600_000 });
   * ```
   */
  constructor(store: RetentionStore, options: RetentionSweeperOptions) {
    if (typeof store !== "object" || store === null || typeof (store as Partial<RetentionStore>).purge !== "function") {
      throw new InvalidArgument("store", "RetentionSweeper needs a TaskStore (an object with a purge(input) method) as its first argument");
    }
    const opts = validatedOptions(options);
    this.store = store;
    this.rules = normalizeRetentionPolicy(opts.olderThanMs);
    this.intervalMs = intervalOf(opts.intervalMs);
    this.limit = limitOf(opts.limit);
    requireHook(opts.onError, "onError", "(error, info) => void");
    if (opts.logger !== undefined && opts.logger !== null && typeof opts.logger !== "object") {
      throw new InvalidArgument(
        "logger",
        `retention logger must be an object with debug/info/warn/error methods (console or pino fit), or null to silence it; got ${describe(opts.logger)}`,
      );
    }
    this.#onError = opts.onError;
    // Quiet when healthy, never silent when not: as the worker, warnings reach stderr unless told otherwise.
    this.#logger = fallbackLogger(opts.logger, opts.onError);
  }

  /** True between `start()` and `stop()`. */
  get running(): boolean {
    return this.#loop !== null;
  }

  /**
   * Starts the schedule: the first sweep runs one `intervalMs` from now, then
   * one every `intervalMs` after the previous sweep ends. Idempotent; a
   * stopped sweeper can be started again.
   *
   * @example
   * ```ts
   * sweeper.start();
   * sweeper.start(); // no effect: already running
   * ```
   */
  start(): void {
    if (this.#loop !== null) return;
    this.#loop = this.#schedule(this.#halt.signal);
  }

  /**
   * Stops the schedule: interrupts the sleep, lets a sweep in flight finish
   * its current batch (it starts no further one), and resolves once nothing
   * of this sweeper touches the store — including direct `sweep()` calls
   * made before `stop()`. Idempotent; never rejects.
   *
   * @example
   * ```ts
   * await sweeper.stop();
   * await store.close(); // safe: no purge is left running
   * ```
   */
  async stop(): Promise<void> {
    const loop = this.#loop;
    this.#loop = null;
    this.#halt.abort();
    this.#halt = new AbortController();
    await loop;
    await this.#tail;
  }

  /**
   * Drains every rule now, batch by batch, and resolves with the number of
   * rows deleted. Rejects with the store's error if a purge fails (rows
   * deleted before the failure stay deleted; later rules are skipped). A
   * `stop()` during the sweep ends it after the current batch and resolves
   * with the rows deleted so far. Runs after any sweep already in flight.
   *
   * @example
   * ```ts
   * const deleted = await sweeper.sweep();
   * console.log(`deleted ${deleted} finished tasks`);
   * ```
   */
  async sweep(): Promise<number> {
    const outcome = await this.#enqueue(this.#halt.signal);
    if (outcome.failed) throw outcome.error;
    return outcome.deleted;
  }

  #enqueue(signal: AbortSignal): Promise<SweepOutcome> {
    const run = this.#tail.then(() => this.#drain(signal));
    this.#tail = run;
    return run;
  }

  async #schedule(signal: AbortSignal): Promise<void> {
    for (;;) {
      // Unref'd: a sweeper is housekeeping and must never be the reason a process stays alive.
      await sleep(this.intervalMs, { signal, unref: true });
      if (signal.aborted) return;
      const outcome = await this.#enqueue(signal);
      if (outcome.failed) this.#report(outcome.error, { rule: outcome.rule, deleted: outcome.deleted });
    }
  }

  async #drain(signal: AbortSignal): Promise<SweepOutcome> {
    const startedAt = performance.now();
    let deleted = 0;
    let batches = 0;
    for (const rule of this.rules) {
      const input: PurgeInput = { ...rule, limit: this.limit };
      for (;;) {
        // Between batches, not before the first: a sweep that finds nothing stays one statement. A macrotask,
        // not a microtask, so queued I/O runs between the batches of a large backlog.
        if (batches > 0) await nextTurn();
        if (signal.aborted) return this.#finished({ deleted, batches, startedAt });
        let ids: unknown;
        try {
          ids = await this.store.purge(input);
          if (!Array.isArray(ids)) throw new TypeError(`store.purge returned ${typeof ids}, expected an array of deleted task ids`);
        } catch (error) {
          return { deleted, batches, durationMs: performance.now() - startedAt, failed: true, error, rule };
        }
        batches += 1;
        deleted += ids.length;
        if (ids.length < this.limit) break;
      }
    }
    return this.#finished({ deleted, batches, startedAt });
  }

  #finished(progress: { deleted: number; batches: number; startedAt: number }): SweepOutcome {
    const durationMs = performance.now() - progress.startedAt;
    const fields = { deleted: progress.deleted, batches: progress.batches, durationMs };
    if (progress.deleted > 0) logSafely(this.#logger, "info", `retention sweep deleted ${progress.deleted} finished tasks`, fields);
    else logSafely(this.#logger, "debug", "retention sweep found nothing to delete", fields);
    return { deleted: progress.deleted, batches: progress.batches, durationMs, failed: false };
  }

  #report(error: unknown, info: RetentionErrorInfo): void {
    logSafely(this.#logger, "warn", "retention sweep failed; the rest of this sweep was skipped and the next runs on schedule", {
      ...ruleFields(info.rule),
      deleted: info.deleted,
      error,
    });
    const onError = this.#onError;
    if (onError === undefined) return;
    const hookFailed = (hookError: unknown): void => {
      logSafely(this.#logger, "error", "retention onError threw; retention goes on", { error: hookError });
    };
    try {
      const returned = onError(error, info);
      // An async hook must not leave an unhandled rejection behind.
      if (returned instanceof Promise) returned.catch(hookFailed);
    } catch (hookError) {
      hookFailed(hookError);
    }
  }
}
