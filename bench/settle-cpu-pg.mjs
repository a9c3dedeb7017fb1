// Server CPU of settling tasks 64 at a time, old vs new store code in interleaved pairs (A/B diagnostic):
// each side's store (pool of 1, LISTEN off) in its own schema submits and claims 64 tasks, then completes
// all 64 at once (the write combiner makes them one statement; `--one`: one after another, a statement each); meanwhile a LISTEN connection per side
// (a worker's, on cairnq_queued) is woken by every notifying commit. Prints, per settled task, the CPU
// (utime + stime from /proc) of the side's pool backend and of its listener backend, and the wall time of
// the complete. Diagnostic only, not part of the bench table.
//
//   CAIRNQ_BENCH_PG_DSN=… node bench/settle-cpu-pg.mjs --old <dist of the old store-postgres> [--pairs 20]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { old: { type: "string" }, pairs: { type: "string", default: "20" }, one: { type: "boolean", default: false } } });
const DSN = process.env.CAIRNQ_BENCH_PG_DSN ?? "postgres://postgres@127.0.0.1:5432/test";
const require = createRequire(import.meta.url);
const pg = require("pg");
const sides = {
  old: await import(`${values.old}/index.js`),
  new: await import(new URL("../packages/store-postgres/dist/index.js", import.meta.url).href),
};
const ticks = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100/s)
};
const admin = new pg.Client(DSN);
await admin.connect();
const state = {};
for (const [name, mod] of Object.entries(sides)) {
  const schema = `cq_settle_${name}_${process.pid}`;
  const app = `settle_${name}_${process.pid}`;
  const store = new mod.PostgresStore(`${DSN}?application_name=${app}`, { schema, max: 1, listen: false });
  await store.connect();
  await store.submit({ name: "warm" });
  const listener = new pg.Client(DSN);
  await listener.connect();
  await listener.query("LISTEN cairnq_queued");
  const { rows } = await admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [app]);
  const { rows: lrows } = await listener.query("SELECT pg_backend_pid() AS pid");
  state[name] = { store, schema, pool: rows.map((r) => r.pid), listenerPid: lrows[0].pid, listener, cpu: 0, lcpu: 0, ms: [], tasks: 0 };
}
const pairs = Number(values.pairs);
for (let i = 0; i < pairs; i += 1) {
  for (const name of i % 2 === 0 ? ["old", "new"] : ["new", "old"]) {
    const s = state[name];
    await Promise.all(Array.from({ length: 64 }, (_, k) => s.store.submit({ name: "n", payload: { k, pad: "x".repeat(100) } })));
    const claimed = await s.store.claim({ queues: ["default"], workerId: "w", limit: 64 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const before = s.pool.reduce((sum, pid) => sum + ticks(pid), 0);
    const lbefore = ticks(s.listenerPid);
    const started = performance.now();
    const settle = (t) => s.store.completeRef({ taskId: t.id, workerId: "w", attempt: t.attempt, result: { ok: t.id } });
    if (values.one) for (const t of claimed) await settle(t);
    else await Promise.all(claimed.map(settle));
    s.ms.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
    s.cpu += s.pool.reduce((sum, pid) => sum + ticks(pid), 0) - before;
    s.lcpu += ticks(s.listenerPid) - lbefore;
    s.tasks += claimed.length;
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [name, s] of Object.entries(state)) {
  console.log(
    `${name}: ${s.tasks} tasks settled 64 at a time; pool backend CPU ${((s.cpu * 10_000) / s.tasks).toFixed(1)} µs/task, ` +
      `listener backend CPU ${((s.lcpu * 10_000) / s.tasks).toFixed(1)} µs/task, complete-64 median ${median(s.ms).toFixed(2)} ms`,
  );
  await s.store.close();
  await s.listener.end();
  await admin.query(`DROP SCHEMA IF EXISTS "${s.schema}" CASCADE`);
}
await admin.end();
