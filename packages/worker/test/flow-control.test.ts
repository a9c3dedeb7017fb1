import { describe, expect, it } from "vitest";
import type { ClaimInput } from "@cairnq/protocol";
import { InvalidArgument, UnsupportedBackend } from "@cairnq/protocol";
import { buildSources } from "../src/planner.js";
import { MemoryStore, waitFor } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

describe("task options globalConcurrency / rateLimit", () => {
  it("are passed to every claim as flowControl, for the limited names only", async () => {
    const store = new MemoryStore();
    const claims: ClaimInput[] = [];
    const claim = store.claim.bind(store);
    store.claim = (input) => {
      claims.push(input);
      return claim(input);
    };
    const worker = makeWorker(store, { concurrency: 4 });
    worker.task("lim", { globalConcurrency: 1, rateLimit: { max: 5, perMs: 1000 } }, () => "ok");
    worker.task("free", () => "ok");
    await store.submit({ name: "lim" });
    const running = worker.run();
    await waitFor(async () => (await store.list({ name: "lim", status: "succeeded" })).length === 1);
    await worker.stop();
    await running;
    expect(claims.length).toBeGreaterThan(0);
    for (const input of claims) expect(input.flowControl).toEqual({ lim: { globalConcurrency: 1, rateLimit: { max: 5, perMs: 1000 } } });
  });

  it("keep a second worker's tasks of the name waiting while the first holds the slot", async () => {
    const store = new MemoryStore();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const a = makeWorker(store, { concurrency: 2 });
    const b = makeWorker(store, { concurrency: 2 });
    let running = 0;
    let most = 0;
    for (const w of [a, b]) {
      w.task("lim", { globalConcurrency: 1 }, async () => {
        most = Math.max(most, ++running);
        await held;
        running--;
      });
    }
    for (let i = 0; i < 4; i++) await store.submit({ name: "lim" });
    const runs = [a.run(), b.run()];
    await waitFor(async () => (await store.list({ name: "lim", status: "running" })).length === 1);
    await new Promise((r) => setTimeout(r, 60));
    expect((await store.list({ name: "lim", status: "running" })).length).toBe(1);
    release();
    await waitFor(async () => (await store.list({ name: "lim", status: "succeeded" })).length === 4);
    await Promise.all([a.stop(), b.stop()]);
    await Promise.all(runs);
    expect(most).toBe(1);
  });

  it("work beside the per-process limits: the tighter of a name's concurrency, its resource and globalConcurrency wins", async () => {
    const store = new MemoryStore();
    // Per name: its own concurrency 1 under a global 3; a resource of capacity 1 under a global 2;
    // a global 1 under a worker concurrency 4.
    const worker = makeWorker(store, { concurrency: 4, resources: { gpu: 1 } });
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    const handler = (name: string) => async (): Promise<void> => {
      const now = (running.get(name) ?? 0) + 1;
      running.set(name, now);
      most.set(name, Math.max(most.get(name) ?? 0, now));
      await new Promise((r) => setTimeout(r, 15));
      running.set(name, (running.get(name) ?? 1) - 1);
    };
    worker.task("own", { concurrency: 1, globalConcurrency: 3 }, handler("own"));
    worker.task("gpu", { resource: "gpu", globalConcurrency: 2 }, handler("gpu"));
    worker.task("global", { globalConcurrency: 1 }, handler("global"));
    for (const name of ["own", "gpu", "global"]) for (let i = 0; i < 5; i++) await store.submit({ name });
    const run = worker.run();
    await waitFor(async () => (await store.list({ status: "succeeded", limit: 100 })).length === 15, 10_000);
    await worker.stop();
    await run;
    expect(Object.fromEntries(most)).toEqual({ own: 1, gpu: 1, global: 1 });
  });

  it("are checked strictly, and refused on a store that does not enforce them", () => {
    const worker = makeWorker(new MemoryStore());
    expect(() => worker.task("x", { globalConcurrency: 0 }, () => null)).toThrow(InvalidArgument);
    expect(() => worker.task("x", { rateLimit: { max: 1 } as never }, () => null)).toThrow("needs both max and perMs");
    expect(() => worker.task("x", { rateLimit: { max: 1, perMs: 10, burst: 3 } as never }, () => null)).toThrow("'burst'");
    const plain = new MemoryStore();
    Object.defineProperty(plain, "capabilities", { value: { ...plain.capabilities, flowControl: false } });
    expect(() => makeWorker(plain).task("x", { globalConcurrency: 2 }, () => null)).toThrow(UnsupportedBackend);
    // Without limits the same store is fine.
    makeWorker(plain).task("x", () => null);
  });

  it("make a limited name its own draw source", () => {
    const limits = { globalConcurrency: 2, rateLimit: null };
    const sources = buildSources([
      { name: "a", batch: null, concurrency: null, resource: null },
      { name: "lim", batch: null, concurrency: null, resource: null, flowControl: limits },
      { name: "b", batch: null, concurrency: null, resource: null, flowControl: null },
    ]);
    expect(sources.map((s) => s.names)).toEqual([["a", "b"], ["lim"]]);
  });
});

describe("worker.schedule", () => {
  it("submits slots while the worker runs, reports nothing when healthy, and stops with it", async () => {
    const store = new MemoryStore();
    const errors: unknown[] = [];
    const worker = makeWorker(store, { onError: (err) => errors.push(err) });
    worker.task("tick", (ctx) => ({ claimedAtMs: ctx.claimedAtMs }));
    expect(worker.schedule("tick", { everyMs: 50 }, { payload: { n: 1 } })).toBe(worker);
    const running = worker.run();
    await waitFor(async () => (await store.list({ name: "tick", status: "succeeded" })).length >= 2);
    await worker.stop();
    await running;
    const count = (await store.list({ name: "tick" })).length;
    await new Promise((r) => setTimeout(r, 120));
    expect((await store.list({ name: "tick" })).length).toBe(count);
    expect(errors).toEqual([]);
    const done = await store.list({ name: "tick", status: "succeeded" });
    for (const row of done) expect((row.result as { claimedAtMs: number }).claimedAtMs).toBeGreaterThanOrEqual(row.run_at_ms);
  });

  it("reports a failing submission to onError with phase 'schedule' and the schedule name", async () => {
    const store = new MemoryStore();
    store.submitScheduleSlots = () => Promise.reject(new Error("no database"));
    const infos: unknown[] = [];
    const worker = makeWorker(store, { onError: (_err, info) => infos.push(info) });
    worker.schedule("tick", { everyMs: 50 }, { name: "ticker" });
    const running = worker.run();
    await waitFor(() => Promise.resolve(infos.length > 0));
    await worker.stop();
    await running;
    expect(infos[0]).toEqual({ phase: "schedule", schedule: "ticker" });
  });
});
