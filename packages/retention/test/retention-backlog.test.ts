/**
 * The backlog scenario: 20,000 terminal rows drained in bounded
 * batches while a producer keeps submitting. Every row is made through the
 * store's own calls (submit, claim, complete, fail, cancel), never raw SQL.
 */
import { MemoryStore } from "@cairnq/conformance";
import type { TaskStore } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { RetentionSweeper } from "../src/index.ts";
import { PurgeProbe } from "./helpers.ts";

const BACKLOG = 20_000;
const LIMIT = 1_000;
/** Rows built per `Promise.all`: enough to amortise awaits, few enough to keep memory flat. */
const CHUNK = 500;
const WORKER = "backlog-worker";

interface Backend {
  label: string;
  open(): Promise<{ store: TaskStore; close(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    label: "memory",
    async open() {
      const store = new MemoryStore();
      return { store, close: () => store.close() };
    },
  },
];

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

describe.each(backends)("a backlog of $label terminal rows", (backend) => {
  it(`drains ${BACKLOG} terminal rows in batches of ≤${LIMIT} while a producer keeps submitting`, { timeout: 120_000 }, async () => {
    const { store, close } = await backend.open();
    try {
      const buildStarted = performance.now();
      await buildBacklog(store);
      const buildMs = performance.now() - buildStarted;
      const before = (await store.stats("backlog")).backlog!;
      expect(before.succeeded + before.failed + before.canceled).toBe(BACKLOG);
      expect(before.queued + before.running).toBe(0);
      // Purge's cutoff is strict (completed_at_ms < now − olderThanMs): let the clock move past the last settlement.
      await new Promise((resolve) => setTimeout(resolve, 5));

      const probe = new PurgeProbe(store);
      const sweeper = new RetentionSweeper(probe, { olderThanMs: 0, limit: LIMIT });

      // The producer submits from macrotasks, as requests arriving over I/O would.
      let producing = true;
      const produced: string[] = [];
      const submittedDuringBatch: number[] = [];
      const producer = (async () => {
        while (producing) {
          const task = await store.submit({ name: "fresh", queue: "live" });
          produced.push(task.id);
          submittedDuringBatch.push(probe.calls.length);
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();

      const sweepStarted = performance.now();
      const deleted = await sweeper.sweep();
      const sweepMs = performance.now() - sweepStarted;
      producing = false;
      await producer;
      await sweeper.stop();

      expect(deleted).toBe(BACKLOG);
      const sizes = probe.calls.map((c) => c.deleted);
      expect(sizes.every((n) => n <= LIMIT)).toBe(true);
      expect(sizes).toEqual([...Array.from({ length: BACKLOG / LIMIT }, () => LIMIT), 0]);
      expect(probe.calls.every((c) => c.input.limit === LIMIT)).toBe(true);

      const after = await store.stats();
      const backlog = after.backlog ?? { queued: 0, running: 0, succeeded: 0, failed: 0, canceled: 0 };
      expect(backlog.succeeded + backlog.failed + backlog.canceled + backlog.queued + backlog.running).toBe(0);

      // The producer ran between batches, and every row it made is still there, queued.
      const interleaved = new Set(submittedDuringBatch.filter((n) => n > 0 && n < sizes.length));
      expect(interleaved.size).toBeGreaterThan(1);
      const live = await store.list({ queue: "live", limit: produced.length + 10 });
      expect(live.map((t) => t.id).sort()).toEqual([...produced].sort());
      expect(live.every((t) => t.status === "queued")).toBe(true);
      expect(after.live?.queued).toBe(produced.length);

      const maxBatch = Math.max(...probe.calls.map((c) => c.durationMs));
      console.log(
        `retention backlog [${backend.label}]: built ${BACKLOG} terminal rows in ${buildMs.toFixed(0)} ms; ` +
          `swept ${deleted} rows in ${sizes.length} batches (limit ${LIMIT}) in ${sweepMs.toFixed(0)} ms ` +
          `(slowest batch ${maxBatch.toFixed(1)} ms, ${((deleted / sweepMs) * 1000).toFixed(0)} rows/s); ` +
          `producer submitted ${produced.length} tasks meanwhile (during ${interleaved.size} of ${sizes.length} batches), all still queued`,
      );
    } finally {
      await close();
    }
  });
});
