// Round trips and statements per MySQL `call()` and per task of a drain, counted in the processes that
// send them (lib/sql-trace.mjs wraps mysql2's query(): one query is one round trip; a multi-statement
// query counts each statement). Not part of the table: robust figures on a loaded machine, where times
// are not. The worker's counts are printed by its process at exit (warm-up and idle checks included).
//
//   node bench/mysql-round-trips.mjs [calls=200] [drainN=1000]
import { mysqlTripCounts } from "./lib/sql-trace.mjs";
import { spawnWorker } from "./lib/child.mjs";
import { mysqlBackend } from "./lib/mysql-backend.mjs";
import { drainThroughput } from "./lib/ours.mjs";
import { openClient } from "./lib/targets.mjs";

const calls = Number(process.argv[2] ?? 200);
const drainN = Number(process.argv[3] ?? 1000);
const WARMUP = 5;

{
  const { target, cleanup } = await mysqlBackend.fresh("trips-call");
  const client = openClient(target);
  let child = null;
  try {
    await client.connect();
    child = await spawnWorker({ target, worker: {}, expect: 0, traceSql: true });
    child.start();
    for (let i = 0; i < WARMUP; i += 1) await client.call("noop", { i }, { waitTimeoutMs: 30_000 });
    const before = mysqlTripCounts();
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < calls; i += 1) await client.call("noop", { i }, { waitTimeoutMs: 30_000 });
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const after = mysqlTripCounts();
    console.log(
      `call(): client per call ${((after.queries - before.queries) / calls).toFixed(2)} round trips, ` +
        `${((after.statements - before.statements) / calls).toFixed(2)} statements, ` +
        `${((used.user + used.system) / calls).toFixed(0)} µs CPU; mean ${(ms / calls).toFixed(2)} ms (noisy); ` +
        `the worker's totals below are over ${calls + WARMUP} calls`,
    );
  } finally {
    await child?.stop();
    await client.close();
    await cleanup();
  }
}
if (drainN > 0) {
  for (const [concurrency, prefetch, claimBatch] of [
    [1, 1, undefined],
    [64, 64, 64],
  ]) {
    const r = await drainThroughput(mysqlBackend, { n: drainN, warmup: 0, concurrency, prefetch, claimBatch, traceSql: true });
    console.log(`drain c${concurrency} pf${prefetch}: ${drainN} tasks, worker CPU ${r.cpuUsPerTask.toFixed(0)} µs/task (the worker's totals follow)`);
  }
}
await mysqlBackend.finish();
