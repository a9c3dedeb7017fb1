/**
 * `cancelMany` / `retryMany` (batched over the store's cancelBatch /
 * retryBatch) and `submitOutcome`, on the MemoryStore and on a real SQLite
 * file (the README's example runs as written in test/integration/bulk.test.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryStore } from "@cairnq/conformance";
import { InvalidArgument } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import type { BulkBatchInput, RetryBatchInput } from "@cairnq/protocol";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CairnQ } from "../src/index.js";

class BatchRecordingStore extends MemoryStore {
  readonly batches: { op: string; input: BulkBatchInput | undefined; changed: number }[] = [];

  override async cancelBatch(input?: BulkBatchInput): Promise<string[]> {
    const ids = await super.cancelBatch(input);
    this.batches.push({ op: "cancel", input, changed: ids.length });
    return ids;
  }

  override async retryBatch(input?: RetryBatchInput): Promise<string[]> {
    const ids = await super.retryBatch(input);
    this.batches.push({ op: "retry", input, changed: ids.length });
    return ids;
  }
}

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-bulk-"));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("cancelMany / retryMany", () => {
  it("loop batches with a moving cursor until a short batch, and return the total", async () => {
    const store = new BatchRecordingStore();
    const client = new CairnQ(store);
    const workerId = newWorkerId();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await client.submit("job")).id);
    const running = await store.claim({ queues: ["default"], workerId, limit: 2 });
    for (let i = 0; i < 2; i++) ids.push((await client.submit("job")).id);
    await client.submit("other");

    expect(await client.cancelMany({ name: "job", batchSize: 2 })).toBe(5);
    expect(store.batches.map((b) => [b.input?.afterId ?? null, b.changed])).toEqual([
      [null, 2],
      [[...ids].sort()[1], 2],
      [[...ids].sort()[3], 1],
    ]);
    const rows = await client.list({ name: "job" });
    expect(rows.filter((r) => r.status === "canceled")).toHaveLength(3);
    expect(rows.filter((r) => r.status === "running" && r.cancel_requested_at_ms !== null).map((r) => r.id).sort()).toEqual(running.map((r) => r.id).sort());
    expect((await client.list({ name: "other" }))[0]?.status).toBe("queued");

    for (const task of running) await store.complete({ taskId: task.id, workerId, result: null });
    store.batches.length = 0;
    expect(await client.retryMany({ status: "canceled", name: "job", resetAttempt: true })).toBe(5);
    expect(store.batches).toEqual([{ op: "retry", input: { status: "canceled", name: "job", resetAttempt: true, limit: 1000, afterId: null }, changed: 5 }]);
    expect((await client.list({ name: "job", status: "queued" })).map((r) => r.attempt)).toEqual([0, 0, 0, 0, 0]);
    expect(await client.retryMany()).toBe(0);
    expect(await client.cancelMany()).toBe(6);
  });

  it("reject a limit, unknown keys, bad batch sizes and statuses the operation never changes, changing nothing", async () => {
    const client = new CairnQ(new MemoryStore());
    await client.submit("job");
    await expect(client.cancelMany({ limit: 10 } as never)).rejects.toThrow(/cancelMany changes every matching task, so it takes no 'limit'; batchSize/);
    await expect(client.retryMany({ stauts: "failed" } as never)).rejects.toThrow(/'stauts' is not an option of retryMany/);
    await expect(client.cancelMany({ resetAttempt: true } as never)).rejects.toBeInstanceOf(InvalidArgument);
    await expect(client.cancelMany({ batchSize: 0 })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(client.cancelMany({ status: "succeeded" })).rejects.toThrow(/cancelMany status must be one of queued, running/);
    await expect(client.retryMany({ status: "running" })).rejects.toThrow(/retryMany status must be one of failed, canceled/);
    expect((await client.list())[0]?.status).toBe("queued");
  });

  it("work on SQLite across many batches", async () => {
    const client = new CairnQ(new SQLiteStore(join(dir, "bulk.db")));
    for (let i = 0; i < 25; i++) await client.submit("job", { i }, { queue: i % 2 === 0 ? "even" : "odd" });
    expect(await client.cancelMany({ queue: "even", batchSize: 4 })).toBe(13);
    expect((await client.stats()).even).toMatchObject({ canceled: 13, queued: 0 });
    expect((await client.stats()).odd).toMatchObject({ queued: 12 });
    expect(await client.retryMany({ batchSize: 5 })).toBe(13);
    expect((await client.stats()).even).toMatchObject({ canceled: 0, queued: 13 });
    await client.close();
  });
});

describe("submitOutcome", () => {
  it("says created for a new task and not for a keyed submit that returned an existing one", async () => {
    const client = new CairnQ(new SQLiteStore(join(dir, "outcome.db")));
    const first = await client.submitOutcome("charge", { orderId: 1 }, { key: "charge:1" });
    const again = await client.submitOutcome("charge", { orderId: 1 }, { key: "charge:1" });
    expect([first.created, again.created, again.task.id === first.task.id]).toEqual([true, false, true]);
    expect((await client.submitOutcome("charge", {}, { key: "charge:1", conflict: "replace" })).created).toBe(true);
    expect((await client.submitOutcome("unkeyed")).created).toBe(true);
    await expect(client.submitOutcome("charge", {}, { delayMs: 5 } as never)).rejects.toThrow(/'delayMs' is not an option of submitOutcome/);
    await client.close();
  });
});
