/**
 * What each policy form purges, and how a rule drains in batches, written once
 * for every backend: `retention-sweeper.test.ts` runs it on the MemoryStore and
 * SQLite, `integration/retention-sweeper.test.ts` on Postgres.
 */
import type { TaskStore } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import type { Backend } from "./helpers.ts";
import { idsByStatus, PurgeProbe, taskIn } from "./helpers.ts";
import { clockedStore, SECOND, sweeperOf } from "./sweepers.ts";

/** Tasks in every status in two queues and two names, all finished at the same instant. */
async function mixedTasks(store: TaskStore): Promise<void> {
  for (const queue of ["default", "emails"]) {
    for (const name of ["job", "report"]) {
      for (const status of ["queued", "running", "succeeded", "failed", "canceled"] as const) {
        await taskIn(store, { queue, name, status });
      }
    }
  }
}

/** Both suites, on each of `backends`. */
export function describePurges(backends: readonly Backend[]): void {
  describe.each(backends)("what each policy form purges ($label)", (backend) => {
    it("one cutoff deletes every terminal task older than it, and nothing live or younger", async () => {
      const { store, advance } = await clockedStore(backend);
      await mixedTasks(store);
      await advance(10 * SECOND);
      const young = await taskIn(store, { status: "succeeded" });
      await advance(SECOND);
      const before = await idsByStatus(store);
      const deleted = await sweeperOf(store, { olderThanMs: 5 * SECOND }).sweep();
      const after = await idsByStatus(store);
      expect(deleted).toBe(12);
      expect(after.queued).toEqual(before.queued);
      expect(after.running).toEqual(before.running);
      expect(after.succeeded).toEqual([young.id]);
      expect(after.failed).toEqual([]);
      expect(after.canceled).toEqual([]);
    });

    it("a cutoff is strict: a task exactly olderThanMs old stays", async () => {
      const { store, advance } = await clockedStore(backend);
      const task = await taskIn(store, { status: "succeeded" });
      await advance(5 * SECOND);
      const sweeper = sweeperOf(store, { olderThanMs: 5 * SECOND });
      expect(await sweeper.sweep()).toBe(0);
      expect(await store.get(task.id)).not.toBeNull();
      await advance(1);
      expect(await sweeper.sweep()).toBe(1);
    });

    it("a per-status map applies each status its own cutoff and never sweeps a status left out", async () => {
      const { store, advance } = await clockedStore(backend);
      const oldCanceled = await taskIn(store, { status: "canceled" });
      const oldFailed = await taskIn(store, { status: "failed" });
      await advance(100 * SECOND);
      const midFailed = await taskIn(store, { status: "failed" });
      const midSucceeded = await taskIn(store, { status: "succeeded" });
      await advance(10 * SECOND);
      const newSucceeded = await taskIn(store, { status: "succeeded" });
      await advance(SECOND);
      const sweeper = sweeperOf(store, { olderThanMs: { succeeded: 5 * SECOND, failed: 60 * SECOND } });
      expect(await sweeper.sweep()).toBe(2);
      const after = await idsByStatus(store);
      expect(after.failed).toEqual([midFailed.id]);
      expect(after.succeeded).toEqual([newSucceeded.id]);
      expect(after.canceled).toEqual([oldCanceled.id]);
      expect(await store.get(oldFailed.id)).toBeNull();
      expect(await store.get(midSucceeded.id)).toBeNull();
      // Ages on: canceled is still never swept, however old.
      await advance(1_000_000 * SECOND);
      expect(await sweeper.sweep()).toBe(2);
      expect((await idsByStatus(store)).canceled).toEqual([oldCanceled.id]);
    });

    it("a rule list runs each rule as an independent purge with its own filters", async () => {
      const { store, advance } = await clockedStore(backend);
      await mixedTasks(store);
      await advance(10 * SECOND);
      const probe = new PurgeProbe(store);
      const sweeper = sweeperOf(probe, {
        olderThanMs: [
          { queue: "emails", status: "succeeded", olderThanMs: 5 * SECOND },
          { name: "report", status: "failed", olderThanMs: 0 },
          { queue: "default", name: "job", olderThanMs: 60 * SECOND },
        ],
      });
      expect(await sweeper.sweep()).toBe(4);
      expect(probe.calls.map((c) => c.input)).toEqual([
        { queue: "emails", status: "succeeded", olderThanMs: 5 * SECOND, limit: 1000 },
        { name: "report", status: "failed", olderThanMs: 0, limit: 1000 },
        { queue: "default", name: "job", olderThanMs: 60 * SECOND, limit: 1000 },
      ]);
      const left = await store.list({ limit: 1000 });
      const terminalLeft = left.filter((t) => ["succeeded", "failed", "canceled"].includes(t.status)).map((t) => `${t.queue}/${t.name}/${t.status}`);
      expect(terminalLeft.sort()).toEqual(
        [
          "default/job/succeeded",
          "default/job/failed",
          "default/job/canceled",
          "default/report/succeeded",
          "default/report/canceled",
          "emails/job/failed",
          "emails/job/canceled",
          "emails/report/canceled",
        ].sort(),
      );
      expect(left.filter((t) => t.status === "queued" || t.status === "running")).toHaveLength(8);
    });

    it("frees the key of a purged task", async () => {
      const { store, advance } = await clockedStore(backend);
      const task = await store.submit({ name: "job", key: "order-1" });
      await store.cancel(task.id);
      await advance(SECOND);
      await sweeperOf(store, { olderThanMs: 0 }).sweep();
      expect(await store.getByKey("order-1")).toBeNull();
      const again = await store.submit({ name: "job", key: "order-1", conflict: "reject" });
      expect(again.id).not.toBe(task.id);
    });
  });

  describe.each(backends)("batches ($label)", (backend) => {
    it("drains a rule in purges of at most limit rows until one comes back short", async () => {
      const { store, advance } = await clockedStore(backend);
      for (let i = 0; i < 25; i += 1) await taskIn(store, { status: i % 2 === 0 ? "succeeded" : "canceled" });
      await advance(SECOND);
      const probe = new PurgeProbe(store);
      expect(await sweeperOf(probe, { olderThanMs: 0, limit: 10 }).sweep()).toBe(25);
      expect(probe.calls.map((c) => c.deleted)).toEqual([10, 10, 5]);
      expect(probe.calls.every((c) => c.input.limit === 10)).toBe(true);
    });

    it("needs one more, empty purge when the backlog is an exact multiple of limit", async () => {
      const { store, advance } = await clockedStore(backend);
      for (let i = 0; i < 20; i += 1) await taskIn(store, { status: "canceled" });
      await advance(SECOND);
      const probe = new PurgeProbe(store);
      expect(await sweeperOf(probe, { olderThanMs: 0, limit: 10 }).sweep()).toBe(20);
      expect(probe.calls.map((c) => c.deleted)).toEqual([10, 10, 0]);
    });

    it("drains every rule of a map separately, each in bounded batches", async () => {
      const { store, advance } = await clockedStore(backend);
      for (let i = 0; i < 7; i += 1) await taskIn(store, { status: "succeeded" });
      for (let i = 0; i < 3; i += 1) await taskIn(store, { status: "failed" });
      await advance(SECOND);
      const probe = new PurgeProbe(store);
      expect(await sweeperOf(probe, { olderThanMs: { succeeded: 0, failed: 0 }, limit: 3 }).sweep()).toBe(10);
      expect(probe.calls.map((c) => [c.input.status, c.deleted])).toEqual([
        ["succeeded", 3],
        ["succeeded", 3],
        ["succeeded", 1],
        ["failed", 3],
        ["failed", 0],
      ]);
    });

    it("yields to the event loop between batches: a timer set during the sweep fires before it ends", async () => {
      const { store, advance } = await clockedStore(backend);
      for (let i = 0; i < 50; i += 1) await taskIn(store, { status: "canceled" });
      await advance(SECOND);
      const probe = new PurgeProbe(store);
      let firedAtCall: number | null = null;
      let immediateAtCall: number | null = null;
      probe.onPurge = () => {
        if (probe.calls.length > 0) return;
        setTimeout(() => (firedAtCall ??= probe.calls.length), 0);
        setImmediate(() => (immediateAtCall ??= probe.calls.length));
        // The timer is due 1 ms from now: let that pass inside the first purge. Otherwise a fast machine can run
        // all 26 in-memory batches within that millisecond, and the timer fires after the sweep however it yields.
        const due = performance.now() + 2;
        while (performance.now() < due) {
          // spin
        }
      };
      expect(await sweeperOf(probe, { olderThanMs: 0, limit: 2 }).sweep()).toBe(50);
      expect(probe.calls).toHaveLength(26);
      // In memory, the yield between batches is the only way out to the event loop, so the immediate runs right
      // after the first purge; over a network, or behind SQLite's write queue (each turn starts on setImmediate), it
      // may already run while the first purge waits for its answer.
      if (backend.yieldsInCall === true) expect(immediateAtCall).toBeLessThanOrEqual(1);
      else expect(immediateAtCall).toBe(1);
      expect(firedAtCall).not.toBeNull();
      expect(firedAtCall!).toBeLessThan(26);
    });

    it("does not yield before a sweep's first purge", async () => {
      const { store } = await clockedStore(backend);
      const probe = new PurgeProbe(store);
      let immediateRan = false;
      probe.onPurge = () => {
        expect(immediateRan).toBe(false);
      };
      setImmediate(() => (immediateRan = true));
      // A failed expectation inside purge would reject the sweep.
      expect(await sweeperOf(probe, { olderThanMs: 0 }).sweep()).toBe(0);
      expect(probe.calls).toHaveLength(1);
    });

    it("never overlaps two sweeps of one sweeper: a second sweep() runs after the first", async () => {
      const { store, advance } = await clockedStore(backend);
      for (let i = 0; i < 30; i += 1) await taskIn(store, { status: "canceled" });
      await advance(SECOND);
      const probe = new PurgeProbe(store);
      let maxInFlight = 0;
      probe.onPurge = () => (maxInFlight = Math.max(maxInFlight, probe.inFlight));
      const sweeper = sweeperOf(probe, { olderThanMs: 0, limit: 4 });
      const [a, b] = await Promise.all([sweeper.sweep(), sweeper.sweep()]);
      expect(maxInFlight).toBe(1);
      expect(a).toBe(30);
      expect(b).toBe(0);
    });
  });
}
