/**
 * Resolves after `ms`, or as soon as `signal` aborts (it never rejects; the
 * caller decides what an abort means).
 *
 * The timer is deliberately *not* unref'd: a caller awaits this sleep (a
 * submit waiting for headroom, a wait with no task yet), and an unref'd timer
 * would let Node exit in the middle of that await with no error.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted === true) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Milliseconds from a monotonic clock: deadlines must not move when the wall clock is adjusted. */
export function monotonicMs(): number {
  return performance.now();
}

/**
 * Resolves after one macrotask turn (`setImmediate`), so I/O callbacks that
 * are already due — the inserts of submits a gate just let through — run
 * first.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
