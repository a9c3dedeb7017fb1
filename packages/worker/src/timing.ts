/**
 * Small timer helpers. Timers are unref'd by default: the running worker keeps
 * the process alive by its own handle.
 */

/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects).
 *
 * @param unref - Let the process exit during the sleep. Pass `false` for a
 *   sleep someone awaits outside the worker's run (a gated submit), which
 *   must hold the process open like any pending I/O.
 */
export function sleep(ms: number, signal?: AbortSignal, unref = true): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true || ms <= 0) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    if (unref) timer.unref();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Resolves after one macrotask turn (`setImmediate`), once I/O callbacks already due have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A promise with its resolver exposed. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Resolves when `signal` aborts; the listener is removed by `dispose`. */
export function abortPromise(signal: AbortSignal): { promise: Promise<void>; dispose(): void } {
  if (signal.aborted) return { promise: Promise.resolve(), dispose: () => {} };
  let onAbort!: () => void;
  const promise = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener("abort", onAbort) };
}
