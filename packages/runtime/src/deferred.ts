/** A promise with its settlers exposed. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

/**
 * A promise and the functions that settle it, for code where the settling
 * side is not the one that created the promise (a stop that a signal ends,
 * "the next call to finish").
 *
 * @example
 * ```ts
 * const stopped = deferred<void>();
 * process.once("SIGTERM", () => stopped.resolve());
 * await stopped.promise;
 * ```
 */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * Resolves when `signal` aborts (at once if it already has); `dispose`
 * removes the listener, so racing it against work in a loop does not pile
 * up listeners on a long-lived signal.
 *
 * @example
 * ```ts
 * const aborted = abortPromise(signal);
 * try {
 *   await Promise.race([work, aborted.promise]);
 * } finally {
 *   aborted.dispose();
 * }
 * ```
 */
export function abortPromise(signal: AbortSignal): { readonly promise: Promise<void>; dispose(): void } {
  if (signal.aborted) return { promise: Promise.resolve(), dispose: () => {} };
  let onAbort!: () => void;
  const promise = new Promise<void>((resolve) => {
    onAbort = () => resolve();
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener("abort", onAbort) };
}
