/**
 * Prefetch keeps the claim order (§5.10 step 5: higher priority first, then the earlier run time, then the
 * smaller id) on real stores, whose multi-row draws return rows in no particular order (§5): SQLite's by
 * ascending priority, Postgres's at random. `claim-order.test.ts` runs it on SQLite,
 * `integration/claim-order.test.ts` on Postgres and MySQL.
 */
import { describe, expect, it } from "vitest";
import { delay, waitForStatus } from "./helpers.js";
import { type Backend, storePerTest } from "./stores.js";
import { makeWorker } from "./worker.js";

/** The suite on one backend: one claim of eight tasks, one running at a time, the other seven buffered. */
export function describeClaimOrder(backend: Backend): void {
  describe(`prefetch keeps the claim order (${backend.label})`, () => {
    const open = storePerTest();

    async function runInOrder(priorityOf: (i: number) => number): Promise<number[]> {
      const store = await open(backend);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        ids.push((await store.submit({ name: "j", payload: { i }, priority: priorityOf(i) })).id);
        await delay(3); // distinct run times: FIFO within a priority
      }
      const worker = makeWorker(store, { concurrency: 1, prefetch: 7 });
      const order: number[] = [];
      worker.task("j", async (_ctx, payload: { i: number }) => {
        order.push(payload.i);
        await delay(5);
      });
      void worker.run();
      for (const id of ids) await waitForStatus(store, id, ["succeeded"], 10_000);
      await worker.stop();
      return order;
    }

    it("higher priority first", async () => {
      expect(await runInOrder((i) => i)).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    });

    it("within a priority, the earlier run time first", async () => {
      expect(await runInOrder((i) => (i % 2 === 0 ? 1 : 0))).toEqual([0, 2, 4, 6, 1, 3, 5, 7]);
    });
  });
}
