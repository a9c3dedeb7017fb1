// Durable steps (ctx.step, ctx.sleep): what a step costs on the latency path, and what a park/wake
// round trip costs, each measured with a client and a worker in this process on a fresh database.
//
// - steps c1 / c64: one task (c1) or 64 tasks at once (c64, worker concurrency 64) each running
//   `steps` no-op `ctx.step`s in sequence; steps/s from the submit to the last task succeeded. A step
//   is one fenced journal write (its record), so the figures are judged against the raw driver's
//   single-row commits (c1) and 64-row statements (c64) of the same run.
// - park/wake: sequential `call()`s of a handler that does `await ctx.sleep("z", 0)` and returns —
//   claim, the due sleep recorded done in the journal (it does not park), complete — against
//   sequential `call()`s of a no-op handler in the same process and database (the "call" column).
import { percentile } from "./stats.mjs";
import { openClient, openWorker } from "./targets.mjs";
import { runConcurrent } from "./ours.mjs";

const NOOP = () => null;

/** `tasks` tasks of `steps` no-op steps each, all submitted at once; returns steps/s. */
export async function stepsThroughput(backend, { tasks, steps }) {
  const { target, cleanup } = await backend.fresh(`steps-c${tasks}`);
  const client = openClient(target);
  const worker = openWorker(target, { concurrency: tasks, pollIntervalMs: 50 });
  worker.task("steps", async (ctx, { n }) => {
    for (let i = 0; i < n; i += 1) await ctx.step("s", NOOP);
    return n;
  });
  try {
    await client.connect();
    const running = worker.run();
    // Warm-up: the extension tables are created, statements compiled, the worker's loop started.
    await client.call("steps", { n: 20 }, { waitTimeoutMs: 60_000 });
    const started = performance.now();
    const ids = await Promise.all(Array.from({ length: tasks }, () => client.submit("steps", { n: steps }).then((t) => t.id)));
    for (const id of ids) {
      const row = await client.wait(id, { timeoutMs: 600_000 });
      if (row.status !== "succeeded" || row.result !== steps) throw new Error(`a steps task ended ${row.status} with ${JSON.stringify(row.result)}`);
    }
    const seconds = (performance.now() - started) / 1000;
    await worker.stop();
    await running;
    return (tasks * steps) / seconds;
  } finally {
    await worker.close?.();
    await client.close();
    await cleanup();
  }
}

/** p50 of sequential park/wake round trips (`sleep 0` → resumed → succeeded) and of plain `call()`s, in ms. */
export async function parkWakeLatency(backend, { calls, warmup }) {
  const { target, cleanup } = await backend.fresh("park-wake");
  const client = openClient(target);
  const worker = openWorker(target);
  worker.task("noop", () => null);
  worker.task("nap0", async (ctx) => {
    await ctx.sleep("z", 0);
    return null;
  });
  try {
    await client.connect();
    const running = worker.run();
    const measure = async (name) => {
      await runConcurrent(warmup, 1, () => client.call(name, {}, { waitTimeoutMs: 60_000 }));
      const times = [];
      for (let i = 0; i < calls; i += 1) {
        const started = performance.now();
        await client.call(name, {}, { waitTimeoutMs: 60_000 });
        times.push(performance.now() - started);
      }
      return percentile(times.sort((a, b) => a - b), 50);
    };
    const call = await measure("noop");
    const park = await measure("nap0");
    await worker.stop();
    await running;
    return { park, call };
  } finally {
    await worker.close?.();
    await client.close();
    await cleanup();
  }
}
