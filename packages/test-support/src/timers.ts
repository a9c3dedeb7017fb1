/**
 * The timer-leak guard. A sleep not cleared or a watch not stopped holds a
 * real process open (or wakes it for nothing), and an unref'd one hides from
 * `process.getActiveResourcesInfo()`; so the global timer functions are
 * wrapped while a test runs, and every timeout and interval still pending is
 * reported with where it was created. (Counting the process's active handles
 * is unreliable anyway: the test runner's own timers come and go.)
 */

type AnyFn = (...args: unknown[]) => void;

/** What {@link trackTimers} returns. */
export interface TimerTracker {
  /** How many timeouts and intervals created since tracking began are still pending. */
  pending(): number;
  /** Where each pending one was created (a few stack lines apiece). */
  open(): string[];
  /** Puts the real timer functions back; returns {@link open} as it was at that moment. */
  restore(): string[];
}

function caller(): string {
  return (new Error().stack ?? "").split("\n").slice(3, 6).join("\n");
}

/**
 * Records every timeout and interval created until `restore()`. A fired
 * timeout leaves the record by itself; an interval only when cleared.
 * Call `restore()` in a `finally` (or an `afterEach`) so a failing test does
 * not leave the wrappers installed.
 */
export function trackTimers(): TimerTracker {
  const real = {
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
    setInterval: globalThis.setInterval,
    clearInterval: globalThis.clearInterval,
  };
  const live = new Map<unknown, string>();
  globalThis.setTimeout = ((fn: AnyFn, ms?: number, ...args: unknown[]) => {
    const timer = real.setTimeout(
      (...a: unknown[]) => {
        live.delete(timer);
        fn(...a);
      },
      ms,
      ...args,
    );
    live.set(timer, caller());
    return timer;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((timer: NodeJS.Timeout | string | number | undefined) => {
    live.delete(timer);
    real.clearTimeout(timer);
  });
  globalThis.setInterval = ((fn: AnyFn, ms?: number, ...args: unknown[]) => {
    const timer = real.setInterval(fn, ms, ...args);
    live.set(timer, caller());
    return timer;
  }) as typeof setInterval;
  globalThis.clearInterval = ((timer: NodeJS.Timeout | string | number | undefined) => {
    live.delete(timer);
    real.clearInterval(timer);
  });
  const open = (): string[] => [...live.values()];
  return {
    pending: () => live.size,
    open,
    restore: () => {
      Object.assign(globalThis, real);
      return open();
    },
  };
}

/**
 * `promise`'s outcome — `"ok"`, or its error as a string — or `"still waiting"` when it has not settled within
 * `ms`: for tests that show a call is not blocked (a lock held elsewhere) by asserting `"ok"`, where the old code
 * answered `"still waiting"`. The timer is cleared either way.
 */
export function settledWithin(promise: Promise<unknown>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("still waiting"), ms);
  });
  const settled = promise.then(
    () => "ok",
    (err: unknown) => String(err),
  );
  return Promise.race([settled, late]).finally(() => clearTimeout(timer));
}
