/**
 * The "Activity" charts' data: per bucket of the last hour (minutes) or day
 * (half hours), tasks submitted, succeeded and failed, and percentiles of
 * how long finished tasks took from due to finished — for every queue or
 * one — read through the `TaskStore` contract alone.
 *
 * What the rows can say: a finished row keeps when it became due
 * (`run_at_ms`, its last attempt's) and when it finished (`completed_at_ms`),
 * not when it was claimed (v1 has no such column after the lease is
 * cleared), so the latency is wait and run together. The worker's
 * OpenTelemetry metrics split them (`cairnq.task.wait.duration`,
 * `messaging.process.duration`; docs/telemetry.md).
 */
import type { ListInput, Task, TaskStore } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { taskIdTime } from "@cairnq/protocol/adapter";

/** The windows the charts offer. */
export const ACTIVITY_RANGES = {
  hour: { spanMs: 3_600_000, bucketMs: 60_000 },
  day: { spanMs: 86_400_000, bucketMs: 1_800_000 },
} as const;

export type ActivityRange = keyof typeof ACTIVITY_RANGES;

/** Rows read at most; beyond it the charts say "sampled" (the newest rows are the ones read). */
const ACTIVITY_CAP = 20_000;
const PAGE_ROWS = 500;

/** One bucket of the charts. Percentiles are in ms, `null` when nothing finished in the bucket. */
export interface ActivityBucket {
  atMs: number;
  submitted: number;
  succeeded: number;
  failed: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/** What `GET /api/activity` answers. */
export interface Activity {
  range: ActivityRange;
  queue: string | null;
  bucketMs: number;
  fromMs: number;
  buckets: ActivityBucket[];
  /** Percentiles over the whole window, ms. */
  overall: { p50: number | null; p95: number | null; p99: number | null; finished: number };
  sampled: boolean;
}

/** Checks `range` (`hour` or `day`). */
export function activityRange(value: string | null): ActivityRange {
  if (value === null || value === "" || value === "hour") return "hour";
  if (value === "day") return "day";
  throw new InvalidArgument("range", `range must be "hour" or "day", got ${JSON.stringify(value)}`);
}

/**
 * Reads the window's rows newest first by id (the primary key serves it, as
 * it does the task list's pages), at most {@link ACTIVITY_CAP}: tasks
 * submitted within the window, each counted in its submit's bucket and, once
 * finished within it, in its finish's.
 */
export async function readActivity(store: Pick<TaskStore, "list">, nowMs: number, range: ActivityRange, queue: string | null): Promise<Activity> {
  const { spanMs, bucketMs } = ACTIVITY_RANGES[range];
  const fromMs = Math.floor((nowMs - spanMs) / bucketMs) * bucketMs + bucketMs;
  const count = Math.ceil((nowMs - fromMs + 1) / bucketMs);
  const buckets: ActivityBucket[] = Array.from({ length: count }, (_, i) => ({ atMs: fromMs + i * bucketMs, submitted: 0, succeeded: 0, failed: 0, p50: null, p95: null, p99: null }));
  const durations: number[][] = buckets.map(() => []);
  const all: number[] = [];
  let sampled = false;
  let beforeId: string | undefined;
  let seen = 0;
  const slot = (atMs: number): number => Math.floor((atMs - fromMs) / bucketMs);
  for (;;) {
    const input: ListInput = { order: "id", limit: PAGE_ROWS };
    if (queue !== null) input.queue = queue;
    if (beforeId !== undefined) input.beforeId = beforeId;
    const page = await store.list(input);
    for (const task of page) {
      // Counted by the row's created_at_ms (the store's clock); the page walk stops by the id's time, which is
      // the same instant in production and only bounds how far back it reads.
      if (task.created_at_ms >= fromMs) {
        const submitted = buckets[slot(task.created_at_ms)];
        if (submitted !== undefined) submitted.submitted += 1;
      }
      record(task);
    }
    seen += page.length;
    const last = page[page.length - 1];
    if (last === undefined || page.length < PAGE_ROWS || taskIdTime(last.id) < fromMs) break;
    if (seen >= ACTIVITY_CAP) {
      sampled = true;
      break;
    }
    beforeId = last.id;
  }
  buckets.forEach((bucket, i) => Object.assign(bucket, percentiles(durations[i] as number[])));
  return { range, queue, bucketMs, fromMs, buckets, overall: { ...percentiles(all), finished: all.length }, sampled };

  function record(task: Task): void {
    if ((task.status !== "succeeded" && task.status !== "failed") || task.completed_at_ms === null || task.completed_at_ms < fromMs) return;
    const i = slot(task.completed_at_ms);
    const bucket = buckets[i];
    if (bucket === undefined) return;
    bucket[task.status] += 1;
    const tookMs = Math.max(0, task.completed_at_ms - task.run_at_ms);
    (durations[i] as number[]).push(tookMs);
    all.push(tookMs);
  }
}

/** Nearest-rank percentiles of `values` (sorted here). */
function percentiles(values: number[]): { p50: number | null; p95: number | null; p99: number | null } {
  if (values.length === 0) return { p50: null, p95: null, p99: null };
  values.sort((a, b) => a - b);
  const at = (p: number): number => values[Math.min(values.length - 1, Math.ceil(p * values.length) - 1)] as number;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}
