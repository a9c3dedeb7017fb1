/**
 * Bulk retry and cancel through the client's `retryMany` / `cancelMany`.
 * TEMPORARY shim until features-txn lands them on main; replaced by direct calls.
 */
import type { CairnQ } from "@cairnq/client";
import type { TaskStatus } from "@cairnq/protocol";

/** The filter bulk actions take (as `list`'s). */
export interface BulkFilter {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  correlationId?: string;
}

interface BulkClient {
  retryMany(filter: BulkFilter): Promise<unknown>;
  cancelMany(filter: BulkFilter): Promise<unknown>;
}

function count(result: unknown): number {
  if (typeof result === "number") return result;
  const r = result as Record<string, unknown>;
  for (const k of ["count", "changed", "retried", "canceled"]) if (typeof r[k] === "number") return r[k];
  throw new Error(`unexpected bulk result ${JSON.stringify(result)}`);
}

/** Requeues every failed/canceled task matching `filter`; the count. */
export async function retryMany(client: CairnQ, filter: BulkFilter): Promise<number> {
  return count(await (client as unknown as BulkClient).retryMany(filter));
}

/** Cancels every queued/running task matching `filter`; the count. */
export async function cancelMany(client: CairnQ, filter: BulkFilter): Promise<number> {
  return count(await (client as unknown as BulkClient).cancelMany(filter));
}
