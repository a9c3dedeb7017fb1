/**
 * Queue health, an optional read of the `TaskStore` contract
 * (`capabilities.queueHealth`): per `(queue, status)` group, how many rows
 * and, for queued rows, the oldest due `run_at_ms` — what `cairnq health`
 * and the dashboard read in one aggregate statement.
 */
import type { TaskStatus } from "./statuses.js";
import type { TaskStore } from "./store.js";

/** One `(queue, status)` group of {@link QueueHealthTaskStore.queueHealth}. */
export interface QueueHealthGroup {
  readonly queue: string;
  readonly status: TaskStatus;
  /** Rows in the group. */
  readonly count: number;
  /** For `queued`: the smallest `run_at_ms` of the group's due rows (`run_at_ms <= now`), `null` when none is due. */
  readonly oldestDueAtMs: number | null;
}

/** What {@link QueueHealthTaskStore.queueHealth} read. */
export interface QueueHealth {
  /** The store's clock when it read (the database's on Postgres), so ages need no other clock. */
  readonly nowMs: number;
  readonly groups: readonly QueueHealthGroup[];
}

/**
 * A store that reads queue health in one aggregate statement
 * (`capabilities.queueHealth`): every `(queue, status)` group's count and,
 * for queued rows, the oldest due `run_at_ms`. Read-only; it scans the
 * table (an index-only scan of the claim index where the database offers
 * one), so callers cache it.
 */
export interface QueueHealthTaskStore extends TaskStore {
  queueHealth(): Promise<QueueHealth>;
}
