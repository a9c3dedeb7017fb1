/**
 * The two waits a sweeper makes: the long sleep between sweeps and the
 * zero-length yield between purge batches.
 */

/** `setTimeout` clamps larger delays to 1 ms (with a warning), so long sleeps are chained. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Resolves after `ms`, or as soon as `signal` aborts; never rejects.
 *
 * Every timer is unref'd: a sweeper is housekeeping and must never be the
 * reason a process stays alive. An interval longer than Node's timer range
 * (about 24.8 days) is slept in chunks rather than clamped.
 */
export function sleepUnref(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    let remaining = ms;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    const arm = (): void => {
      const step = Math.min(remaining, MAX_TIMER_MS);
      remaining -= step;
      timer = setTimeout(() => (remaining > 0 ? arm() : finish()), step);
      timer.unref();
    };
    signal.addEventListener("abort", finish, { once: true });
    arm();
  });
}

/**
 * Lets queued I/O and timers run before the next purge batch.
 *
 * `setImmediate` rather than a resolved promise: a microtask would run before
 * any I/O callback, so a sweep over a large backlog would still hold the
 * event loop from its first batch to its last.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(resolve);
  });
}
