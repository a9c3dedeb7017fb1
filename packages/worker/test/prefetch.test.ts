import { describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import type { Task } from "@cairnq/protocol";
import { resolveWorkerOptions } from "../src/options.js";
import { delay, gate, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

describe("prefetch option", () => {
  it("defaults to 0 and takes any integer ≥ 0", () => {
    expect(resolveWorkerOptions().prefetch).toBe(0);
    expect(resolveWorkerOptions({ prefetch: 0 }).prefetch).toBe(0);
    expect(resolveWorkerOptions({ prefetch: 32 }).prefetch).toBe(32);
  });

  it("rejects anything but an integer ≥ 0, naming the option", () => {
    for (const prefetch of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "4", null, true]) {
      let caught: unknown;
      try {
        resolveWorkerOptions({ prefetch: prefetch as never });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidArgument);
      expect((caught as InvalidArgument).argument).toBe("prefetch");
      expect((caught as InvalidArgument).message).toMatch(/^prefetch must be an integer ≥ 0, got /);
    }
  });
});

describe("prefetch: calls in flight", () => {
  it("running, buffered and settling calls stay within 3 × (concurrency + prefetch) while settlements fall behind", async () => {
    const spy = spyStore();
    const held = gate();
    spy.hooks.complete = async (_args, next) => {
      await held.promise;
      return next();
    };
    const worker = makeWorker(spy.store, { concurrency: 1, prefetch: 2 });
    const started: string[] = [];
    worker.task("a", (ctx) => {
      started.push(ctx.taskId);
    });
    for (let i = 0; i < 12; i++) await spy.inner.submit({ name: "a" });
    void worker.run();
    await waitFor(() => started.length >= 9, 3000, "nine handlers");
    await delay(50);
    expect(started.length).toBe(9); // nine settling calls = 3 × (1 + 2): no further claim
    held.open();
    await waitFor(() => started.length === 12, 3000, "the other handlers");
    await worker.stop();
  });
});

describe("prefetch: overlapping claims", () => {
  function slowClaims(spy: ReturnType<typeof spyStore>) {
    const seen = { inFlight: 0, most: 0 };
    spy.hooks.claim = async (_args, next) => {
      seen.inFlight += 1;
      seen.most = Math.max(seen.most, seen.inFlight);
      try {
        // Planned and committed at once, returned late: the rows stay undispatched while another claim may plan.
        const rows = await next();
        await delay(20);
        return rows;
      } finally {
        seen.inFlight -= 1;
      }
    };
    return seen;
  }

  it("a second claim overlaps one in flight while draws come back full, and together they stay within concurrency + prefetch", async () => {
    const spy = spyStore();
    const claims = slowClaims(spy);
    const worker = makeWorker(spy.store, { concurrency: 2, prefetch: 4, claimBatch: 2 });
    const release = gate();
    let claimed = 0;
    let ended = 0;
    let mostAhead = 0;
    worker.on("task:claimed", () => {
      claimed += 1;
      mostAhead = Math.max(mostAhead, claimed - ended);
    });
    worker.task("x", async () => {
      await release.promise;
      ended += 1;
    });
    const tasks: Task[] = [];
    for (let i = 0; i < 20; i++) tasks.push(await spy.inner.submit({ name: "x" }));
    const done = worker.run();
    await waitFor(() => claimed === 6, 3000, "concurrency + prefetch claimed");
    await delay(80);
    expect(claimed).toBe(6);
    expect((await spy.inner.list({ status: "running" })).length).toBe(6);
    expect(claims.most).toBe(2);
    release.open();
    for (const task of tasks) await waitForStatus(spy.inner, task.id, ["succeeded"]);
    expect(mostAhead).toBeLessThanOrEqual(6);
    expect(claims.most).toBe(2);
    await worker.stop();
    await done;
  });

  it("claims never overlap while a registered name has its own concurrency, a resource or flow control", async () => {
    for (const options of [{ concurrency: 8 }, { resource: "r" }, { globalConcurrency: 8 }]) {
      const spy = spyStore();
      const claims = slowClaims(spy);
      const worker = makeWorker(spy.store, { concurrency: 2, prefetch: 4, claimBatch: 2, resources: { r: 8 } });
      worker.task("x", () => null);
      worker.task("y", options, () => null);
      const tasks: Task[] = [];
      for (let i = 0; i < 12; i++) tasks.push(await spy.inner.submit({ name: "x" }));
      const done = worker.run();
      for (const task of tasks) await waitForStatus(spy.inner, task.id, ["succeeded"]);
      await worker.stop();
      await done;
      expect(claims.most).toBe(1);
    }
  });

  it("claims never overlap without prefetch", async () => {
    const spy = spyStore();
    const claims = slowClaims(spy);
    const worker = makeWorker(spy.store, { concurrency: 4, claimBatch: 2 });
    worker.task("x", () => delay(5));
    const tasks: Task[] = [];
    for (let i = 0; i < 24; i++) tasks.push(await spy.inner.submit({ name: "x" }));
    const done = worker.run();
    for (const task of tasks) await waitForStatus(spy.inner, task.id, ["succeeded"]);
    await worker.stop();
    await done;
    expect(claims.most).toBe(1);
  });
});

describe("prefetch: the stop deadline", () => {
  it("lets go of buffered calls like running ones: never started, counted as abandoned, left to lease expiry", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 1, prefetch: 2, stopTimeoutMs: 100 });
    const ran: string[] = [];
    worker.task("x", async (ctx) => {
      ran.push(ctx.taskId);
      await new Promise(() => {}); // never ends
    });
    const tasks: Task[] = [];
    for (let i = 0; i < 3; i++) tasks.push(await spy.inner.submit({ name: "x" }));
    let abandoned = -1;
    worker.on("worker:stopped", (e) => (abandoned = e.abandoned));
    const done = worker.run();
    await waitFor(async () => ran.length === 1 && (await spy.inner.list({ status: "running" })).length === 3, 3000, "1 running + 2 buffered");
    await worker.stop();
    await done;
    expect(abandoned).toBe(3);
    expect(ran).toHaveLength(1);
    for (const task of tasks) expect((await spy.inner.get(task.id))?.status).toBe("running");
    expect(spy.callsOf("complete")).toHaveLength(0);
    expect(spy.callsOf("fail")).toHaveLength(0);
  });
});
