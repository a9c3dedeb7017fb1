/**
 * Every Postgres backend of a running worker process killed with
 * `pg_terminate_backend`, twice in a row, while
 * tasks flow: the process never crashes, the errors reach `onError` (the
 * worker child reports each call over IPC), the pool replaces its
 * connections, claiming resumes, LISTEN reconnects so wakeups resume, and no
 * task is stranded.
 *
 * How the backends are found: fixtures/backend.mjs puts
 * `application_name=cairnq-fixture-<pid>` into the connection string of every
 * fixture process, and the store opens its pool and its LISTEN connection
 * from that string, so the `pg_stat_activity` rows with that application_name
 * on the test database are exactly that process's backends — pool and LISTEN
 * alike — whatever else runs on the server. The LISTEN one is told apart by
 * its last statement (`LISTEN cairnq_queued; …`).
 *
 * The worker polls every 5 s, so a task picked up within half of that was
 * woken by a notification, not found by a poll (see WAKE_BOUND_MS).
 */
import { performance } from "node:perf_hooks";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CairnQ, defineTask } from "cairnq";
import type { Backend } from "../support/postgres.ts";
import { backendsOf, closeAdmin, dropSchema, fixtureArg, freshSchemaName, pgDsn, terminate } from "../support/postgres.ts";
import { Children } from "../support/processes.ts";
import type { Child } from "../support/processes.ts";
import { describeFixtureError, listAll, sleep, until } from "../support/waiting.ts";

const POLL_INTERVAL_MS = 5_000;
/**
 * The worker's queue, its own: NOTIFY is per database and its payload is the queue's name (§9), so with
 * `default` another test file's submit, in another schema of the same database, could wake this worker and
 * pass the wake-up checks below for a LISTEN that never came back.
 */
const QUEUE = "pg-terminate";
const LEASE_MS = 1_500;
/**
 * A probe is submitted 50 ms after the worker finished the previous one and
 * went back to its idle sleep, so a poll would find it only ~5 s later: a
 * round trip under half the poll interval was a push wakeup.
 */
const WAKE_BOUND_MS = POLL_INTERVAL_MS / 2;
const ROUNDS = 2;
/** call()s after each reconnect that must all be woken by a notification. */
const WAKE_PROBES = 3;
const NAP_MS = 40;
/** `nap` tasks submitted before the worker starts (see setUp). */
const PRIMERS = 12;

/** Submits `nap` tasks from the test process, one every ~15 ms, until stopped; can pause. */
class Producer {
  readonly ids: string[] = [];
  readonly errors: unknown[] = [];
  paused = false;
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(private readonly client: CairnQ) {
    this.#done = this.#run();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      if (!this.paused) {
        try {
          // Attempts to spare: a settlement lost with its connection is redelivered after the lease expires.
          this.ids.push((await this.client.submit("nap", { ms: NAP_MS }, { queue: QUEUE, maxAttempts: 10 })).id);
        } catch (err) {
          this.errors.push(err);
        }
      }
      await sleep(15);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#done;
  }
}

/**
 * The worker's backends, its LISTEN connection's marked: the backend whose pid the worker fixture last
 * reported (the LISTEN connection runs the store's writes too, so its last statement does not tell).
 */
async function backendsOfWorker(worker: Child): Promise<Backend[]> {
  const listenPid = worker.of("listen").at(-1)?.backendPid;
  return (await backendsOf(worker.pid)).map((b) => ({ ...b, listen: b.pid === listenPid }));
}
const listenOf = (backends: readonly Backend[]): Backend | undefined => backends.find((b) => b.listen);
const add = defineTask<{ a: number; b: number }, { sum: number; pid: number }>("add");

describe("a worker process whose Postgres backends are terminated", () => {
  const children = new Children();
  let schema: string | undefined;
  let client: CairnQ | undefined;
  let producer: Producer | undefined;

  afterEach(async () => {
    try {
      await producer?.stop();
      await children.reap();
    } finally {
      producer = undefined;
      await client?.close();
      client = undefined;
      if (schema !== undefined) await dropSchema(schema);
      schema = undefined;
    }
  });

  afterAll(closeAdmin);

  /**
   * A fresh schema, the API side's client on it, and a worker process (5 s
   * polls) whose LISTEN connection is up and which is idle, waiting on it.
   */
  async function setUp(prefix: string): Promise<{ api: CairnQ; worker: Child; context: () => string; roundTrip: (a: number) => Promise<number> }> {
    schema = await freshSchemaName(prefix);
    const api = CairnQ.postgres(pgDsn(), { schema });
    client = api;
    await api.connect();
    // Work waiting for the worker's first claims, so it first goes idle after its LISTEN connection is up: an idle
    // wait begun before that ends only when LISTEN comes up, which would only slow the test.
    const primers = await Promise.all(Array.from({ length: PRIMERS }, () => api.submit("nap", { ms: NAP_MS }, { queue: QUEUE })));
    const worker = children.spawn("worker", "worker.mjs", [
      fixtureArg(schema),
      JSON.stringify({ queues: [QUEUE], concurrency: 4, pollIntervalMs: POLL_INTERVAL_MS, leaseMs: LEASE_MS }),
    ]);
    await worker.next("ready");
    const context = (): string =>
      `\nworker ${worker.alive ? "alive" : "exited"}; its onError calls: ${worker.of("on-error").map(describeFixtureError).join(", ") || "none"}${worker.tail()}`;
    await until("LISTEN connection of the worker", async () => listenOf(await backendsOfWorker(worker)), 20_000, context);
    await Promise.all(primers.map((task) => api.wait(task.id, { timeoutMs: 30_000 })));
    /** One call() to the idle worker after a short pause; its round trip in ms. */
    const roundTrip = async (a: number): Promise<number> => {
      await sleep(50);
      const started = performance.now();
      const result = await api.call(add, { a, b: 1 }, { queue: QUEUE, waitTimeoutMs: 30_000 });
      expect(result).toEqual({ sum: a + 1, pid: worker.pid });
      return performance.now() - started;
    };
    return { api, worker, context, roundTrip };
  }

  it(`survives pg_terminate_backend on all its pool and LISTEN connections, ${ROUNDS} times in a row: onError hears it, claiming and wakeups resume, no task stranded`, async () => {
    const { api, worker, context, roundTrip } = await setUp("cq_terminate");
    const flowing = new Producer(api);
    producer = flowing;
    const succeeded = async (): Promise<number> => (await api.stats())[QUEUE]?.succeeded ?? 0;

    const report: string[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      // Tasks flowing: the worker has finished some since the last round and has some in flight now.
      const baseline = await succeeded();
      await until("tasks flowing through the worker", async () => ((await succeeded()) >= baseline + 10 ? true : undefined), 20_000, context);

      const backends = await backendsOfWorker(worker);
      const listen = listenOf(backends);
      expect(listen, `round ${round}: the LISTEN backend among ${JSON.stringify(backends)}`).toBeDefined();
      expect(backends.filter((b) => !b.listen).length, `round ${round}: pool backends`).toBeGreaterThan(0);
      const errorsBefore = worker.of("on-error").length;
      const submittedBefore = flowing.ids.length;

      const runningAtKill = (await api.stats())[QUEUE]?.running ?? 0;
      const killedAt = performance.now();
      const killed = await terminate(backends.map((b) => b.pid));
      // All of them, unless the pool closed an idle one between the two statements.
      expect(killed, `round ${round}: the LISTEN backend terminated`).toContain(listen!.pid);
      expect(killed.length, `round ${round}: backends terminated`).toBeGreaterThanOrEqual(2);
      const killedPids = new Set(backends.map((b) => b.pid));

      // The errors reach onError: the LISTEN connection reports its loss; a pool connection killed idle
      // reports through the store's hook, one killed under a call fails that call, which the worker reports.
      // Either way, each terminated backend is heard at least once.
      await until(
        `round ${round}: the LISTEN connection's loss and one report per terminated backend in onError`,
        () => {
          const heard = worker.of("on-error").slice(errorsBefore);
          return heard.some((m) => m.source === "listen") && heard.length >= killed.length ? true : undefined;
        },
        10_000,
        context,
      );

      // LISTEN reconnects (after its 1 s backoff) on a new backend.
      const newListen = await until(
        `round ${round}: a new LISTEN backend`,
        async () => {
          const found = listenOf(await backendsOfWorker(worker));
          return found !== undefined && !killedPids.has(found.pid) ? found : undefined;
        },
        20_000,
        context,
      );
      const listenBackMs = performance.now() - killedAt;

      // Claiming resumes on connections the pool opened anew: tasks submitted after the kill run to success.
      await until(
        `round ${round}: the first tasks submitted after the kill succeeded`,
        async () => {
          const after = flowing.ids.slice(submittedBefore, submittedBefore + 5);
          if (after.length < 5) return undefined;
          const rows = await Promise.all(after.map((id) => api.get(id)));
          return rows.every((row) => row?.status === "succeeded") ? true : undefined;
        },
        30_000,
        context,
      );
      const poolNow = (await backendsOfWorker(worker)).filter((b) => !b.listen);
      expect(poolNow.length, `round ${round}: pool backends after the kill`).toBeGreaterThan(0);
      expect(poolNow.filter((b) => killedPids.has(b.pid)), `round ${round}: killed backends still listed`).toEqual([]);

      // Wakeups resume: with the flow paused and the worker idle, each call() is picked up far sooner than a poll.
      // The first one may wait for LISTEN to come back (the worker's idle wait ends when it does; see the last test);
      // it is logged, and the ones after it must be push-fast.
      flowing.paused = true;
      const first = await roundTrip(round * 100);
      const wakes: number[] = [];
      for (let probe = 1; probe <= WAKE_PROBES; probe += 1) wakes.push(await roundTrip(round * 100 + probe));
      flowing.paused = false;

      const errors = worker.of("on-error").slice(errorsBefore);
      const kinds = [...new Set(errors.map(describeFixtureError))];
      report.push(
        `round ${round}: terminated ${killed.length} backends (${killed.length - 1} pool + 1 LISTEN, LISTEN pid ${listen!.pid} → ${newListen.pid}) ` +
          `with ${runningAtKill} tasks running; ` +
          `LISTEN back after ${listenBackMs.toFixed(0)} ms; onError ${errors.length}× (${kinds.join("; ")}); ` +
          `call() after the reconnect: first ${first.toFixed(0)} ms, then ${wakes.map((ms) => `${ms.toFixed(0)} ms`).join(", ")}`,
      );
      expect(worker.alive, `round ${round}: the worker process${context()}`).toBe(true);
      for (const ms of wakes) {
        expect(ms, `round ${round}: call() round trips after the reconnect (${wakes.map((w) => w.toFixed(0)).join(", ")} ms)${context()}`).toBeLessThan(WAKE_BOUND_MS);
      }
    }

    await flowing.stop();
    expect(flowing.errors, "submits from the API process (its connections were not touched)").toEqual([]);

    // No task stranded: every one ends succeeded (a settlement lost with its connection is redelivered after the lease).
    const rows = await until(
      "every nap task succeeded",
      async () => {
        const all = await listAll(api, "nap");
        return all.length === PRIMERS + flowing.ids.length && all.every((row) => row.status === "succeeded") ? all : undefined;
      },
      30_000,
      context,
    );
    const exit = await children.stop(worker);
    expect(exit, `worker after SIGTERM${worker.tail()}`).toEqual({ code: 0, signal: null });
    expect((await api.stats())[QUEUE]).toMatchObject({ queued: 0, running: 0, failed: 0, canceled: 0, succeeded: rows.length + ROUNDS * (WAKE_PROBES + 1) });
    const redelivered = rows.filter((row) => row.attempt > 1).length;
    console.log(
      `[postgres] pg_terminate_backend on every backend of a working worker process, ${ROUNDS} rounds:\n  ${report.join("\n  ")}\n` +
        `  ${rows.length - PRIMERS} nap tasks submitted meanwhile, all succeeded (${redelivered} redelivered after a lost settlement); the worker exited 0 on SIGTERM`,
    );
  }, 120_000);

  // A worker that went idle while LISTEN was down (during the reconnect backoff) is woken when LISTEN is
  // back, so a task submitted then is picked up at push speed, not after pollIntervalMs.
  it("a submit right after LISTEN reconnects wakes a worker that went idle while LISTEN was down", async () => {
    const { worker, context, roundTrip } = await setUp("cq_relisten");
    // Fast, or the worker was in an idle sleep begun before LISTEN was up; either way it now waits on LISTEN.
    await roundTrip(0);
    // The worker is idle in claimWake. Killing only the LISTEN backend releases that wait; the worker
    // claims (nothing) and idles again while LISTEN is retrying.
    const listen = listenOf(await backendsOfWorker(worker))!;
    expect(await terminate([listen.pid])).toEqual([listen.pid]);
    await until(
      "a new LISTEN backend",
      async () => {
        const found = listenOf(await backendsOfWorker(worker));
        return found !== undefined && found.pid !== listen.pid ? found : undefined;
      },
      20_000,
      context,
    );
    const ms = await roundTrip(1);
    expect(ms, `the first call() after the reconnect took ${ms.toFixed(0)} ms`).toBeLessThan(WAKE_BOUND_MS);
  }, 60_000);
});
