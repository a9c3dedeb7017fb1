import type { Clock } from "@cairnq/protocol/adapter";

/**
 * Where a statement's `now` comes from (§2.1).
 *
 * Either the process clock, bound as one parameter read once per statement
 * execution (SQLite: every absolute time in the statement derives from that
 * one reading), or an SQL expression the database evaluates (Postgres: the
 * SDK never sends an absolute time).
 */
export interface StoreClock {
  /**
   * The SQL for `now` under a rule's clock, in integer epoch milliseconds, or
   * `null` to bind {@link StoreClock.nowMs} as a parameter instead.
   */
  nowSql(clock: Clock): string | null;
  /** The process clock in epoch milliseconds; read once per statement execution when `nowSql` is `null`. */
  nowMs(): number;
}

/**
 * The process clock: `now` is bound as one parameter holding `Date.now()`
 * (or an injected clock), read when the statement runs — not when it is
 * queued, so a statement that waited for the write lock still decides leases
 * against the current time.
 *
 * @example
 * const clock = new ProcessClock(() => fakeNow);
 */
export class ProcessClock implements StoreClock {
  readonly #now: () => number;

  /** @param now - The clock in epoch milliseconds. @default Date.now */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  nowSql(_clock: Clock): null {
    return null;
  }

  nowMs(): number {
    return this.#now();
  }
}

/**
 * A database clock: `now` is an SQL expression per rule clock, and nothing
 * absolute is ever bound.
 *
 * @example
 * const clock = new SqlClock({ statement: "...clock_timestamp()...", transaction: "...now()..." });
 */
export class SqlClock implements StoreClock {
  /** @param sql - The expression for each rule clock (`statement`: real time; `transaction`: transaction start). */
  constructor(private readonly sql: Readonly<Record<Clock, string>>) {}

  nowSql(clock: Clock): string {
    return this.sql[clock];
  }

  /** The process clock, for callers that need a rough time; statements never bind it. */
  nowMs(): number {
    return Date.now();
  }
}

/**
 * The Postgres clock of §2.1: `clock_timestamp()` (real time) for statements
 * that may run after waiting on locks, `now()` (transaction start) for the
 * rest; epoch seconds × 1000 cast to `bigint`, which rounds to nearest
 * because `extract` returns `numeric`.
 *
 * The real-time clock is a scalar subquery, so Postgres reads it once per
 * statement (an InitPlan) and can use it as an index bound: compared with the
 * bare volatile `clock_timestamp()` expression, the lease-recovery scan of
 * `cairnq_tasks_lease_idx` is bounded by `lease_until_ms <= $now` instead of
 * filtering every entry of the index, dead ones included, on every claim.
 */
export const POSTGRES_CLOCK: SqlClock = new SqlClock({
  statement: "(SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint)",
  transaction: "(extract(epoch from now()) * 1000)::bigint",
});
