import { describe, expect, it } from "vitest";
import type { Task } from "@cairnq/protocol";
import { TaskError } from "@cairnq/protocol";
import { gate, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

async function submitMany(store: MemoryStore, name: string, n: number): Promise<Task[]> {
  const out: Task[] = [];
  for (let i = 0; i < n; i++) out.push(await store.submit({ name, payload: { i } }));
  return out;
}

describe("batch delivery", () => {
  it("delivers up to `batch` contexts per call and reads results by id; unmentioned ids get NULL", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    const sizes: number[] = [];
    worker.task("sq", { batch: 3 }, (ctxs) => {
      sizes.push(ctxs.length);
      const out: Record<string, number> = {};
      for (const ctx of ctxs) {
        const { i } = ctx.payload as { i: number };
        if (i !== 1) out[ctx.taskId] = i * i;
      }
      return out;
    });
    const tasks = await submitMany(store, "sq", 5);
    void worker.run();
    const rows = await Promise.all(tasks.map((t) => waitForStatus(store, t.id, ["succeeded"])));
    expect(rows.map((r) => r.result)).toEqual([0, null, 4, 9, 16]);
    expect(sizes).toEqual([3, 2]);
  });

  it("accepts a Map of results", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("m", { batch: 4 }, (ctxs) => new Map(ctxs.map((ctx) => [ctx.taskId, ctx.taskId.slice(-4)])));
    const tasks = await submitMany(store, "m", 2);
    void worker.run();
    const rows = await Promise.all(tasks.map((t) => waitForStatus(store, t.id, ["succeeded"])));
    expect(rows.map((r) => r.result)).toEqual(tasks.map((t) => t.id.slice(-4)));
  });

  it("a non-object return (or none) completes every task with NULL", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.task("arr", { batch: 2 }, () => [1, 2] as unknown as Record<string, number>);
    worker.task("void", { batch: 2 }, () => undefined);
    const a = await submitMany(store, "arr", 2);
    const b = await submitMany(store, "void", 2);
    void worker.run();
    for (const t of [...a, ...b]) expect((await waitForStatus(store, t.id, ["succeeded"])).result).toBeNull();
  });

  it("tasks the handler settled itself are not settled again; settling twice is a no-op", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store);
    const byHand = new Map<string, string>();
    worker.task("b", { batch: 3 }, async (ctxs) => {
      // Rows of one draw come back in unspecified order; remember which context got which treatment.
      const [first, second, third] = ctxs as [(typeof ctxs)[0], (typeof ctxs)[0], (typeof ctxs)[0]];
      byHand.set(first.taskId, "succeed").set(second.taskId, "fail").set(third.taskId, "returned");
      await first.succeed("by hand");
      expect(await first.succeed("twice")).toBeNull();
      await second.fail("nope", { retryable: false });
      expect(await second.fail("again")).toBeNull();
      return Object.fromEntries(ctxs.map((ctx) => [ctx.taskId, "returned"]));
    });
    const tasks = await submitMany(spy.inner, "b", 3);
    void worker.run();
    const rows = await Promise.all(tasks.map((t) => waitForStatus(spy.inner, t.id, ["succeeded", "failed"])));
    const outcome = new Map(rows.map((r) => [byHand.get(r.id), [r.status, r.result]]));
    expect(outcome.get("succeed")).toEqual(["succeeded", "by hand"]);
    expect(outcome.get("fail")).toEqual(["failed", null]);
    expect(outcome.get("returned")).toEqual(["succeeded", "returned"]);
    expect(spy.callsOf("complete")).toHaveLength(2);
    expect(spy.callsOf("fail")).toHaveLength(1);
  });

  it("a throwing batch handler fails every unsettled task with the same envelope", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    let settledId = "";
    worker.task("t", { batch: 3 }, async (ctxs) => {
      settledId = ctxs[0]!.taskId;
      await ctxs[0]!.succeed(0);
      throw new TaskError("batch broke", { code: "broke" });
    });
    const tasks = await submitMany(store, "t", 3);
    void worker.run();
    const rows = await Promise.all(tasks.map((t) => waitForStatus(store, t.id, ["succeeded", "failed"])));
    for (const row of rows) {
      if (row.id === settledId) expect(row.status).toBe("succeeded");
      else expect(row).toMatchObject({ status: "failed", error: { code: "broke" } });
    }
  });

  it("a batch is one call: concurrency 1 runs batches one at a time", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 1 });
    let running = 0;
    let maxRunning = 0;
    const sizes: number[] = [];
    const release = gate();
    worker.task("b", { batch: 3 }, async (ctxs) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      sizes.push(ctxs.length);
      await release.promise;
      running -= 1;
    });
    const tasks = await submitMany(store, "b", 6);
    void worker.run();
    await waitFor(() => sizes.length === 1);
    expect(sizes).toEqual([3]);
    release.open();
    await Promise.all(tasks.map((t) => waitForStatus(store, t.id, ["succeeded"])));
    expect(sizes).toEqual([3, 3]);
    expect(maxRunning).toBe(1);
  });
});
