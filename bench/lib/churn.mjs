// Claims as the table churns (bench/README.md, "Churn"): a drain that goes on
// long enough for the tasks it finished to pile up as dead index entries, and
// a drain whose work arrives while it runs. Both are judged on the store's own
// completion times (`completed_at_ms` of the succeeded rows), so several
// worker processes count as one drain, and each is a ratio to a figure of the
// same run.
import { spawnWorker } from "./child.mjs";
import { runConcurrent } from "./ours.mjs";
import { openClient, openStore } from "./targets.mjs";

const NAME = "noop";

/** The drains' workers: two processes of 16 slots each, whose handler awaits 4 ms (a task that waits on I/O). */
const WORKERS = { workers: 2, worker: { concurrency: 16 }, handlerMs: 4 };

/** Tasks/s over the completions [from, from + count) of ascending completion times (ms). */
export function rateOver(times, from, count) {
  const ms = times[from + count - 1] - times[from];
  if (!(ms > 0)) throw new Error(`completions ${from}..${from + count} share one millisecond; the window is too small to time`);
  return (count - 1) / (ms / 1000);
}

/** A fresh database of `backend` with the protocol schema in place. */
export async function freshSchema(backend, label) {
  const fresh = await backend.fresh(label);
  const setup = openStore(fresh.target);
  await setup.connect();
  await setup.close();
  return fresh;
}

/** Starts `workers` idle-until-started worker processes on `target`; the caller polls the store for their progress. */
async function startWorkers(target, { workers, worker, handlerMs }) {
  const children = [];
  try {
    for (let i = 0; i < workers; i += 1) children.push(await spawnWorker({ target, worker, expect: 0, handlerMs }));
  } catch (err) {
    for (const child of children) await child.stop();
    throw err;
  }
  for (const child of children) child.start();
  return children;
}

/** Polls the store every `pollMs` until `total` tasks succeeded (or `timeoutMs` passed, or a task failed). */
export async function awaitSucceeded(target, total, timeoutMs, { pollMs = 250 } = {}) {
  const client = openClient(target);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const counts = (await client.stats("default")).default ?? {};
      if ((counts.succeeded ?? 0) >= total) return;
      if ((counts.failed ?? 0) > 0) throw new Error(`${counts.failed} tasks failed`);
      if (Date.now() > deadline) throw new Error(`only ${counts.succeeded ?? 0} of ${total} tasks succeeded within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    await client.close();
  }
}

/**
 * Submits `total` no-op tasks through `client`, 64 at a time, the i-th not before `started + i / perSecond`
 * seconds: producers at a set rate. Returns the rate reached (tasks/s since `started`).
 */
export async function submitPaced(client, total, perSecond, started = performance.now()) {
  const perMs = perSecond / 1000;
  await runConcurrent(total, 64, async (i) => {
    const wait = started + i / perMs - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    await client.submit(NAME, { i });
  });
  return total / ((performance.now() - started) / 1000);
}

/**
 * A long backlog drain: `warmup + total` queued tasks (written raw), drained
 * by the workers below with no vacuum in between. Returns the drain rate over
 * the first `window` completions after the warm-up and over the last
 * `window`: `{ first, last }` in tasks/s.
 */
export async function churnDrain(backend, { total, window, warmup }) {
  const { target, cleanup } = await freshSchema(backend, "churn-drain");
  let children = [];
  try {
    await backend.fillBacklog(target, warmup + total);
    children = await startWorkers(target, WORKERS);
    await awaitSucceeded(target, warmup + total, Math.max(300_000, (warmup + total) * 20));
    for (const child of children) if (child.errors.length > 0) throw new Error(`a worker reported errors: ${child.errors.slice(0, 3).join("; ")}`);
    const times = await backend.completionTimes(target);
    return { first: rateOver(times, warmup, window), last: rateOver(times, times.length - window, window) };
  } finally {
    for (const child of children) await child.stop();
    await cleanup();
  }
}

/**
 * Work that arrives during the drain against work queued before it, with the
 * same two worker processes: first a backlog of `warmup + n` (written raw),
 * whose drain rate over the n completions after the warm-up is the capacity;
 * then, on a fresh database, `warmup + n` submits through a client at 1.5×
 * that capacity (64 submitters, paced) while the workers drain. Returns
 * `{ backlog, submits, offered }` in tasks/s (`offered`: the submit rate
 * reached).
 */
export async function churnUnderSubmits(backend, { n, warmup }) {
  const total = warmup + n;
  const backlog = await (async () => {
    const { target, cleanup } = await freshSchema(backend, "churn-backlog");
    let children = [];
    try {
      await backend.fillBacklog(target, total);
      children = await startWorkers(target, WORKERS);
      await awaitSucceeded(target, total, Math.max(300_000, total * 20));
      return rateOver(await backend.completionTimes(target), warmup, n);
    } finally {
      for (const child of children) await child.stop();
      await cleanup();
    }
  })();

  const { target, cleanup } = await freshSchema(backend, "churn-submits");
  let children = [];
  const client = openClient(target);
  try {
    await client.connect();
    children = await startWorkers(target, WORKERS);
    const offered = await submitPaced(client, total, backlog * 1.5);
    await awaitSucceeded(target, total, Math.max(300_000, total * 20));
    const submits = rateOver(await backend.completionTimes(target), warmup, n);
    for (const child of children) if (child.errors.length > 0) throw new Error(`a worker reported errors: ${child.errors.slice(0, 3).join("; ")}`);
    return { backlog, submits, offered };
  } finally {
    await client.close();
    for (const child of children) await child.stop();
    await cleanup();
  }
}
