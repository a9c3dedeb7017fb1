import { describe, expect, it } from "vitest";
import type { TaskStore } from "@cairnq/protocol";
import { delay, gate, MemoryStore, waitFor } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

// With prefetch a claim may take calls that wait in the buffer: a name's concurrency, a resource's capacity and the
// byte budget must count those waiting calls too, or the next claim would take more than they allow.

async function claimedCount(store: TaskStore): Promise<number> {
  return (await store.list({ status: "running", limit: 1000 })).length;
}

describe("prefetch: buffered calls count against the worker's limits", () => {
  for (const [label, registration, resources] of [
    ["a name's concurrency", { concurrency: 3 }, {}],
    ["a resource's capacity", { resource: "r" }, { r: 3 }],
  ] as const) {
    it(`${label} bounds its claimed calls, running or waiting`, async () => {
      const store = new MemoryStore();
      // One slot and room for four ahead: without the waiting calls counted, a second claim would take two more.
      const worker = makeWorker(store, { concurrency: 1, prefetch: 4, resources });
      const release = gate();
      let started = 0;
      worker.task("lim", registration, async () => {
        started += 1;
        await release.promise;
      });
      for (let i = 0; i < 8; i++) await store.submit({ name: "lim" });
      const done = worker.run();
      await waitFor(async () => started === 1 && (await claimedCount(store)) >= 3, 3000, "1 running + 2 buffered");
      await delay(100);
      expect(await claimedCount(store)).toBe(3);
      expect(started).toBe(1);
      release.open();
      await waitFor(async () => (await store.list({ status: "succeeded", limit: 100 })).length === 8, 5000, "every task");
      await worker.stop();
      await done;
    });
  }

  it("maxInFlightBytes counts buffered payloads: no claim once running and waiting payloads reach it", async () => {
    const store = new MemoryStore();
    const payload = { pad: "x".repeat(100) }; // 111 bytes of compact JSON
    const worker = makeWorker(store, { concurrency: 1, prefetch: 4, claimBatch: 1, maxInFlightBytes: 200 });
    const release = gate();
    let started = 0;
    worker.task("x", async () => {
      started += 1;
      await release.promise;
    });
    for (let i = 0; i < 6; i++) await store.submit({ name: "x", payload });
    const done = worker.run();
    // One call per claim (claimBatch 1): the first runs (111 bytes), the second waits (222 ≥ 200), then no more.
    await waitFor(async () => (await claimedCount(store)) >= 2, 3000, "1 running + 1 buffered");
    await delay(100);
    expect(await claimedCount(store)).toBe(2);
    expect(started).toBe(1);
    release.open();
    await waitFor(async () => (await store.list({ status: "succeeded", limit: 100 })).length === 6, 5000, "every task");
    await worker.stop();
    await done;
  });
});
