/**
 * A backlog that must not stall retention: 20,000 terminal rows drained in bounded
 * batches while a producer keeps submitting. Every row is made through the
 * store's own calls (submit, claim, complete, fail, cancel), never raw SQL.
 */
import type { Task, TaskStore } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { RetentionSweeper } from "../../src/index.ts";
import type { Backend, OpenStore } from "../helpers.ts";
import { POSTGRES, PurgeProbe, SQLITE } from "../helpers.ts";

const BACKLOG = 20_000;
const LIMIT = 1_000;
/** Rows built per `Promise.all`: enough to amortise awaits, few enough to keep memory flat. */
const CHUNK = 500;
/** Concurrent transactions building the backlog where the backend offers them (Postgres). */
const LANES = 8;
const WORKER = "backlog-worker";

const backends: readonly Backend[] = [SQLITE, POSTGRES];

async function inChunks<T>(count: number, make: (index: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < count; start += CHUNK) {
    const size = Math.min(CHUNK, count - start);
    out.push(...(await Promise.all(Array.from({ length: size }, (_, i) => make(start + i)))));
  }
  return out;
}

/**
 * Calls `make` for every index in [0, count): CHUNK calls at a time on the
 * store; or, where the backend runs calls inside one transaction
 * (`inTransaction`, Postgres), in LANES concurrent transactions, each making
 * its share one call after another — the same calls without a commit each,
 * about twice as fast there.
 */
async function forEachIndex(open: OpenStore, count: number, make: (store: TaskStore, index: number) => Promise<unknown>): Promise<void> {
  const { inTransaction } = open;
  if (inTransaction === undefined) {
    await inChunks(count, (index) => make(open.store, index));
    return;
  }
  await Promise.all(
    Array.from({ length: LANES }, (_, lane) =>
      inTransaction(async (view) => {
        for (let index = lane; index < count; index += LANES) await make(view, index);
      }),
    ),
  );
}

/** Claims from "backlog" until nothing is left, completing every other task and failing the rest. */
async function settleBacklog(open: OpenStore): Promise<void> {
  let settled = 0;
  const settle = (store: TaskStore, task: Task): Promise<Task> =>
    settled++ % 2 === 0
      ? store.complete({ taskId: task.id, workerId: WORKER, result: { n: settled } })
      : store.fail({ taskId: task.id, workerId: WORKER, error: { type: "Boom", code: "boom", message: "boom", retryable: false, details: {} }, retryable: false });
  const { inTransaction } = open;
  if (inTransaction === undefined) {
    for (;;) {
      const claimed = await open.store.claim({ queues: ["backlog"], workerId: WORKER, limit: CHUNK });
      if (claimed.length === 0) return;
      await Promise.all(claimed.map((task) => settle(open.store, task)));
    }
  }
  // Each lane's claims stay locked until its transaction commits, so the others skip them.
  await Promise.all(
    Array.from({ length: LANES }, () =>
      inTransaction(async (view) => {
        for (;;) {
          const claimed = await view.claim({ queues: ["backlog"], workerId: WORKER, limit: CHUNK / 2 });
          if (claimed.length === 0) return;
          for (const task of claimed) await settle(view, task);
        }
      }),
    ),
  );
}

/** A third each of canceled, succeeded and failed tasks, all in queue "backlog". */
async function buildBacklog(open: OpenStore): Promise<void> {
  const ids: string[] = [];
  await forEachIndex(open, BACKLOG, async (store, i) => {
    ids[i] = (await store.submit({ name: `job-${i % 3}`, queue: "backlog" })).id;
  });
  const toCancel = ids.filter((_, i) => i % 3 === 0);
  await forEachIndex(open, toCancel.length, (store, i) => store.cancel(toCancel[i]!));
  await settleBacklog(open);
}

const HOUR = 3_600_000;
/** Concurrent submit loops: a handful of API requests in flight at once. */
const PRODUCERS = 4;
const YOUNG = 50;

describe.each(backends)("a backlog of $label terminal rows", (backend) => {
  it(`drains ${BACKLOG} terminal rows in batches of ≤${LIMIT} while a producer keeps submitting`, { timeout: 120_000 }, async () => {
    // Real time plus a jump the test makes, so the backlog can age two hours in an instant.
    const open = await backend.open();
    const { store, advance, close } = open;
    try {
      const buildStarted = performance.now();
      await buildBacklog(open);
      const buildMs = performance.now() - buildStarted;
      const before = (await store.stats("backlog")).backlog!;
      expect(before.succeeded + before.failed + before.canceled).toBe(BACKLOG);
      expect(before.queued + before.running).toBe(0);

      await advance(2 * HOUR);
      // Finished just now: younger than the cutoff, so they must survive the sweep.
      const young = await inChunks(YOUNG, async () => {
        const task = await store.submit({ name: "young", queue: "backlog" });
        return (await store.cancel(task.id))!;
      });

      const probe = new PurgeProbe(store);
      const sweeper = new RetentionSweeper(probe, { olderThanMs: HOUR, limit: LIMIT });

      // Producers submit from macrotasks, as requests arriving over I/O would.
      let producing = true;
      const produced: string[] = [];
      const submitMs: number[] = [];
      const batchOfSubmit: number[] = [];
      const producers = Array.from({ length: PRODUCERS }, async () => {
        while (producing) {
          const started = performance.now();
          const task = await store.submit({ name: "fresh", queue: "live" });
          submitMs.push(performance.now() - started);
          produced.push(task.id);
          batchOfSubmit.push(probe.calls.length);
          await new Promise((resolve) => setImmediate(resolve));
        }
      });

      const sweepStarted = performance.now();
      const deleted = await sweeper.sweep();
      const sweepMs = performance.now() - sweepStarted;
      producing = false;
      await Promise.all(producers);
      await sweeper.stop();

      expect(deleted).toBe(BACKLOG);
      const sizes = probe.calls.map((c) => c.deleted);
      expect(sizes.every((n) => n <= LIMIT)).toBe(true);
      expect(sizes).toEqual([...Array.from({ length: BACKLOG / LIMIT }, () => LIMIT), 0]);
      expect(probe.calls.every((c) => c.input.limit === LIMIT && c.input.olderThanMs === HOUR)).toBe(true);

      // Every old terminal row is gone; the young ones are all still there.
      const backlogLeft = await store.list({ queue: "backlog", limit: BACKLOG + YOUNG });
      expect(backlogLeft.map((t) => t.id).sort()).toEqual(young.map((t) => t.id).sort());
      expect(backlogLeft.every((t) => t.status === "canceled")).toBe(true);

      // The producers ran between batches, and every row they made is still there, queued.
      const interleaved = new Set(batchOfSubmit.filter((n) => n > 0 && n < sizes.length));
      expect(interleaved.size).toBeGreaterThan(1);
      const live = await store.list({ queue: "live", limit: produced.length + 10 });
      expect(live.map((t) => t.id).sort()).toEqual([...produced].sort());
      expect(live.every((t) => t.status === "queued")).toBe(true);

      const maxBatch = Math.max(...probe.calls.map((c) => c.durationMs));
      const maxSubmit = Math.max(...submitMs);
      console.log(
        `retention backlog [${backend.label}]: built ${BACKLOG} terminal rows in ${buildMs.toFixed(0)} ms; ` +
          `swept ${deleted} rows in ${sizes.length} batches (limit ${LIMIT}) in ${sweepMs.toFixed(0)} ms ` +
          `(slowest batch ${maxBatch.toFixed(1)} ms, ${((deleted / sweepMs) * 1000).toFixed(0)} rows/s); ` +
          `${PRODUCERS} producers submitted ${produced.length} tasks meanwhile (during ${interleaved.size} of ${sizes.length} batches, slowest submit ${maxSubmit.toFixed(1)} ms), all still queued; ` +
          `${YOUNG} younger terminal rows kept`,
      );
    } finally {
      await close();
    }
  });
});
