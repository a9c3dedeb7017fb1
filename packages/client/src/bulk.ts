/**
 * The client's bulk operations (`cancelMany`, `retryMany`): their options
 * checked, and the loop of batches, one statement each, until a short one.
 */
import { InvalidArgument } from "@cairnq/protocol";
import { requireInt } from "@cairnq/protocol/adapter";
import { DEFAULT_BULK_LIMIT, nextBatchCursor } from "@cairnq/protocol/sdk";
import { checkOptions } from "@cairnq/runtime";
import type { BulkOptions } from "./client-options.js";

/** A bulk call's options, checked: its `batchSize` (default {@link DEFAULT_BULK_LIMIT}) and the filter without it. */
export function bulkOptions<O extends BulkOptions>(options: O, what: string, keys: readonly string[]): { batchSize: number; filter: Omit<O, "batchSize"> } {
  if (typeof options === "object" && options !== null && "limit" in options) {
    throw new InvalidArgument(
      "limit",
      `${what} changes every matching task, so it takes no 'limit'; batchSize sets how many rows each statement changes (default ${DEFAULT_BULK_LIMIT})`,
    );
  }
  const checked = checkOptions(options, what, keys) as O;
  const { batchSize, ...filter } = checked;
  return { batchSize: batchSize === undefined ? DEFAULT_BULK_LIMIT : requireInt(batchSize, "batchSize", 1), filter };
}


/** Runs `batch` from the start, each time after the last id changed, until a batch changes fewer than `batchSize` rows; the total changed. */
export async function runBatches(batch: (afterId: string | null) => Promise<string[]>, batchSize: number): Promise<number> {
  let total = 0;
  let afterId: string | null = null;
  for (;;) {
    const ids = await batch(afterId);
    total += ids.length;
    if (ids.length < batchSize) return total;
    afterId = nextBatchCursor(ids);
  }
}
