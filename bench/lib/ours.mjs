// CairnQ's side of every figure, written once over a backend (see targets.mjs):
// the client in this process for submits and calls, one worker child process
// for drains and latency, a bare store for the claim cost.
import { spawnWorker } from "./child.mjs";
import { percentile, median } from "./stats.mjs";
import { busyRetriesOf, newWorkerId, openClient, openStore } from "./targets.mjs";

const QUEUE = "default";
const NAME = "noop";

/** Runs `fn(i)` for i in [0, n) with `concurrency` loops awaiting one call at a time each. */
export async function runConcurrent(n, concurrency, fn) {
  let next = 0;
  const loop = async () => {
    while (next < n) {
      const i = next;
      next += 1;
      await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, loop));
}

/** Submits `n` no-op tasks through a client at `concurrency` (the drain setup, untimed); with `groups`, task i in group `g<i mod groups>`. */
export async function fill(target, n, groups = 0) {
  const client = openClient(target);
  try {
    await runConcurrent(n, 64, (i) => (groups > 0 ? client.submit(NAME, { i }, { group: `g${i % groups}` }) : client.submit(NAME, { i })));
  } finally {
    await client.close();
  }
}

/** Throws unless the store shows exactly `n` succeeded tasks and nothing else left to do. */
async function expectSucceeded(target, n) {
  const client = openClient(target);
  try {
    const counts = (await client.stats(QUEUE))[QUEUE];
    if (counts.succeeded !== n || counts.queued !== 0 || counts.running !== 0) {
      throw new Error(`expected ${n} succeeded and nothing queued or running, the store shows ${JSON.stringify(counts)}`);
    }
  } finally {
    await client.close();
  }
}

/**
 * Submit throughput: `n` submits from this process through one client,
 * `concurrency` = 1 (each awaited before the next) or 64 concurrent
 * submitters. 100 untimed submits first warm up the JIT and the statement
 * caches. Returns tasks/s.
 */
export async function submitThroughput(backend, { n, concurrency }) {
  const { target, cleanup } = await backend.fresh(`submit-c${concurrency}`);
  const client = openClient(target);
  try {
    await client.connect();
    await runConcurrent(100, concurrency, (i) => client.submit(NAME, { i }, { queue: "warmup" }));
    const started = performance.now();
    await runConcurrent(n, concurrency, (i) => client.submit(NAME, { i }));
    const ms = performance.now() - started;
    return n / (ms / 1000);
  } finally {
    await client.close();
    await cleanup();
  }
}

/**
 * The worker's `prefetch` in the "drain c1, prefetch N" row: picked by
 * measurement (bench/README.md): at concurrency 1 each claim then takes up to
 * 1 + N tasks and their completes are combined, instead of a claim
 * transaction and a lone complete per task.
 */
export const DRAIN_PREFETCH = 32;

/**
 * The worker's `prefetch` in the "drain c64, prefetch N" row (concurrency 64,
 * `claimBatch: 64` as in the plain c64 row): with room for a second claim of 64
 * beside the one in flight, a claim overlaps the previous one while draws come
 * back full.
 */
export const DRAIN_PREFETCH_C64 = 64;

/**
 * Drain throughput: `warmup + n` pre-submitted tasks, ONE worker process at
 * `concurrency` (and `claimBatch`, `prefetch` when given); the first `warmup`
 * are drained untimed (its pool connections open and its code is compiled
 * meanwhile), then the clock runs from the `warmup`-th successful complete()
 * until the (`warmup + n`)-th (committed; checked with stats() after), or
 * from the start message when `warmup` is 0.
 * Returns `{ tasksPerSec, cpuUsPerTask, peakRssMB, startRssMB, peakHeapUsedMB }` —
 * the worker process's CPU time (user + system) per timed task, its peak RSS
 * (and V8 heap used) sampled every 50 ms during the drain, and its RSS when
 * connected and idle, just before it.
 */
export async function drainThroughput(backend, { n, warmup = 0, concurrency, claimBatch, prefetch, groups = 0, taskOptions, cpuProfDir = null, traceSql = false, telemetry = false }) {
  const { target, cleanup } = await backend.fresh(`drain-c${concurrency}${prefetch === undefined ? "" : `-p${prefetch}`}${telemetry ? "-otel" : ""}${groups > 0 ? `-g${groups}` : ""}`);
  try {
    await fill(target, warmup + n, groups);
    const worker = { concurrency, ...(claimBatch === undefined ? {} : { claimBatch }), ...(prefetch === undefined ? {} : { prefetch }) };
    const child = await spawnWorker({ target, worker, taskOptions, expect: warmup + n, warmup, cpuProfDir, traceSql, telemetry });
    let report;
    try {
      // A bound against a hung worker, not a performance limit: 60 ms per task covers a Postgres drain at c1 on
      // a machine loaded by parallel builds (~50 tasks/s, seen in a run that gave up at the earlier 10 ms per task).
      report = await child.run(Math.max(120_000, (warmup + n) * 60));
    } finally {
      await child.stop();
    }
    if (child.errors.length > 0) throw new Error(`the worker reported errors: ${child.errors.slice(0, 3).join("; ")}`);
    await expectSucceeded(target, warmup + n);
    const mb = (bytes) => bytes / 2 ** 20;
    return {
      tasksPerSec: n / (report.ms / 1000),
      cpuUsPerTask: report.cpuUs / n,
      peakRssMB: mb(report.peakRssBytes),
      startRssMB: mb(report.startRssBytes),
      peakHeapUsedMB: mb(report.peakHeapUsedBytes),
      otelLoaded: report.otelLoaded === true,
    };
  } finally {
    await cleanup();
  }
}

/**
 * `call()` round trips from this process to a separate, idle worker process:
 * `warmup` untimed calls, then `calls` sequential timed ones. `worker` and
 * `call` are the options under test (defaults when empty). Returns
 * `{ p50, p95, p99 }` in ms.
 */
export async function callLatency(backend, { calls, warmup, worker = {}, call = {}, label = "latency", traceSql = false }) {
  const { target, cleanup } = await backend.fresh(label);
  const client = openClient(target);
  let child = null;
  try {
    await client.connect();
    child = await spawnWorker({ target, worker, expect: 0, traceSql });
    child.start();
    for (let i = 0; i < warmup; i += 1) await client.call(NAME, { i }, { waitTimeoutMs: 30_000, ...call });
    const busyBefore = busyRetriesOf(client.store);
    const samples = [];
    for (let i = 0; i < calls; i += 1) {
      const started = performance.now();
      await client.call(NAME, { i }, { waitTimeoutMs: 30_000, ...call });
      samples.push(performance.now() - started);
    }
    const clientBusy = busyBefore === null ? null : busyRetriesOf(client.store) - busyBefore;
    await child.stop();
    if (child.errors.length > 0) throw new Error(`the worker reported errors: ${child.errors.slice(0, 3).join("; ")}`);
    return {
      p50: percentile(samples, 50),
      p95: percentile(samples, 95),
      p99: percentile(samples, 99),
      // SQLite: the write turns that hit SQLITE_BUSY and slept the backoff during the timed calls (the client's),
      // and over the worker's whole run, warm-up included (the worker's); null on Postgres.
      clientBusyRetries: clientBusy,
      workerBusyRetries: child.stats.busyRetries,
    };
  } finally {
    await child?.stop();
    await client.close();
    await cleanup();
  }
}

/**
 * The cost of one claim cycle (`store.claim` of one task: the read-only
 * probe, then the write transaction with lease recovery and one draw) with
 * `backlog` queued tasks. The backlog is written raw (see the backend's
 * `fillBacklog`, setup only); the measuring store opens after it, so its
 * connect-time statistics refresh sees the table as a restarted worker would.
 *
 * Each timed claim is followed by an untimed complete() of the claimed task:
 * the claim really commits (a rolled-back claim would skip the commit, which
 * is part of the cost), and settling keeps `running` rows — which lease
 * recovery scans — from piling up. The queue shrinks by `samples` over the
 * measurement (from 1,000 to 1,000 − samples at the small backlog).
 *
 * `terminal` > 0 (the growth figure) first fills that many `succeeded` rows,
 * older than the backlog (see the backend's `fillTerminal`): what a table
 * looks like after a long run without purging; that database is built once
 * and reused by the later repetitions. Returns the median ms.
 */
export async function claimUnderBacklog(backend, { backlog, samples, terminal = 0 }) {
  const { target, cleanup } = terminal > 0 ? await growthDatabase(backend, { backlog, terminal }) : await backlogDatabase(backend, backlog);
  try {
    const store = openStore(target);
    try {
      await store.connect();
      const workerId = newWorkerId();
      const input = { queues: [QUEUE], workerId, leaseMs: 30_000, names: [NAME], limit: 1 };
      const once = async () => {
        const started = performance.now();
        const [task] = await store.claim(input);
        const ms = performance.now() - started;
        if (task === undefined) throw new Error("a claim found nothing to claim although the backlog is queued");
        await store.complete({ taskId: task.id, workerId, attempt: task.attempt, result: null });
        return ms;
      };
      for (let i = 0; i < 20; i += 1) await once();
      const times = [];
      for (let i = 0; i < samples; i += 1) times.push(await once());
      return median(times);
    } finally {
      await store.close();
    }
  } finally {
    await cleanup();
  }
}

/** A fresh database with the protocol schema and `backlog` (+ 20 for the warm-up) queued tasks. */
async function backlogDatabase(backend, backlog, { terminal = 0, label = `claim-${backlog}` } = {}) {
  const fresh = await backend.fresh(label);
  try {
    const setup = openStore(fresh.target);
    await setup.connect();
    await setup.close();
    if (terminal > 0) await backend.fillTerminal(fresh.target, terminal);
    await backend.fillBacklog(fresh.target, backlog + 20);
    return fresh;
  } catch (err) {
    await fresh.cleanup();
    throw err;
  }
}

/**
 * The growth figure's database, built once per backend and run and reused
 * by every repetition (a million rows cost a minute of setup on a busy
 * machine). Each repetition claims and completes `samples` + 20 of the
 * queued tasks, which moves them to the terminal rows: 0.2% of the backlog
 * per repetition, nothing the figure can see. Dropped by `finishOurs()`.
 */
const growth = new Map();
async function growthDatabase(backend, { backlog, terminal }) {
  const key = `${backend.name}:${terminal}:${backlog}`;
  let entry = growth.get(key);
  if (entry === undefined) {
    entry = await backlogDatabase(backend, backlog, { terminal, label: `claim-${backlog}-t${terminal}` });
    growth.set(key, entry);
  }
  return { target: entry.target, cleanup: async () => {} };
}

/** Removes what the measurements kept across repetitions (the growth databases). */
export async function finishOurs() {
  for (const { cleanup } of growth.values()) await cleanup();
  growth.clear();
}
