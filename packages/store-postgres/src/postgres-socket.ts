/**
 * Ending a `pg` client whose network path may have gone dark (no FIN, no
 * RST): a goodbye is given {@link END_TIMEOUT_MS}, then the socket is
 * destroyed, the only way out of a half-open connection. And the unref'd
 * timers the LISTEN side keeps.
 */
import type { ListenClient } from "./postgres-wakeups.js";

/** How long a goodbye may take before the socket is destroyed: a half-open connection never answers one. */
export const END_TIMEOUT_MS = 2_000;

/** Ends `client`, destroying its socket if the goodbye is not answered within {@link END_TIMEOUT_MS}; never rejects. */
export async function endQuietly(client: ListenClient): Promise<void> {
  try {
    // Ref'd again so the goodbye completes: awaiting an unref'd socket alone would let the process exit mid-close.
    client.ref?.();
    let timer: NodeJS.Timeout | null = null;
    const ended = client.end();
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), END_TIMEOUT_MS);
    });
    const outcome = await Promise.race([ended.then(() => "ended" as const), timedOut]);
    if (timer !== null) clearTimeout(timer);
    if (outcome === "timeout") {
      destroySocket(client);
      ended.catch(() => {});
    }
  } catch {
    // Already dead; nothing to release.
  }
}

/** Destroys a `pg` client's socket (`connection.stream`), if it has one: the only way out of a half-open connection. */
export function destroySocket(client: unknown): void {
  const stream = (client as { connection?: { stream?: { destroy?: () => void } } } | null)?.connection?.stream;
  if (typeof stream?.destroy === "function") stream.destroy();
}

/** `setTimeout` that does not hold the process open. */
export function unrefTimer(callback: () => void, ms: number): NodeJS.Timeout {
  const timer = setTimeout(callback, ms);
  timer.unref();
  return timer;
}

/**
 * Settles as `promise` does, or rejects with `timeout()` once `ms` passed (`0`: never) or with a closing error once
 * `signal` aborts — whichever comes first. A value that arrives too late goes to `late` (to end a client nobody
 * will use); a late rejection is swallowed.
 */
export function bounded<T>(promise: Promise<T>, ms: number, signal: AbortSignal, timeout: () => Error, late?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      return true;
    };
    const onAbort = (): void => {
      if (finish()) reject(new Error("the store began to close while the LISTEN connection was being opened"));
    };
    if (ms > 0) {
      timer = unrefTimer(() => {
        if (finish()) reject(timeout());
      }, ms);
    }
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        if (finish()) resolve(value);
        else late?.(value);
      },
      (error: unknown) => {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passes the bounded promise's own rejection on unchanged
        if (finish()) reject(error);
      },
    );
  });
}
