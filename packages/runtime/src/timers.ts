/**
 * The one sleep and the one callback timer every CairnQ package uses.
 *
 * Node's `setTimeout` takes a 32-bit signed delay: anything above
 * 2^31 − 1 ms (about 24.8 days) is replaced by 1 ms, with only a process
 * warning. A `maxRunMs` of 30 days would then fire at once. Both helpers here
 * chain timers of at most {@link MAX_TIMER_MS} until the full duration has
 * passed, so every non-negative duration is honoured.
 */

/** The longest delay one Node timer honours; longer ones fire after ~1 ms, so they are chained. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Options of {@link sleep} and {@link startTimer}. */
export interface TimerOptions {
  /** Ends a sleep early (see {@link SleepOptions.rejectOnAbort}); cancels a timer without calling it. @default undefined */
  signal?: AbortSignal | undefined;
  /**
   * Let the process exit while only this timer is pending. Sleeps inside a
   * long-lived object that holds its own keep-alive handle (a running worker,
   * a store's idle wait) are unref'd; a sleep someone awaits outside such an
   * object (a gated submit, a client wait) must stay ref'd, or `await` at the
   * top of a script would end the process mid-wait.
   * @default false
   */
  unref?: boolean | undefined;
}

/** Options of {@link sleep}. */
export interface SleepOptions extends TimerOptions {
  /**
   * On abort, reject with `signal.reason` instead of resolving. Most callers
   * treat an abort as "stop waiting, then look again", so the default resolves.
   * @default false
   */
  rejectOnAbort?: boolean | undefined;
}

/** A running {@link startTimer} timer. */
export interface TimerHandle {
  /** Cancels the timer (idempotent; a no-op once it fired). */
  clear(): void;
  /** Whether the callback ran. */
  readonly fired: boolean;
}

/**
 * Calls `callback` once, `ms` milliseconds from now, however large `ms` is
 * (timers are chained past {@link MAX_TIMER_MS}). An abort of
 * `options.signal` cancels it. `ms` ≤ 0 (or not a number) fires on the next
 * timer turn, as `setTimeout(fn, 0)` would.
 *
 * @example
 * ```ts
 * const timer = startTimer(() => controller.abort(), maxRunMs, { unref: true });
 * // … later
 * timer.clear();
 * ```
 */
export function startTimer(callback: () => void, ms: number, options: TimerOptions = {}): TimerHandle {
  return new ChainedTimer(callback, ms > 0 ? ms : 0, options.signal, options.unref === true);
}

/**
 * {@link startTimer}'s handle: one object with its methods on the prototype,
 * the timeout's callback shared by all timers (the handle is its argument),
 * instead of five closures over one context and a handle literal per timer.
 * A worker starts one per call (the heartbeat), so this is on the per-task
 * path, and the closure form cost far more than its size: in the c64 drain
 * (`bench/run.mjs --only drain`, 10,000 no-op tasks, worker child) peak RSS
 * fell from 119.6–124.9 to 106.2–111.2 MB on Postgres and from 118.8–119.5
 * to 103.3–103.7 MB on SQLite, peak V8 heap from 37–53 to 25–39 MB; a
 * sampling heap profile of what survived minor GCs fell from 65.6 to 42.5 MB,
 * the heartbeat's timer and the call objects it reached no longer in it.
 */
class ChainedTimer implements TimerHandle {
  readonly #callback: () => void;
  readonly #signal: AbortSignal | undefined;
  readonly #unref: boolean;
  #remaining: number;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #done = false;
  #fired = false;
  /** Bound once, only when there is a signal to listen to. */
  readonly #onAbort: (() => void) | undefined;

  constructor(callback: () => void, ms: number, signal: AbortSignal | undefined, unref: boolean) {
    this.#callback = callback;
    this.#remaining = ms;
    this.#signal = signal;
    this.#unref = unref;
    this.#onAbort = signal === undefined ? undefined : () => this.clear();
    if (signal?.aborted === true) {
      this.#done = true;
      return;
    }
    if (this.#onAbort !== undefined) signal?.addEventListener("abort", this.#onAbort, { once: true });
    this.#arm();
  }

  get fired(): boolean {
    return this.#fired;
  }

  clear(): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener("abort", this.#onAbort);
  }

  #arm(): void {
    const step = Math.min(this.#remaining, MAX_TIMER_MS);
    this.#remaining -= step;
    this.#timer = setTimeout(fireTimer, step, this);
    if (this.#unref) this.#timer.unref();
  }

  /** The timeout elapsed: arm the next link of the chain, or run the callback. @internal */
  elapsed(): void {
    if (this.#done) return;
    if (this.#remaining > 0) {
      this.#arm();
      return;
    }
    this.#done = true;
    this.#fired = true;
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#callback();
  }
}

/** Shared by every {@link ChainedTimer} (the timer is passed as the timeout's argument), so no closure per timer. */
function fireTimer(timer: ChainedTimer): void {
  timer.elapsed();
}

/**
 * Resolves after `ms` milliseconds (chained past {@link MAX_TIMER_MS}, so
 * 30 days means 30 days), or as soon as `options.signal` aborts: then it
 * resolves, or with `rejectOnAbort` rejects with the signal's reason.
 * `ms` ≤ 0 (or not a number) resolves at once without a timer.
 *
 * @example
 * ```ts
 * await sleep(500, { signal, unref: true });
 * ```
 */
export function sleep(ms: number, options: SleepOptions = {}): Promise<void> {
  return sleepOn(startTimer, ms, options);
}

/** A function with {@link startTimer}'s contract: what {@link sleepOn} builds a sleep from. */
export type StartTimer = (callback: () => void, ms: number, options?: TimerOptions) => TimerHandle;

/**
 * {@link sleep}'s semantics over any timer with {@link startTimer}'s
 * contract, so that a clock other than the system's (a virtual one in tests)
 * gets the same abort handling without writing it again.
 *
 * @example
 * ```ts
 * const sleepVirtually = (ms: number, options?: SleepOptions) => sleepOn(virtualStartTimer, ms, options);
 * ```
 */
export function sleepOn(start: StartTimer, ms: number, options: SleepOptions = {}): Promise<void> {
  const { signal, rejectOnAbort = false } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      if (rejectOnAbort) reject(signal.reason as Error);
      else resolve();
      return;
    }
    if (!(ms > 0)) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      timer.clear();
      if (rejectOnAbort) reject((signal as AbortSignal).reason as Error);
      else resolve();
    };
    const timer = start(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      ms,
      { unref: options.unref },
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Resolves after one macrotask turn (`setImmediate`), once I/O callbacks that
 * are already due have run — unlike a resolved promise, whose continuation
 * runs before any of them.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Milliseconds from a monotonic clock: deadlines must not move when the wall clock is adjusted. */
export function monotonicMs(): number {
  return performance.now();
}
