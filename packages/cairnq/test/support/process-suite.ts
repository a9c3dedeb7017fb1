/**
 * The multi-process suite, written once for every backend: producers, workers
 * and the API side run as separate OS processes on one database, as in
 * production. `processes-sqlite.test.ts` runs it on a SQLite file,
 * `processes-postgres.test.ts` on a fresh Postgres schema
 * (`postgres:<dsn>#schema=<name>`).
 *
 * The test process is the API side (a `CairnQ` client on the sources);
 * fixture processes run the BUILT `cairnq` (see fixtures/backend.mjs).
 * Deadlines below only stop a hung test: every assertion is on outcomes.
 */
import { performance } from "node:perf_hooks";
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import { defineTask, TaskCanceled, TaskFailed } from "cairnq";
import type { CairnQ } from "cairnq";
import { Children, describeExit } from "./processes.ts";
import type { Child } from "./processes.ts";
import { listAll, sleep } from "./waiting.ts";

/** One fresh, empty database for one test. */
export interface ProcessDatabase {
  /** The fixtures' first argument: `sqlite:<path>` or `postgres:<dsn>`. */
  fixtureArg: string;
  /** The API side's client on the same database (not yet connected: it connects lazily). */
  client: CairnQ;
  /** Called after the client is closed and every child has exited. */
  dispose(): Promise<void>;
}

export interface ProcessBackend {
  /** Shown in test names and log lines: "sqlite", "postgres". */
  label: string;
  fresh(): Promise<ProcessDatabase>;
  /**
   * Adds a test that logs (never asserts) `call()` latency p50/p95/p99 over
   * {@link LATENCY_ROUND_TRIPS} round trips to an idle worker process with
   * the worker's default poll interval — fast only where push wakeups work.
   * @default false
   */
  measureCallLatency?: boolean;
  /**
   * Adds a test that a `call()` to an idle worker process reads no row after
   * its submit: the worker's settlement sends the terminal row with its done
   * signal (Postgres's done-row extension), or the wait's wake-up reads it
   * (SQLite's, after the commit it notices), and the wait returns it.
   * @default false
   */
  doneRows?: boolean;
}

/** Worker fixture options: the worker's own, plus `hold: "forever"` for the hanging handler. */
interface WorkerConfig {
  concurrency?: number;
  leaseMs?: number;
  heartbeatIntervalMs?: number;
  pollIntervalMs?: number;
  hold?: "forever";
}

const PRODUCERS = 2;
const PER_PRODUCER = 1_500;
const TOTAL = PRODUCERS * PER_PRODUCER;
const TERMINAL = ["succeeded", "failed", "canceled"] as const;

/** Sequential `call()`s measured by the latency test, after a few unmeasured ones. */
export const LATENCY_ROUND_TRIPS = 100;
const LATENCY_WARMUP = 5;

/** Nearest-rank percentile of ascending `sorted`. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

function countTerminal(stats: Awaited<ReturnType<CairnQ["stats"]>>): { terminal: number; total: number } {
  let terminal = 0;
  let total = 0;
  for (const byStatus of Object.values(stats)) {
    for (const [status, count] of Object.entries(byStatus)) {
      total += count;
      if ((TERMINAL as readonly string[]).includes(status)) terminal += count;
    }
  }
  return { terminal, total };
}

export function describeProcessSuite(backend: ProcessBackend): void {
  describe(`real processes on ${backend.label}`, () => {
    const children = new Children();
    let db: ProcessDatabase | undefined;

    const database = (): ProcessDatabase => {
      if (!db) throw new Error("beforeEach did not create the database");
      return db;
    };

    const startWorker = async (label: string, config: WorkerConfig): Promise<{ child: Child; workerId: string }> => {
      const child = children.spawn(label, "worker.mjs", [database().fixtureArg, JSON.stringify(config)]);
      const ready = await child.next("ready");
      return { child, workerId: String(ready.workerId) };
    };

    /** SIGTERM: `serve()` drains and closes, and the process must then exit 0 on its own. */
    const stopWorker = async (child: Child): Promise<void> => {
      const exit = await children.stop(child);
      expect(exit, `${child.label} after SIGTERM${child.tail()}`).toEqual({ code: 0, signal: null });
    };

    beforeEach(async () => {
      db = await backend.fresh();
    });

    afterEach(async () => {
      const current = db;
      db = undefined;
      try {
        await children.reap();
      } finally {
        await current?.client.close();
        await current?.dispose();
      }
    });

    it(`3 worker processes × concurrency 8 drain ${TOTAL} tasks submitted by ${PRODUCERS} producer processes, none lost`, async () => {
      const { fixtureArg, client } = database();
      const started = performance.now();

      // Nothing has opened the fresh database yet: the workers and producers set up its schema among themselves.
      const workers = await Promise.all(
        [1, 2, 3].map((i) => startWorker(`worker ${i}`, { concurrency: 8, pollIntervalMs: 50 })),
      );
      const producers = Array.from({ length: PRODUCERS }, (_, i) =>
        children.spawn(`producer ${i + 1}`, "producer.mjs", [
          fixtureArg,
          JSON.stringify({ from: i * PER_PRODUCER, count: PER_PRODUCER, keyEvery: 10, lanes: 8 }),
        ]),
      );

      const reports = await Promise.all(producers.map((producer) => producer.next("done", 90_000)));
      for (const producer of producers) {
        expect(await producer.exitWithin(20_000), `${producer.label}${producer.tail()}`).toEqual({ code: 0, signal: null });
      }
      const submitted = reports.reduce((sum, report) => sum + Number(report.submitted), 0);
      expect(submitted).toBe(TOTAL);
      for (const report of reports) {
        expect(report.mismatches, "a keyed resubmit made a second task").toEqual([]);
        expect(report.reused).toBe(report.keyed);
      }
      const keyed = reports.reduce((sum, report) => sum + Number(report.keyed), 0);

      // The API side waits until every task is terminal. A stall (no task
      // finishing for 30 s) or a dead worker fails here with what was seen.
      let last = -1;
      let lastChange = performance.now();
      for (;;) {
        const { terminal, total } = countTerminal(await client.stats());
        if (terminal >= TOTAL && total >= TOTAL) break;
        if (terminal !== last) {
          last = terminal;
          lastChange = performance.now();
        }
        const dead = workers.filter(({ child }) => !child.alive);
        if (dead.length > 0 || performance.now() - lastChange > 30_000) {
          const errors = workers.flatMap(({ child }) => child.of("on-error").slice(0, 3).map((e) => `${child.label}: ${String(e.phase)} ${String(e.name)} ${String(e.message)}`));
          throw new Error(
            `stuck at ${terminal}/${TOTAL} terminal (${total} rows); ` +
              `workers: ${workers.map(({ child }) => `${child.label} ${describeExit(child.alive ? null : { code: child.proc.exitCode, signal: child.proc.signalCode })}`).join(", ")}\n` +
              `${errors.join("\n")}${dead.map(({ child }) => child.tail()).join("")}`,
          );
        }
        await sleep(200);
      }
      const wallMs = Math.round(performance.now() - started);
      for (const { child } of workers) await stopWorker(child);

      const rows = await listAll(client, "double");
      expect(rows).toHaveLength(TOTAL);
      const stats = await client.stats();
      expect(stats.default).toMatchObject({ queued: 0, running: 0, succeeded: TOTAL, failed: 0, canceled: 0 });
      expect(countTerminal(stats).total).toBe(TOTAL);

      const pids = new Map(workers.map(({ child }) => [child.pid, child.label]));
      const ids = new Set(reports.flatMap((report) => report.ids as string[]));
      const seen = new Set<number>();
      const perWorker = new Map<string, number>();
      const wrong: string[] = [];
      for (const row of rows) {
        const { n } = row.payload as { n: number };
        const result = row.result as { n: number; doubled: number; pid: number } | null;
        seen.add(n);
        const worker = result ? pids.get(result.pid) : undefined;
        if (row.status !== "succeeded" || !result || result.n !== n || result.doubled !== n * 2 || !worker || !ids.has(row.id)) {
          wrong.push(`${row.id} n=${n} ${row.status} ${JSON.stringify(result)}`);
          continue;
        }
        perWorker.set(worker, (perWorker.get(worker) ?? 0) + 1);
      }
      expect(wrong.slice(0, 10), `${wrong.length} tasks without their own result`).toEqual([]);
      expect(seen.size, "distinct payloads").toBe(TOTAL);
      expect(ids.size, "distinct task ids reported by the producers").toBe(TOTAL);
      expect(perWorker.size, "worker processes that took part").toBeGreaterThan(1);
      const redelivered = rows.filter((row) => row.attempt > 1).length;

      const counts = [...perWorker].map(([label, count]) => `${label}=${count}`).join(" ");
      // Errors the workers survived (busy retries, a late heartbeat on a loaded machine) are reported, not failed on:
      // the outcome above is what the protocol promises.
      const survived = workers.flatMap(({ child }) => child.of("on-error"));
      const survivedKinds = [...new Set(survived.map((e) => `${String(e.phase)}:${String(e.name)}`))].join(",");
      console.log(
        `[${backend.label}] drain: submitted ${submitted} (${keyed} keyed, each resubmitted and reused) by ${PRODUCERS} producers / ` +
          `succeeded ${rows.filter((row) => row.status === "succeeded").length} / per worker ${counts} / ` +
          `redelivered ${redelivered} / wall ${wallMs} ms / worker onError ${survived.length}${survivedKinds ? ` (${survivedKinds})` : ""}`,
      );
    }, 150_000);

    it("a worker process killed with SIGKILL mid-handler: its tasks are recovered after the lease expires and completed by another", async () => {
      const { client } = database();
      const doomed = await startWorker("worker A (hangs, then SIGKILL)", { concurrency: 4, leaseMs: 1_000, pollIntervalMs: 50, hold: "forever" });
      const tasks = await Promise.all([0, 1, 2, 3].map((i) => client.submit("hold", { i })));
      const ids = new Set(tasks.map((task) => task.id));

      await doomed.child.waitUntil("4 handlers started", (messages) => {
        const started = new Set(messages.filter((m) => m.type === "started").map((m) => m.taskId));
        return [...ids].every((id) => started.has(id)) ? true : undefined;
      });
      for (const task of tasks) {
        expect(await client.get(task.id)).toMatchObject({ status: "running", attempt: 1, worker_id: doomed.workerId });
      }

      doomed.child.proc.kill("SIGKILL");
      expect(await doomed.child.exitWithin(10_000)).toEqual({ code: null, signal: "SIGKILL" });

      const rescuer = await startWorker("worker B", { concurrency: 4, leaseMs: 1_000, pollIntervalMs: 50 });
      const finals = await Promise.all(tasks.map((task) => client.wait(task.id, { timeoutMs: 30_000 })));
      for (const row of finals) {
        expect(row).toMatchObject({ status: "succeeded", attempt: 2, worker_id: rescuer.workerId });
        expect(row.result).toEqual({ pid: rescuer.child.pid, attempt: 2 });
      }
      const rerun = rescuer.child.of("started").filter((m) => ids.has(String(m.taskId)));
      expect(rerun.map((m) => m.attempt)).toEqual([2, 2, 2, 2]);
      await stopWorker(rescuer.child);

      const redelivered = finals.filter((row) => row.attempt === 2).length;
      console.log(
        `[${backend.label}] SIGKILL: ${tasks.length} tasks held by pid ${doomed.child.pid} (killed), ` +
          `redelivered ${redelivered}, succeeded on pid ${rescuer.child.pid}`,
      );
    }, 60_000);

    it("a cancel from the API process reaches a running handler in a worker process; the task ends canceled", async () => {
      const { client } = database();
      const { child } = await startWorker("worker", { concurrency: 2, leaseMs: 5_000, heartbeatIntervalMs: 50, pollIntervalMs: 50 });

      const task = await client.submit("until-canceled", {});
      await child.waitUntil("the handler to start", (messages) => messages.find((m) => m.type === "started" && m.taskId === task.id));

      const flagged = await client.cancel(task.id);
      expect(flagged?.status).toBe("running");
      expect(flagged?.cancel_requested_at_ms).not.toBeNull();

      const saw = await child.waitUntil("the handler to see the cancel", (messages) => messages.find((m) => m.type === "saw-cancel" && m.taskId === task.id));
      const final = await client.wait(task.id, { timeoutMs: 30_000 });
      // Cancel wins over the handler's return: its result is discarded, its progress kept.
      expect(final).toMatchObject({ status: "canceled", result: null, progress: 0.5, message: "saw cancel" });
      expect(saw.pid).toBe(child.pid);

      // The same through a key, with a call() waiting on the task.
      const call = client.call("until-canceled", {}, { key: "cancel-me", waitTimeoutMs: 30_000 });
      const keyed = await child.waitUntil("the keyed handler to start", (messages) =>
        messages.some((m) => m.type === "started" && m.taskId !== task.id) ? true : undefined,
      );
      expect(keyed).toBe(true);
      expect((await client.cancelByKey("cancel-me"))?.cancel_requested_at_ms).not.toBeNull();
      const error: unknown = await call.then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(TaskCanceled);
      expect((await client.getByKey("cancel-me"))?.message).toBe("saw cancel");
      // The handler's report travels over IPC, the task's row through the database: the row can be read first.
      await child.waitUntil("the keyed handler's report that it saw the cancel", (messages) =>
        messages.filter((m) => m.type === "saw-cancel").length === 2 ? true : undefined,
      );
      expect(child.of("saw-cancel")).toHaveLength(2);
      await stopWorker(child);
    }, 60_000);

    it("call() in the API process is served by a worker process: a typed result, or TaskFailed with the handler's envelope", async () => {
      const { client } = database();
      const { child } = await startWorker("worker", { concurrency: 2, pollIntervalMs: 50 });

      const add = defineTask<{ a: number; b: number }, { sum: number; pid: number }>("add");
      const result = await client.call(add, { a: 2, b: 40 }, { waitTimeoutMs: 30_000 });
      expectTypeOf(result).toEqualTypeOf<{ sum: number; pid: number }>();
      expect(result).toEqual({ sum: 42, pid: child.pid });
      expect(result.pid).not.toBe(process.pid);

      const error: unknown = await client.call("refuse", { reason: "nope" }, { waitTimeoutMs: 30_000 }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(TaskFailed);
      expect(error).toMatchObject({ code: "refused", retryable: false, details: { pid: child.pid } });
      expect((error as TaskFailed).message).toContain("refused: nope");
      await stopWorker(child);
    }, 60_000);

    it("call()s to an idle worker process end as their tasks do, by the backend's wake-ups alone (worker and wait poll intervals of an hour)", async () => {
      const { client } = database();
      // Neither side sleeps less than an hour on its own: every call below ends only because the worker's idle wait
      // ends soon after the submit commits, and the caller's wait soon after the complete commits (push signals,
      // SQLite's file watch, MySQL's checks). 40 in a row, each a fresh idle period for the worker.
      const { child } = await startWorker("worker", { concurrency: 2, pollIntervalMs: 3_600_000 });
      const add = defineTask<{ a: number; b: number }, { sum: number; pid: number }>("add");
      for (let i = 0; i < 40; i++) {
        const result = await client.call(add, { a: i, b: 1 }, { waitTimeoutMs: 20_000, pollMs: 3_600_000 });
        expect(result).toEqual({ sum: i + 1, pid: child.pid });
      }
      await stopWorker(child);
    }, 120_000);

    if (backend.doneRows === true) {
      it("call() to an idle worker process reads no row after its submit: the done row (or the wake-up's read) is the answer", async () => {
        const { client } = database();
        const { child } = await startWorker("worker", { concurrency: 2 });
        const add = defineTask<{ a: number; b: number }, { sum: number; pid: number }>("add");
        await client.call(add, { a: 0, b: 0 }, { waitTimeoutMs: 30_000 });
        // Counted on the client's own store, after the warm-up call LISTENed on the done channels (or started its watch).
        const store = client.store as unknown as Record<"get" | "getStatus", (id: string) => Promise<unknown>>;
        const reads: string[] = [];
        for (const name of ["get", "getStatus"] as const) {
          const read = store[name].bind(client.store);
          store[name] = (id) => {
            reads.push(name);
            return read(id);
          };
        }
        // Each handler naps 50 ms: a task done before its submit's answer was read (a client descheduled under load, the
        // done signal arriving with that answer) is read once by design, so the tasks here outlast the submit.
        const nap = defineTask<{ ms: number }, { pid: number; attempt: number }>("nap");
        for (let i = 1; i <= 10; i += 1) {
          await sleep(10);
          // A wait that never wakes on its own timer (no poll beat before the task is done): only a done signal ends its sleep.
          expect(await client.call(nap, { ms: 50 }, { waitTimeoutMs: 60_000, pollMs: 30_000 })).toEqual({ pid: child.pid, attempt: 1 });
        }
        expect(reads).toEqual([]);
        await stopWorker(child);
      }, 90_000);
    }

    if (backend.measureCallLatency === true) {
      it(`call() latency over ${LATENCY_ROUND_TRIPS} round trips to an idle worker process (logged, not asserted)`, async () => {
        const { client } = database();
        // The worker's default poll interval: a round trip faster than it is a push wakeup at work.
        const { child } = await startWorker("worker", { concurrency: 2 });
        const add = defineTask<{ a: number; b: number }, { sum: number; pid: number }>("add");

        const samples: number[] = [];
        for (let i = 0; i < LATENCY_WARMUP + LATENCY_ROUND_TRIPS; i += 1) {
          // Let the worker finish its claim cycle and go idle, so each call wakes an idle worker.
          await sleep(10);
          const started = performance.now();
          const result = await client.call(add, { a: i, b: 1 }, { waitTimeoutMs: 30_000 });
          const elapsed = performance.now() - started;
          expect(result).toEqual({ sum: i + 1, pid: child.pid });
          if (i >= LATENCY_WARMUP) samples.push(elapsed);
        }
        await stopWorker(child);

        const sorted = [...samples].sort((a, b) => a - b);
        const ms = (value: number): string => `${value.toFixed(1)} ms`;
        console.log(
          `[${backend.label}] call() latency, ${samples.length} sequential round trips to an idle worker process (default pollIntervalMs): ` +
            `p50 ${ms(percentile(sorted, 50))} / p95 ${ms(percentile(sorted, 95))} / p99 ${ms(percentile(sorted, 99))} / max ${ms(sorted.at(-1) ?? Number.NaN)}`,
        );
      }, 60_000);
    }
  });
}
