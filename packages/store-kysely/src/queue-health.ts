/**
 * `queueHealth`: counts by queue and status, and each queue's oldest due
 * queued task, in one aggregate statement — what a metrics scrape reads.
 *
 * One statement rather than `stats` plus a probe per queue, so a scrape
 * costs one scan whatever the number of queues. Both columns it reads
 * (`status`, `run_at_ms`) and the grouping key (`queue`) are in the claim
 * index, so the databases can answer it from that index alone. Measured on
 * a million rows: see docs/telemetry.md and `bench/run.mjs --only health`.
 */
import type { QueueHealth, QueueHealthGroup, TaskStatus } from "@cairnq/protocol";
import { STATUSES } from "@cairnq/protocol";
import type { StatementTemplate } from "./compiler.js";
import { TASKS_TABLE } from "./statements.js";
import type { StoreLifecycle } from "./store-lifecycle.js";
import type { StoreStatements } from "./store-statements.js";

/**
 * The aggregate. `now` is the transaction clock (§2.1): read once, where
 * the statement clock would be read again for every row of the CASE.
 */
export const QUEUE_HEALTH_TEMPLATE: StatementTemplate = {
  params: [],
  clock: "transaction",
  build: (c) => {
    const now = c.now();
    return (
      `SELECT queue, status, count(*) AS n, ` +
      `min(CASE WHEN status = 'queued' AND run_at_ms <= ${now} THEN run_at_ms END) AS oldest_due_ms, ` +
      `max(${now}) AS now_ms FROM ${TASKS_TABLE} GROUP BY queue, status`
    );
  },
};

/** Reads {@link QueueHealth} through the store's executor (a read: never queued behind writes). */
export async function readQueueHealth(statements: StoreStatements, lifecycle: StoreLifecycle, processNowMs: () => number): Promise<QueueHealth> {
  return lifecycle.run(async () => {
    const rows = (await statements.read(QUEUE_HEALTH_TEMPLATE, {})).rows;
    const groups: QueueHealthGroup[] = [];
    // An empty table has no group to carry the clock: the process clock stands in (no age is computed from it).
    let nowMs: number | null = null;
    for (const row of rows) {
      const status = row.status as TaskStatus;
      if (!STATUSES.includes(status)) continue;
      nowMs ??= Number(row.now_ms);
      const oldest = row.oldest_due_ms;
      groups.push({ queue: String(row.queue), status, count: Number(row.n), oldestDueAtMs: oldest === null || oldest === undefined ? null : Number(oldest) });
    }
    return { nowMs: nowMs ?? processNowMs(), groups };
  });
}
