import { describe, expect, it } from "vitest";
import type { ClaimInput, Task } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { delay, gate, MemoryStore, spyStore, waitFor, waitForStatus } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

/** Tracks how many handler calls run at once, overall and per key. */
function tracker() {
  const now = new Map<string, number>();
  const max = new Map<string, number>();
  return {
    enter(key: string) {
      for (const k of [key, "*"]) {
        const n = (now.get(k) ?? 0) + 1;
        now.set(k, n);
        max.set(k, Math.max(max.get(k) ?? 0, n));
      }
    },
    leave(key: string) {
      for (const k of [key, "*"]) now.set(k, (now.get(k) ?? 1) - 1);
    },
    max: (key: string) => max.get(key) ?? 0,
  };
}

async function submitMany(store: { submit: MemoryStore["submit"] }, name: string, n: number, payload: unknown = {}): Promise<Task[]> {
  const out: Task[] = [];
  for (let i = 0; i < n; i++) out.push(await store.submit({ name, payload }));
  return out;
}

describe("concurrency", () => {
  it("runs up to `concurrency` calls at once", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 3 });
    const t = tracker();
    worker.task("x", async () => {
      t.enter("x");
      await delay(20);
      t.leave("x");
    });
    const tasks = await submitMany(store, "x", 9);
    void worker.run();
    await Promise.all(tasks.map((task) => waitForStatus(store, task.id, ["succeeded"])));
    expect(t.max("*")).toBe(3);
  });

  it("rejects concurrency below 1 or fractional at construction (never runs at a silently coerced 1)", () => {
    const store = new MemoryStore();
    for (const concurrency of [0, -1, 1.5]) {
      expect(() => makeWorker(store, { concurrency })).toThrow(InvalidArgument);
    }
  });

  it("a name's concurrency caps its calls while other names use the free slots", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 4 });
    const t = tracker();
    for (const name of ["a", "b"]) {
      const handler = async () => {
        t.enter(name);
        await delay(15);
        t.leave(name);
      };
      if (name === "a") worker.task(name, { concurrency: 1 }, handler);
      else worker.task(name, handler);
    }
    const tasks = [...(await submitMany(store, "a", 4)), ...(await submitMany(store, "b", 6))];
    void worker.run();
    await Promise.all(tasks.map((task) => waitForStatus(store, task.id, ["succeeded"])));
    expect(t.max("a")).toBe(1);
    expect(t.max("b")).toBeGreaterThan(1);
    expect(t.max("*")).toBeLessThanOrEqual(4);
  });

  it("a resource's capacity is shared by every name holding it", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 6, resources: { gpu: 2 } });
    const t = tracker();
    for (const name of ["x", "y"]) {
      worker.task(name, { resource: "gpu" }, async () => {
        t.enter("gpu");
        await delay(15);
        t.leave("gpu");
      });
    }
    worker.task("free", async () => {
      t.enter("free");
      await delay(15);
      t.leave("free");
    });
    const tasks = [
      ...(await submitMany(store, "x", 4)),
      ...(await submitMany(store, "y", 4)),
      ...(await submitMany(store, "free", 4)),
    ];
    void worker.run();
    await Promise.all(tasks.map((task) => waitForStatus(store, task.id, ["succeeded"])));
    expect(t.max("gpu")).toBe(2);
    expect(t.max("free")).toBeGreaterThan(1);
  });

  it("claimBatch caps the rows one draw takes", async () => {
    const spy = spyStore();
    const claimed: number[] = [];
    spy.hooks.claim = async (_args, next) => {
      const rows = (await next()) as Task[];
      if (rows.length > 0) claimed.push(rows.length);
      return rows;
    };
    const worker = makeWorker(spy.store, { concurrency: 10, claimBatch: 2 });
    const release = gate();
    worker.task("x", () => release.promise);
    const tasks = await submitMany(spy.store, "x", 6);
    void worker.run();
    await waitFor(() => claimed.reduce((a, b) => a + b, 0) === 6);
    expect(claimed).toEqual([2, 2, 2]);
    release.open();
    await Promise.all(tasks.map((task) => waitForStatus(spy.store, task.id, ["succeeded"])));
  });

  it("claimBatch is divided by a source's batch size", async () => {
    const spy = spyStore();
    const draws: { names: readonly string[] | null; limit: number }[] = [];
    spy.hooks.claim = (args, next) => {
      const input = args[0] as ClaimInput;
      const planner = input.draws!;
      input.draws = (so, i) => {
        const d = planner(so, i);
        if (d !== null) draws.push(d);
        return d;
      };
      return next();
    };
    const worker = makeWorker(spy.store, { concurrency: 10, claimBatch: 8 });
    worker.task("b", { batch: 3 }, () => undefined);
    const tasks = await submitMany(spy.store, "b", 9);
    void worker.run();
    await Promise.all(tasks.map((task) => waitForStatus(spy.store, task.id, ["succeeded"])));
    // max(1, floor(8 / 3)) = 2 calls of 3 rows per draw.
    expect(draws[0]).toEqual({ names: ["b"], limit: 6, last: true });
  });

  it("the first source rotates every poll", async () => {
    const spy = spyStore();
    const firsts: (readonly string[] | null)[] = [];
    spy.hooks.claim = (args, next) => {
      const planner = (args[0] as ClaimInput).draws!;
      firsts.push(planner([], 0)?.names ?? null);
      return next();
    };
    const worker = makeWorker(spy.store, { pollIntervalMs: 5 });
    worker.task("a", { concurrency: 2 }, () => undefined);
    worker.task("b", { batch: 2 }, () => undefined);
    worker.task("c", () => undefined);
    worker.task("d", () => undefined);
    void worker.run();
    await waitFor(() => firsts.length >= 4);
    expect(firsts.slice(0, 4)).toEqual([["a"], ["b"], ["c", "d"], ["a"]]);
  });

  it("claims with the union of registered names as the probe filter", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store);
    worker.task("a", () => undefined);
    worker.task("b", { batch: 2 }, () => undefined);
    await spy.store.submit({ name: "zzz" });
    void worker.run();
    await waitFor(() => spy.callsOf("claim").length > 0);
    await worker.stop();
    expect((spy.callsOf("claim")[0]!.args[0] as ClaimInput).names).toEqual(["a", "b"]);
    expect((spy.callsOf("claim")[0]!.args[0] as ClaimInput).workerId).toBe(worker.workerId);
    expect((await spy.store.list({ name: "zzz" }))[0]!.status).toBe("queued");
  });
});

describe("settlement overlaps the next claim", () => {
  it("at concurrency 1 the next handler starts while the previous task's complete is still in flight; stop() waits for it", async () => {
    const spy = spyStore();
    const held = gate();
    let completes = 0;
    // The first complete is held at the store until the test opens the gate: its commit is "slow".
    spy.hooks.complete = async (_args, next) => {
      completes += 1;
      if (completes === 1) await held.promise;
      return next();
    };
    const worker = makeWorker(spy.store, { concurrency: 1 });
    const t = tracker();
    const started: string[] = [];
    worker.task("a", async (ctx) => {
      t.enter("a");
      started.push(ctx.taskId);
      await delay(1);
      t.leave("a");
    });
    const [first, second] = await submitMany(spy.inner, "a", 2);
    const running = worker.run();
    // The second handler ran to its end although the first task's settlement has not committed.
    await waitFor(() => completes === 2, 3000, "the second task's complete");
    expect(new Set(started)).toEqual(new Set([first?.id, second?.id]));
    expect(t.max("*")).toBe(1);
    const [settling] = started;
    expect((await spy.inner.get(settling as string))?.status).toBe("running");
    const stopped = worker.stop();
    let stopResolved = false;
    void stopped.then(() => (stopResolved = true));
    await delay(30);
    expect(stopResolved).toBe(false); // stop() drains settlements in flight, not only running handlers
    held.open();
    await stopped;
    await running;
    expect((await spy.inner.get(first?.id as string))?.status).toBe("succeeded");
    expect((await spy.inner.get(second?.id as string))?.status).toBe("succeeded");
  });

  it("settlements that fall behind hold the next claim back: running plus settling calls stay within 3 × concurrency", async () => {
    const spy = spyStore();
    const held = gate();
    spy.hooks.complete = async (_args, next) => {
      await held.promise;
      return next();
    };
    const worker = makeWorker(spy.store, { concurrency: 1 });
    const started: string[] = [];
    worker.task("a", (ctx) => {
      started.push(ctx.taskId);
    });
    await submitMany(spy.inner, "a", 5);
    void worker.run();
    await waitFor(() => started.length >= 3, 3000, "three handlers");
    await delay(50);
    expect(started.length).toBe(3); // three settling calls = 3 × concurrency: no fourth claim
    held.open();
    await waitFor(() => started.length === 5, 3000, "the other handlers");
    await worker.stop();
  });

  it("a settling call keeps its payload bytes counted: maxInFlightBytes still bounds tasks held in memory", async () => {
    const spy = spyStore();
    const held = gate();
    spy.hooks.complete = async (_args, next) => {
      await held.promise;
      return next();
    };
    const worker = makeWorker(spy.store, { concurrency: 4, maxInFlightBytes: 100 });
    const started: string[] = [];
    worker.task("a", (ctx) => {
      started.push(ctx.taskId);
    });
    await submitMany(spy.inner, "a", 1, { pad: "x".repeat(120) });
    void worker.run();
    await waitFor(() => started.length >= 1, 3000, "the first handler");
    await submitMany(spy.inner, "a", 2, { pad: "x".repeat(120) });
    await delay(50);
    // The first task's ~130 payload bytes stay counted until its complete commits, so nothing else is admitted.
    expect(started.length).toBe(1);
    held.open();
    await waitFor(() => started.length === 3, 3000, "the other handlers");
    await worker.stop();
  });
});

describe("refetching", () => {
  it("after a claim whose draws all came back full the next cycle skips the probe; after a short one it probes again", async () => {
    const spy = spyStore();
    const worker = makeWorker(spy.store, { concurrency: 1 });
    worker.task("a", () => undefined);
    await spy.store.submit({ name: "a" });
    await spy.store.submit({ name: "a" });
    void worker.run();
    await waitFor(() => spy.callsOf("claim").length >= 4);
    await worker.stop();
    const probes = spy.callsOf("claim").slice(0, 4).map((call) => (call.args[0] as ClaimInput).probe);
    // full (1 of 1) → no probe; full → no probe; empty → idle, then the ordinary probing cycle.
    expect(probes).toEqual([undefined, false, false, undefined]);
    expect((await spy.store.list({ name: "a" })).map((t) => t.status)).toEqual(["succeeded", "succeeded"]);
  });
});

describe("maxInFlightBytes", () => {
  it("an oversized payload still runs on an idle worker, and runs alone", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 4, maxInFlightBytes: 100 });
    const started: string[] = [];
    const release = gate();
    worker.task("big", async () => {
      started.push("big");
      await release.promise;
    });
    worker.task("small", () => {
      started.push("small");
    });
    const big = await store.submit({ name: "big", payload: { blob: "x".repeat(500) } });
    void worker.run();
    await waitFor(() => started.length === 1);
    const smalls = await submitMany(store, "small", 3, { n: 1 });
    await delay(60);
    expect(started).toEqual(["big"]);
    release.open();
    await Promise.all([big, ...smalls].map((task) => waitForStatus(store, task.id, ["succeeded"])));
    expect(started).toEqual(["big", "small", "small", "small"]);
  });

  it("stops claiming once running payloads reach the budget, though slots are free", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 4, maxInFlightBytes: 100 });
    const release = gate();
    let started = 0;
    worker.task("x", async () => {
      started += 1;
      await release.promise;
    });
    // Each payload is 41 bytes of JSON: three are claimed together (the budget is checked before a claim), then 123 ≥ 100 holds the fourth.
    const payload = { blob: "y".repeat(30) };
    expect(Buffer.byteLength(JSON.stringify(payload))).toBe(41);
    const first = await submitMany(store, "x", 3, payload);
    void worker.run();
    await waitFor(() => started === 3);
    const fourth = await store.submit({ name: "x", payload });
    await delay(60);
    expect(started).toBe(3);
    expect((await store.get(fourth.id))?.status).toBe("queued");
    release.open();
    await Promise.all([...first, fourth].map((task) => waitForStatus(store, task.id, ["succeeded"])));
  });
});
