/** Period of the keep-alive interval: it never needs to fire, only to exist. */
const KEEP_ALIVE_PERIOD_MS = 2 ** 30;

/** A handle that holds the process open until released. */
export interface KeepAlive {
  /** Lets the process exit again. Idempotent. */
  release(): void;
}

/**
 * Holds the Node process open until `release()` is called.
 *
 * CairnQ stores sleep on unref'd timers and unref their idle connections, so
 * an idle store never pins a process. Whatever someone is *awaiting* — a
 * running worker, a client `wait` — must then keep the process alive itself,
 * or `await worker.run()` at the top of a script ends the process with an
 * unsettled top-level await (exit code 13).
 *
 * @example
 * ```ts
 * const hold = keepAlive();
 * try {
 *   await longWait();
 * } finally {
 *   hold.release();
 * }
 * ```
 */
export function keepAlive(): KeepAlive {
  let timer: ReturnType<typeof setInterval> | null = setInterval(() => {}, KEEP_ALIVE_PERIOD_MS);
  return {
    release(): void {
      if (timer === null) return;
      clearInterval(timer);
      timer = null;
    },
  };
}
