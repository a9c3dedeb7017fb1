/**
 * The "last hour" chart's data: tasks finished per minute, succeeded and
 * failed, read through the `TaskStore` contract alone.
 */
import type { ListInput, TaskStore } from "@cairnq/protocol";
import { taskIdTime } from "@cairnq/protocol/adapter";

const HOUR_MS = 3_600_000;
const BUCKET_MS = 60_000;
/** Rows read per status at most; beyond it the chart says "sampled". */
const THROUGHPUT_CAP = 5000;
const PAGE_ROWS = 500;

/** Completions per minute over the last hour, as `/api/throughput` answers them. */
export interface Throughput {
  bucketMs: number;
  fromMs: number;
  buckets: { atMs: number; succeeded: number; failed: number }[];
  sampled: boolean;
}

/**
 * Completions per minute over the last hour, read through `list` (id order,
 * so the primary key serves it): tasks submitted within the last hour that
 * finished within it, at most 5,000 per status.
 */
export async function readThroughput(store: Pick<TaskStore, "list">, nowMs: number): Promise<Throughput> {
  const fromMs = Math.floor((nowMs - HOUR_MS) / BUCKET_MS) * BUCKET_MS + BUCKET_MS;
  const buckets = Array.from({ length: HOUR_MS / BUCKET_MS }, (_, i) => ({ atMs: fromMs + i * BUCKET_MS, succeeded: 0, failed: 0 }));
  let sampled = false;
  for (const status of ["succeeded", "failed"] as const) {
    let beforeId: string | undefined;
    let seen = 0;
    for (;;) {
      const input: ListInput = { status, order: "id", limit: PAGE_ROWS };
      if (beforeId !== undefined) input.beforeId = beforeId;
      const page = await store.list(input);
      for (const t of page) {
        if (t.completed_at_ms === null || t.completed_at_ms < fromMs) continue;
        const bucket = buckets[Math.floor((t.completed_at_ms - fromMs) / BUCKET_MS)];
        if (bucket !== undefined) bucket[status] += 1;
      }
      seen += page.length;
      const last = page[page.length - 1];
      if (last === undefined || page.length < PAGE_ROWS || taskIdTime(last.id) < fromMs) break;
      if (seen >= THROUGHPUT_CAP) {
        sampled = true;
        break;
      }
      beforeId = last.id;
    }
  }
  return { bucketMs: BUCKET_MS, fromMs, buckets, sampled };
}
