/**
 * What this store last wrote to `cairnq_ext_rate_limits`, so a claim writes
 * the row only when it would change something (`rate-window-reads.ts`).
 *
 * Every claim that takes a task of a rate-limited name used to upsert the
 * name's row: a row lock held until the claim commits, a dead tuple per
 * claim on Postgres, and on MariaDB next-key locks that can deadlock two
 * claims of different names. The row only tells `explain` the limit, which
 * every worker of a name declares the same, so a claim writes it when this
 * store has not written that key, wrote another limit for it, or wrote it
 * more than {@link RATE_LIMIT_REFRESH_MS} ago. The last one repairs, within
 * that time, a write whose claim rolled back and a database recreated under
 * a running store.
 */

/** How long a written limit stands before a claim under it writes it again: 60 s. */
export const RATE_LIMIT_REFRESH_MS = 60_000;

/** The limits this store wrote, per name and scope, with when (a monotonic clock). */
export class RateLimitRecords {
  readonly #written = new Map<string, { readonly max: number; readonly perMs: number; readonly atMs: number }>();
  readonly #clock: () => number;

  /** @param clock - A monotonic clock in ms. @default performance.now */
  constructor(clock: () => number = () => performance.now()) {
    this.#clock = clock;
  }

  /**
   * Whether a claim enforcing `limit` on `name` in `scope` should write it, and if so notes it as written now:
   * the key is new to this store, its limit differs, or it was written {@link RATE_LIMIT_REFRESH_MS} ago or more.
   */
  take(name: string, scope: string, limit: { readonly max: number; readonly perMs: number }): boolean {
    const key = `${scope}\u0000${name}`;
    const now = this.#clock();
    const last = this.#written.get(key);
    if (last !== undefined && last.max === limit.max && last.perMs === limit.perMs && now - last.atMs < RATE_LIMIT_REFRESH_MS) return false;
    this.#written.set(key, { max: limit.max, perMs: limit.perMs, atMs: now });
    return true;
  }
}
