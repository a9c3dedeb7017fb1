/**
 * Prefetch on real stores (SQLite on a temp file, Postgres in a fresh schema):
 * buffered tasks' leases renewed by heartbeats across seconds of real time.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Task, TaskStore } from "@cairnq/protocol";
import type { LeaseLostEvent } from "../../src/index.js";
import { delay, gate, waitFor, waitForStatus } from "../support/helpers.js";
import type { OpenStore } from "../support/stores.js";
import { BACKENDS } from "../support/stores.js";
import { makeWorker } from "../support/worker.js";

async function submitMany(store: TaskStore, name: string, n: number): Promise<Task[]> {
  const out: Task[] = [];
  for (let i = 0; i < n; i++) out.push(await store.submit({ name, payload: { i } }));
  return out;
}

async function countRunning(store: TaskStore, name?: string): Promise<number> {
  return (await store.list({ status: "running", ...(name === undefined ? {} : { name }), limit: 1000 })).length;
}

for (const backend of BACKENDS) {
  describe(`prefetch (${backend.label})`, () => {
    let open: OpenStore;
    let store: TaskStore;
    beforeEach(async () => {
      open = await backend.open();
      store = open.store;
      await store.connect();
    });
    afterEach(async () => {
      await open.close();
    });

    it("claims at most concurrency + prefetch calls ahead of their handlers' end, and runs at most concurrency at once", async () => {
      const worker = makeWorker(store, { concurrency: 2, prefetch: 3 });
      const gates = new Map<string, ReturnType<typeof gate>>();
      let claimed = 0;
      let ended = 0;
      let running = 0;
      let mostRunning = 0;
      let mostAhead = 0;
      worker.on("task:claimed", () => {
        claimed += 1;
        mostAhead = Math.max(mostAhead, claimed - ended);
      });
      worker.task("x", async (ctx) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        const g = gate();
        gates.set(ctx.taskId, g);
        await g.promise;
        running -= 1;
        ended += 1;
      });
      const tasks = await submitMany(store, "x", 12);
      const done = worker.run();
      await waitFor(() => claimed === 5 && gates.size === 2, 5000, "2 running + 3 buffered");
      await delay(100);
      // Nothing ended: exactly concurrency + prefetch claimed, concurrency handlers started, the rest still queued.
      expect(claimed).toBe(5);
      expect(gates.size).toBe(2);
      expect(await countRunning(store)).toBe(5);
      // Release handlers one by one until every task ran.
      const opened = new Set<string>();
      while (opened.size < tasks.length) {
        await waitFor(() => [...gates.keys()].some((id) => !opened.has(id)), 5000, "a handler to release");
        const id = [...gates.keys()].find((key) => !opened.has(key)) as string;
        opened.add(id);
        gates.get(id)?.open();
      }
      for (const task of tasks) expect((await waitForStatus(store, task.id, ["succeeded"])).attempt).toBe(1);
      expect(mostRunning).toBeLessThanOrEqual(2);
      expect(mostAhead).toBeLessThanOrEqual(5);
      await worker.stop();
      await done;
    });

    it("renews buffered tasks' leases: a slow first handler does not let another worker recover them", async () => {
      // Leases with room for a slow heartbeat round trip on a loaded machine (a lapse here would be the flake, not the bug).
      const a = makeWorker(store, { concurrency: 1, prefetch: 2, leaseMs: 1000, heartbeatIntervalMs: 100 });
      const b = makeWorker(store, { concurrency: 4, leaseMs: 1000, heartbeatIntervalMs: 100, pollIntervalMs: 20 });
      const ranOnA: string[] = [];
      const ranOnB: string[] = [];
      a.task("x", async (ctx) => {
        ranOnA.push(ctx.taskId);
        if (ranOnA.length === 1) await delay(3500); // three and a half leases long
      });
      b.task("x", (ctx) => {
        ranOnB.push(ctx.taskId);
      });
      const tasks = await submitMany(store, "x", 3);
      const doneA = a.run();
      await waitFor(async () => (await countRunning(store)) === 3, 5000, "A to claim all three");
      const doneB = b.run();
      for (const task of tasks) {
        const row = await waitForStatus(store, task.id, ["succeeded"], 10_000);
        expect(row.attempt).toBe(1);
        expect(row.worker_id).toBe(a.workerId);
      }
      expect(ranOnB).toEqual([]);
      expect(ranOnA.toSorted()).toEqual(tasks.map((t) => t.id).toSorted());
      await Promise.all([a.stop(), b.stop()]);
      await Promise.all([doneA, doneB]);
    });

    it("stop() runs the buffered tasks to completion, claims nothing more, and exits", async () => {
      const worker = makeWorker(store, { concurrency: 1, prefetch: 3 });
      const release = gate();
      const ran: string[] = [];
      worker.task("x", async (ctx) => {
        ran.push(ctx.taskId);
        await release.promise;
      });
      const tasks = await submitMany(store, "x", 4);
      const done = worker.run();
      await waitFor(async () => (await countRunning(store)) === 4 && ran.length === 1, 5000, "1 running + 3 buffered");
      const stopped = worker.stop();
      const late = await store.submit({ name: "x" });
      release.open();
      await stopped;
      await done;
      expect(worker.running).toBe(false);
      expect(ran.toSorted()).toEqual(tasks.map((t) => t.id).toSorted());
      for (const task of tasks) expect((await store.get(task.id))?.status).toBe("succeeded");
      expect((await store.get(late.id))?.status).toBe("queued");
    });

    it("a buffered task whose cancel a heartbeat sees ends canceled without its handler running", async () => {
      const worker = makeWorker(store, { concurrency: 1, prefetch: 2, heartbeatIntervalMs: 20 });
      const release = gate();
      const ran: string[] = [];
      const canceled: string[] = [];
      worker.on("task:canceled", (e) => canceled.push(e.taskId));
      worker.task("x", async (ctx) => {
        ran.push(ctx.taskId);
        if (ran.length === 1) await release.promise;
        return { ran: ctx.taskId };
      });
      const tasks = await submitMany(store, "x", 3);
      const done = worker.run();
      await waitFor(async () => (await countRunning(store)) === 3 && ran.length === 1, 5000, "1 running + 2 buffered");
      // Rows of one draw come back in no particular order: the first to run is whichever the worker started.
      const first = ran[0] as string;
      const [second, third] = tasks.map((t) => t.id).filter((id) => id !== first) as [string, string];
      expect((await store.cancel(third))?.status).toBe("running"); // flagged: the worker holds it
      const row = await waitForStatus(store, third, ["canceled"], 5000);
      expect(row).toMatchObject({ attempt: 1, result: null, error: null });
      // The event follows the worker's own read of the commit, which may come after this read of the row.
      await waitFor(() => canceled.length > 0, 5000, "task:canceled");
      expect(canceled).toEqual([third]);
      expect(ran).toEqual([first]); // the first handler is still blocked; the canceled one never started
      release.open();
      expect((await waitForStatus(store, second, ["succeeded"])).result).toEqual({ ran: second });
      expect((await waitForStatus(store, first, ["succeeded"])).attempt).toBe(1);
      expect(ran).toEqual([first, second]);
      await worker.stop();
      await done;
    });

    it("a buffered task whose lease a heartbeat finds gone is dropped unstarted; it runs again on a later attempt", async () => {
      let victim = "";
      // The store's own answer for a lease that is not renewed: this one's renewal never reaches it, so it really expires.
      const withholding = new Proxy(store, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target) as unknown;
          if (prop !== "heartbeatBatch" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
          return (input: { taskIds: string[]; workerId: string; leaseMs: number }) =>
            (value as TaskStore["heartbeatBatch"]).call(target, { ...input, taskIds: input.taskIds.filter((id) => id !== victim) });
        },
      });
      const worker = makeWorker(withholding, { concurrency: 1, prefetch: 2, leaseMs: 1000, heartbeatIntervalMs: 50 });
      const release = gate();
      const runs: [string, number][] = [];
      const lost: LeaseLostEvent[] = [];
      worker.on("lease:lost", (e) => lost.push(e));
      let tasks: Task[] = [];
      worker.task("x", async (ctx) => {
        runs.push([ctx.taskId, ctx.attempt]);
        if (runs.length > 1) return;
        // The first to run is whichever the worker started (a draw's rows come back in no particular order); the
        // victim is a buffered one, picked before its first heartbeat (50 ms after the claim).
        victim = tasks.map((t) => t.id).find((id) => id !== ctx.taskId) as string;
        await release.promise;
      });
      tasks = await submitMany(store, "x", 3);
      const done = worker.run();
      await waitFor(() => lost.length > 0, 5000, "the buffered task's lease to be lost");
      const lostId = victim;
      const first = runs[0]?.[0] as string;
      expect(lost.map((e) => [e.taskId, e.reason])).toEqual([[lostId, "heartbeat"]]);
      expect(runs).toEqual([[first, 1]]);
      victim = "";
      release.open();
      expect((await waitForStatus(store, lostId, ["succeeded"], 5000)).attempt).toBe(2);
      for (const task of tasks) if (task.id !== lostId) expect((await waitForStatus(store, task.id, ["succeeded"])).attempt).toBe(1);
      expect(runs.filter(([id]) => id === lostId)).toEqual([[lostId, 2]]);
      await worker.stop();
      await done;
    });

    it("maxRunMs counts from the handler's start, not from the claim", async () => {
      const worker = makeWorker(store, { concurrency: 1, prefetch: 1, maxRunMs: 1500 });
      worker.task("x", async () => {
        await delay(900);
        return "ok";
      });
      const tasks = await submitMany(store, "x", 2);
      const done = worker.run();
      // The second waited ~900 ms in the buffer and ran ~900 ms: 1,800 ms from its claim, within 1,500 ms of its start.
      for (const task of tasks) expect(await waitForStatus(store, task.id, ["succeeded"], 10_000)).toMatchObject({ attempt: 1, result: "ok" });
      await worker.stop();
      await done;
    });

    it("never claims a globalConcurrency name ahead: it is drawn only into a free slot", async () => {
      const worker = makeWorker(store, { concurrency: 1, prefetch: 3 });
      const release = gate();
      const ran: string[] = [];
      worker.task("lim", { globalConcurrency: 10 }, async (ctx) => {
        ran.push(ctx.name);
        await release.promise;
      });
      worker.task("free", async (ctx) => {
        ran.push(ctx.name);
        await release.promise;
      });
      await submitMany(store, "lim", 4);
      await submitMany(store, "free", 4);
      const done = worker.run();
      await waitFor(async () => (await countRunning(store)) === 4, 5000, "1 running + 3 buffered");
      await delay(100);
      expect(await countRunning(store)).toBe(4);
      // At most the one call that took the free slot is of the limited name; the buffer holds only "free" tasks.
      expect(await countRunning(store, "lim")).toBeLessThanOrEqual(1);
      expect(ran).toHaveLength(1);
      release.open();
      await waitFor(async () => (await store.list({ status: "succeeded", limit: 100 })).length === 8, 10_000, "every task");
      await worker.stop();
      await done;
    });
  });
}
