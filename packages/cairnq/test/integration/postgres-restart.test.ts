/**
 * The Postgres server restarted under a drain (connections that die or
 * hang): two real worker processes (`Worker.postgres`) drain tasks
 * while the server is shut down — fast, then immediate — and kept down for
 * a second or more, then started again. The workers must survive, reconnect
 * and claim again soon after the server is back; no task may be lost (each
 * ends succeeded, its result the one its last attempt produced); a submit
 * made while the server is down must fail with a clear error within a
 * bounded time, or succeed once it is back — never hang.
 *
 * The server is a throwaway cluster this file creates (initdb into a temp
 * dir, a free port; scripts/pg-env.mjs), never the shared one: stopping a
 * server other tests use would break them. `synchronous_commit` is on for
 * its database, so an immediate shutdown cannot lose a commit already
 * acknowledged (the throwaway default turns it off for speed).
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CairnQ } from "cairnq";
import { startThrowawayCluster } from "../../../../scripts/pg-env.mjs";
import type { ThrowawayCluster } from "../../../../scripts/pg-env.mjs";
import { Children } from "../support/processes.ts";
import type { Child } from "../support/processes.ts";
import { describeFixtureError, listAll, sleep, until as untilAnswer } from "../support/waiting.ts";

const LEASE_MS = 3_000;
const NAP_MS = 250;
const TASKS = 120;
/** A submit while the server is down must settle within this: the client's connectTimeoutMs plus slack for a loaded machine. */
const CONNECT_TIMEOUT_MS = 3_000;
const SUBMIT_BOUND_MS = CONNECT_TIMEOUT_MS + 12_000;
/** After the server is back, each worker must have claimed again within this (its claim backoff is at most 5 s). */
const RESUME_BOUND_MS = 30_000;

/** {@link untilAnswer}, where a probe that fails (the server is down or restarting) means "not yet", not an error. */
function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, context?: () => string): Promise<T> {
  return untilAnswer(
    what,
    () =>
      Promise.resolve()
        .then(probe)
        .catch(() => undefined),
    timeoutMs,
    context,
  );
}

/** How one submit made while the server was down ended. */
interface DownSubmit {
  ms: number;
  id?: string;
  error?: string;
  /** True when it settled after the server had been started again. */
  afterRestart: boolean;
}

describe("a Postgres server restarted during a drain by real worker processes", () => {
  const children = new Children();
  let cluster: ThrowawayCluster | undefined;

  beforeAll(async () => {
    cluster = await startThrowawayCluster();
    const admin = new pg.Client({ connectionString: cluster.dsn });
    await admin.connect();
    try {
      await admin.query("ALTER DATABASE test SET synchronous_commit TO on");
    } finally {
      await admin.end();
    }
  }, 120_000);

  afterAll(async () => {
    try {
      await children.reap();
    } finally {
      await cluster?.stop();
    }
  });

  it.each([
    ["fast", 1_500],
    ["immediate", 2_500],
  ] as const)(
    "%s shutdown, down %i ms: the workers survive and claim again, no task is lost, submits while down fail clearly or succeed",
    async (mode, downMs) => {
      const db = cluster!;
      const schema = `cq_restart_${mode}`;
      const api = CairnQ.postgres(db.dsn, { schema, max: 4, timeouts: { connectTimeoutMs: CONNECT_TIMEOUT_MS, queryTimeoutMs: 10_000 } });
      const workers: Child[] = [];
      try {
        await api.connect();
        const config = JSON.stringify({
          concurrency: 4,
          leaseMs: LEASE_MS,
          pollIntervalMs: 500,
          timeouts: { connectTimeoutMs: CONNECT_TIMEOUT_MS, queryTimeoutMs: 10_000 },
        });
        for (const label of ["worker-a", "worker-b"]) workers.push(children.spawn(label, "worker.mjs", [`postgres:${db.dsn}#schema=${schema}`, config]));
        await Promise.all(workers.map((w) => w.next("ready")));
        const context = (): string =>
          workers
            .map((w) => `\n${w.label} ${w.alive ? "alive" : "exited"}; onError: ${[...new Set(w.of("on-error").map(describeFixtureError))].join(", ") || "none"}${w.tail()}`)
            .join("");

        // Spare attempts: a settlement lost with its connection is redelivered after the lease expires.
        const submitted = await Promise.all(Array.from({ length: TASKS }, (_, n) => api.submit("nap", { ms: NAP_MS, n }, { maxAttempts: 20 })));
        const succeeded = async (): Promise<number> => (await api.stats()).default?.succeeded ?? 0;
        await until("the drain under way (10 tasks succeeded)", async () => ((await succeeded()) >= 10 ? true : undefined), 60_000, context);
        const before = await api.stats();
        expect(before.default?.queued ?? 0, "tasks still queued when the server goes down").toBeGreaterThan(0);

        await db.shutdown(mode);
        // pg_ctl returned once the server was gone, so the kernel already told this process that the pool's
        // connections closed; but the event-loop turn that reported pg_ctl's exit may still hold those sockets'
        // end-of-file callbacks, and a submit sent from this continuation would go out on a connection the server
        // closed (a PostgresConnectionLost, the outcome unknown: a statement that went out as the server
        // died, not one sent while it was down). One turn lets the client hear what already happened.
        await new Promise((resolve) => setImmediate(resolve));
        let restarted = false;
        // Submits while the server is down: each must settle (fail or, once it is back, succeed) within the bound.
        const downSubmits: Promise<DownSubmit>[] = [];
        for (let i = 0; i < 3; i += 1) {
          const started = performance.now();
          downSubmits.push(
            api.submit("double", { n: i }, { maxAttempts: 20 }).then(
              (task) => ({ ms: performance.now() - started, id: task.id, afterRestart: restarted }),
              (err: unknown) => ({ ms: performance.now() - started, error: `${(err as Error)?.name}: ${(err as Error)?.message}`, afterRestart: restarted }),
            ),
          );
          await sleep(downMs / 3);
        }
        await db.start();
        restarted = true;
        const backAt = performance.now();

        const outcomes = await Promise.all(downSubmits);
        for (const outcome of outcomes) {
          expect(outcome.ms, `a submit while the server was down settled after ${outcome.ms.toFixed(0)} ms (${JSON.stringify(outcome)})`).toBeLessThan(SUBMIT_BOUND_MS);
          if (outcome.error !== undefined) {
            // What happened, why, and that nothing was written (the store's PostgresConnectError).
            expect(outcome.error).toMatch(/^PostgresConnectError: could not open a connection to Postgres \(.+\): the server .+\. The statement was not sent, so nothing was written/);
          }
        }
        expect(outcomes.filter((o) => o.error !== undefined && !o.afterRestart).length, `submits that failed while the server was down: ${JSON.stringify(outcomes)}`).toBeGreaterThan(0);

        // The workers claim again: tasks completed after the server is back carry each worker's pid.
        const pids = new Set(workers.map((w) => w.pid));
        const resumed = await until(
          "both workers completing tasks after the server is back",
          async () => {
            const since = Date.now() - (performance.now() - backAt);
            const rows = (await listAll(api)).filter((row) => row.status === "succeeded" && (row.completed_at_ms ?? 0) >= since);
            const by = new Set(rows.map((row) => (row.result as { pid?: number } | null)?.pid));
            return [...pids].every((pid) => by.has(pid)) ? performance.now() - backAt : undefined;
          },
          RESUME_BOUND_MS,
          context,
        );
        // And a task submitted now goes through the restarted server to a worker.
        const probe = await api.call("double", { n: 99 }, { waitTimeoutMs: 60_000 });
        expect(probe).toMatchObject({ n: 99, doubled: 198 });

        // No task lost: every one ends succeeded, with the result of its last attempt.
        const expected = new Set([...submitted.map((t) => t.id), ...outcomes.flatMap((o) => (o.id === undefined ? [] : [o.id]))]);
        const rows = await until(
          "every task succeeded",
          async () => {
            const all = (await listAll(api)).filter((row) => expected.has(row.id));
            return all.length === expected.size && all.every((row) => row.status === "succeeded") ? all : undefined;
          },
          120_000,
          context,
        );
        for (const row of rows) {
          const result = row.result as { pid: number; attempt?: number; doubled?: number };
          expect(pids.has(result.pid), `task ${row.id} finished by a worker of this test`).toBe(true);
          if (row.name === "nap") expect(result.attempt, `task ${row.id}: its result is its last attempt's`).toBe(row.attempt);
          else expect(result.doubled).toBe(2 * (row.payload as { n: number }).n);
        }
        const stats = (await api.stats()).default;
        expect(stats).toMatchObject({ queued: 0, running: 0, failed: 0, canceled: 0 });
        for (const w of workers) expect(w.alive, `${w.label} survived the restart${context()}`).toBe(true);

        const redelivered = rows.filter((row) => row.attempt > 1).length;
        console.log(
          `[postgres restart, ${mode} shutdown, down ${downMs} ms] ${before.default?.succeeded} of ${TASKS} done when it went down; ` +
            `both workers completing tasks ${resumed.toFixed(0)} ms after it was back; ${rows.length} tasks succeeded (${redelivered} redelivered); ` +
            `submits while down: ${outcomes.map((o) => (o.error === undefined ? `ok after ${o.ms.toFixed(0)} ms` : `${o.error.slice(0, 80)} after ${o.ms.toFixed(0)} ms`)).join("; ")}`,
        );

        for (const w of workers) expect(await children.stop(w), `${w.label} after SIGTERM${w.tail()}`).toEqual({ code: 0, signal: null });
      } finally {
        await children.reap();
        await api.close();
      }
    },
    240_000,
  );
});
