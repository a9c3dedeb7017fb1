/**
 * The backlog scenario: 20,000 terminal rows drained in bounded
 * batches while a producer keeps submitting. Every row is made through the
 * store's own calls (submit, claim, complete, fail, cancel), never raw SQL.
 */
import type { TaskStore } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { RetentionSweeper } from "../src/index.ts";
import type { Backend } from "./helpers.ts";
import { PurgeProbe, SQLITE } from "./helpers.ts";

const BACKLOG = 20_000;
const LIMIT = 1_000;
/** Rows built per `Promise.all`: enough to amortise awaits, few enough to keep memory flat. */
const CHUNK = 500;
const WORKER = "backlog-worker";

// Postgres joins once its per-file test database helper lands.
const backends: readonly Backend[] = [SQLITE];

async function inChunks<T>(count: number, make: (index: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < count; start += CHUNK) {
    const size = Math.min(CHUNK, count - start);
    out.push(...(await Promise.all(Array.from({ length: size }, (_, i) => make(start + i)))));
  }
  return out;
}

/** A third each of canceled, succeeded and failed tasks, all in queue "backlog". */
async function buildBacklog(store: TaskStore): Promise<void> {
  const tasks = await inChunks(BACKLOG, (i) => store.submit({ name: `job-${i % 3}`, queue: "backlog" }));
  const toCancel = tasks.filter((_, i) => i % 3 === 0);
  await inChunks(toCancel.length, (i) => store.cancel(toCancel[i]!.id));
  let settled = 0;
  for (;;) {
    const claimed = await store.claim({ queues: ["backlog"], workerId: WORKER, limit: CHUNK });
    if (claimed.length === 0) break;
    await Promise.all(
      claimed.map((task) =>
        settled++ % 2 === 0
          ? store.complete({ taskId: task.id, workerId: WORKER, result: { n: settled } })
          : store.fail({ taskId: task.id, workerId: WORKER, error: { type: "Boom", code: "boom", message: "boom", retryable: false, details: {} }, retryable: false }),
      ),
    );
  }
}

const HOUR = 3_600_000;
/** Concurrent submit loops: a handful of API requests in flight at once. */
const PRODUCERS = 4;
const YOUNG = 50;

describe.each(backends)("a backlog of $label terminal rows", (backend) => {
  it(`drains ${BACKLOG} terminal rows in batches of ≤${LIMIT} while a producer keeps submitting`, { timeout: 120_000 }, async () => {
    // Real time plus a jump the test makes, so the backlog can age two hours in an instant.
    let jumpMs = 0;
    const { store, close } = await backend.open({ clock: () => Date.now() + jumpMs });
    try {
      const buildStarted = performance.now();
      await buildBacklog(store);
      const buildMs = performance.now() - buildStarted;
      const before = (await store.stats("backlog")).backlog!;
      expect(before.succeeded + before.failed + before.canceled).toBe(BACKLOG);
      expect(before.queued + before.running).toBe(0);

      jumpMs = 2 * HOUR;
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
