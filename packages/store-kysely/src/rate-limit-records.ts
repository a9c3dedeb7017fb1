/**
 * What this store wrote to `cairnq_ext_rate_limits`, so a claim writes a
 * name's limit row only when it is due (`rateLimitRowDue` in
 * `@cairnq/protocol`: new to this store, changed, or written a minute ago),
 * not on every claim: a write per claim held the row's lock until the claim
 * committed, left a dead tuple per claim on Postgres and, on MariaDB, took
 * next-key locks that could deadlock claims of two names.
 *
 * A write counts as done only once its claim committed ({@link
 * RateLimitWrites.committed}): a claim's transaction body runs again after a
 * deadlock, a busy database or a key lock it could not take, and a rolled-back
 * write noted at planning would have kept the next attempts from writing it.
 */
import type { RateLimit, RateLimitScope } from "@cairnq/protocol";
import { rateLimitRowDue } from "@cairnq/protocol/adapter";

/** The parameters of `RECORD_RATE_LIMIT` (`rate-window-reads.ts`) for `limit` of `name` in `scope` (a type, not an interface: statement parameters are a record). */
export type RateLimitRow = { readonly name: string; readonly scope: RateLimitScope; readonly max: number; readonly perMs: number };

/** The limits this store's committed claims wrote, per name and scope, with when (a monotonic clock). */
export class RateLimitRecords {
  readonly #written = new Map<string, { readonly max: number; readonly perMs: number; readonly atMs: number }>();
  readonly #clock: () => number;

  /** @param clock - A monotonic clock in ms. @default performance.now */
  constructor(clock: () => number = () => performance.now()) {
    this.#clock = clock;
  }

  /** Whether a claim enforcing `limit` on `name` in `scope` should write its row now (`rateLimitRowDue`); notes nothing. */
  due(name: string, scope: RateLimitScope, limit: RateLimit): boolean {
    return rateLimitRowDue(this.#written.get(`${scope}\u0000${name}`), limit, this.#clock());
  }

  /** Notes that a committed claim wrote `limit` as the row of `name` in `scope`, now. */
  wrote(name: string, scope: RateLimitScope, limit: RateLimit): void {
    this.#written.set(`${scope}\u0000${name}`, { max: limit.max, perMs: limit.perMs, atMs: this.#clock() });
  }
}

/** The limit rows one claim writes: planned in its transaction body (which may run again), noted once it committed. */
export class RateLimitWrites {
  readonly #records: RateLimitRecords;
  readonly #planned = new Map<string, { readonly name: string; readonly scope: RateLimitScope; readonly limit: RateLimit }>();

  constructor(records: RateLimitRecords) {
    this.#records = records;
  }

  /** The upsert's parameters (`RECORD_RATE_LIMIT`) when the row of `name` in `scope` is due, in a list of one; else none. */
  plan(name: string, scope: RateLimitScope, limit: RateLimit): RateLimitRow[] {
    if (!this.#records.due(name, scope, limit)) return [];
    this.#planned.set(`${scope}\u0000${name}`, { name, scope, limit });
    return [{ name, scope, max: limit.max, perMs: limit.perMs }];
  }

  /** The claim committed: the rows it planned are written. */
  committed(): void {
    for (const { name, scope, limit } of this.#planned.values()) this.#records.wrote(name, scope, limit);
  }
}
