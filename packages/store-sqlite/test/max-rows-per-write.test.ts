/**
 * A dialect's `maxRowsPerWrite` (store-kysely; MySQL declares 5,000) on a real
 * SQLite store given a cap of 3: a claim's draws take at most 3 rows each,
 * whether the claim is plain, planned as several draws, or under flow control
 * and group limits, and a purge above the cap deletes every row it may, in
 * writes of at most 3. SQLite declares no cap; the test sets one on the
 * store's dialect.
 */
import type { ClaimDraw, Task } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import type { SQLiteStore } from "../src/index.js";
import { openStore } from "./helpers.js";

const CAP = 3;

/** A store whose dialect declares `maxRowsPerWrite: 3`. */
async function cappedStore(): Promise<SQLiteStore> {
  const store = openStore();
  await store.connect();
  const dialect = store.dialect;
  Object.defineProperty(dialect, "capabilities", { value: Object.freeze({ ...dialect.capabilities, maxRowsPerWrite: CAP }) });
  return store;
}

async function fill(store: SQLiteStore, count: number, input: { name?: string; group?: string } = {}): Promise<void> {
  for (let n = 0; n < count; n += 1) await store.submit({ name: input.name ?? "job", ...(input.group === undefined ? {} : { group: `${input.group}${n % 2}` }) });
}

async function running(store: SQLiteStore): Promise<number> {
  return (await store.list({ status: "running", limit: 100 })).length;
}

describe("maxRowsPerWrite on a claim's draws and a purge", () => {
  it("a plain claim asking for more than the cap takes the cap's worth, and every row it leased is returned", async () => {
    const store = await cappedStore();
    await fill(store, 10);
    const claimed = await store.claim({ queues: ["default"], workerId: "w", limit: 10 });
    expect(claimed).toHaveLength(CAP);
    expect(await running(store)).toBe(CAP);
  });

  it("each draw of a planned claim is capped: two draws of 5 take 3 and 3", async () => {
    const store = await cappedStore();
    await fill(store, 10);
    const draws = (_claimed: readonly Task[], index: number): ClaimDraw | null => (index < 2 ? { names: null, limit: 5, last: index === 1 } : null);
    const claimed = await store.claim({ queues: ["default"], workerId: "w", limit: 10, draws });
    expect(claimed).toHaveLength(2 * CAP);
    expect(new Set(claimed.map((task) => task.id)).size).toBe(2 * CAP);
    expect(await running(store)).toBe(2 * CAP);
  });

  it("under flow control and group limits too: the draw is capped, the limits still hold", async () => {
    const store = await cappedStore();
    await fill(store, 10, { name: "grouped", group: "g" });
    const flowControl = { grouped: { globalConcurrency: 8, groupConcurrency: 4 } };
    const first = await store.claim({ queues: ["default"], workerId: "w", limit: 10, names: ["grouped"], flowControl });
    expect(first).toHaveLength(CAP);
    const second = await store.claim({ queues: ["default"], workerId: "w", limit: 10, names: ["grouped"], flowControl });
    expect(second).toHaveLength(CAP);
    // Two groups of four: eight may run, six do; the third claim takes the two left under the limits.
    const third = await store.claim({ queues: ["default"], workerId: "w", limit: 10, names: ["grouped"], flowControl });
    expect(third).toHaveLength(2);
    expect(await running(store)).toBe(8);
  });

  it("a purge above the cap deletes every matching row, in writes of at most the cap", async () => {
    const store = await cappedStore();
    await fill(store, 8);
    const claimed = [...(await store.claim({ queues: ["default"], workerId: "w", limit: 8 })), ...(await store.claim({ queues: ["default"], workerId: "w", limit: 8 })), ...(await store.claim({ queues: ["default"], workerId: "w", limit: 8 }))];
    expect(claimed).toHaveLength(8);
    for (const task of claimed) await store.complete({ taskId: task.id, workerId: "w", result: null });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const purged = await store.purge({ olderThanMs: 0, limit: 100 });
    expect([...purged].sort()).toEqual(claimed.map((task) => task.id).sort());
    expect(await store.list({ limit: 100 })).toEqual([]);
  });
});
