// Small statistics helpers: every figure is reported as the median of its
// repetitions with the spread (min–max), and latency as nearest-rank percentiles.

/** The median of a list of numbers (the mean of the middle two for an even count). */
export function median(values) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile `p` (0–100) of a list of numbers. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

/** `{ median, min, max, samples }` of the repetitions of one figure. */
export function summarize(samples) {
  return {
    median: median(samples),
    min: samples.length === 0 ? Number.NaN : Math.min(...samples),
    max: samples.length === 0 ? Number.NaN : Math.max(...samples),
    samples,
  };
}

/**
 * A raw drain floor's clock: runs `step(conn, index)` on every connection at once, each in a loop
 * until it returns 0 (rows it finished per call), and answers rows per second counted from the
 * moment `warmup` rows were done (from the start when it is 0). Throws unless `total` rows were done.
 */
export async function timedDrain(conns, { total, warmup, what }, step) {
  let done = 0;
  let timedFrom = warmup === 0 ? performance.now() : null;
  let doneBefore = 0;
  await Promise.all(
    conns.map(async (conn, index) => {
      for (;;) {
        const rows = await step(conn, index);
        if (rows === 0) return;
        done += rows;
        if (timedFrom === null && done >= warmup) {
          timedFrom = performance.now();
          doneBefore = done;
        }
      }
    }),
  );
  const ended = performance.now();
  if (done !== total) throw new Error(`${what} drained ${done} of ${total} rows`);
  return (done - doneBefore) / ((ended - timedFrom) / 1000);
}

/**
 * The call() floor's loop for an asynchronous driver: per call, `driver.insert(id, i)`, `driver.claim()`
 * (answers the claimed id), `driver.complete(id)` and `driver.status(id)` (answers the row's status), in
 * sequence, `warmup` untimed calls first. Checks that each call claimed its own task and saw it succeed.
 * Returns `{ p50, p99 }` in ms. (SQLite's synchronous drivers have their own loop, `callFloorOn`.)
 */
export async function asyncCallFloor(ids, warmup, driver) {
  const samples = [];
  for (let i = 0; i < ids.length; i += 1) {
    const started = performance.now();
    await driver.insert(ids[i], i);
    const claimed = await driver.claim();
    if (claimed !== ids[i]) throw new Error(`the call floor claimed ${claimed} instead of ${ids[i]}`);
    await driver.complete(ids[i]);
    const status = await driver.status(ids[i]);
    if (status !== "succeeded") throw new Error(`the call floor read ${status} instead of succeeded`);
    if (i >= warmup) samples.push(performance.now() - started);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}
