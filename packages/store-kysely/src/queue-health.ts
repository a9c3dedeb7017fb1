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
    // Two arms rather than one CASE over every row: the counts are the GROUP BY `stats` runs (an index-only
    // scan), and only queued rows are read for the ages. On a million rows (8 queues, 9% queued;
    // `node bench/queue-health.mjs`) a single CASE over every row took 1,460 ms on SQLite and 480 ms on
    // Postgres (`stats` 635 and 140 ms in the same run); this form 106 and 129 ms (`stats` 67 and 68 ms).
    return (
      `SELECT queue, status, count(*) AS n, NULL AS oldest_due_ms, NULL AS now_ms FROM ${TASKS_TABLE} GROUP BY queue, status ` +
      `UNION ALL SELECT queue, 'queued' AS status, NULL AS n, min(run_at_ms) AS oldest_due_ms, max(${now}) AS now_ms FROM ${TASKS_TABLE} ` +
      `WHERE status = 'queued' AND run_at_ms <= ${now} GROUP BY queue`
    );
  },
};

/** Reads {@link QueueHealth} through the store's executor (a read: never queued behind writes). */
export async function readQueueHealth(statements: StoreStatements, lifecycle: StoreLifecycle, processNowMs: () => number): Promise<QueueHealth> {
  return lifecycle.run(async () => {
    const rows = (await statements.read(QUEUE_HEALTH_TEMPLATE, {})).rows;
    const groups: QueueHealthGroup[] = [];
    const oldest = new Map<string, number>();
    // With nothing due there is no age row to carry the clock: the process clock stands in (no age is computed from it).
    let nowMs: number | null = null;
    for (const row of rows) {
      if (row.n === null || row.n === undefined) {
        // An age row: the queue's oldest due queued task, and the clock it was read against.
        oldest.set(String(row.queue), Number(row.oldest_due_ms));
        nowMs ??= Number(row.now_ms);
        continue;
      }
      const status = row.status as TaskStatus;
      if (!STATUSES.includes(status)) continue;
      groups.push({ queue: String(row.queue), status, count: Number(row.n), oldestDueAtMs: null });
    }
    const withAges = groups.map((group) => (group.status === "queued" ? { ...group, oldestDueAtMs: oldest.get(group.queue) ?? null } : group));
    return { nowMs: nowMs ?? processNowMs(), groups: withAges };
  });
}
