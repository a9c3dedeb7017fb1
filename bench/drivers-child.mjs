// The SQLite driver comparison's measuring process (bench/lib/drivers.mjs starts it under Node 22):
// for better-sqlite3 (a copy built for this Node) and node:sqlite, interleaved, `reps` times: the
// call() floor on that driver's raw binding (in one process, and across two), and call() latency with an
// idle worker process on that driver (forked with this same Node). Prints one JSON line:
// { [driver]: { floorP50: [], floorP99: [], crossP50: [], p50: [], p99: [], clientBusy: [], workerBusy: [] } }.
//
//   node22 --disable-warning=ExperimentalWarning bench/drivers-child.mjs '{"calls":200,"warmup":20,"reps":1,"betterSqlite3":"/…/lib/index.js"}'
import { createRequire } from "node:module";
import { callLatency, finishOurs } from "./lib/ours.mjs";
import { callFloorOn, crossProcessCallFloor, PROTOCOL, sqliteBackend } from "./lib/sqlite-backend.mjs";
import { openStore } from "./lib/targets.mjs";

const config = JSON.parse(process.argv[2]);
const require = createRequire(import.meta.url);

const DRIVERS = [
  { name: "better-sqlite3", target: { betterSqlite3: config.betterSqlite3 }, open: (path) => new (require(config.betterSqlite3))(path) },
  { name: "node:sqlite", target: "node:sqlite", open: (path) => new (process.getBuiltinModule("node:sqlite").DatabaseSync)(path) },
];

/** The bench's SQLite backend, its targets on `driver`. */
function backendOn(driver) {
  return {
    ...sqliteBackend,
    fresh: async (label) => {
      const fresh = await sqliteBackend.fresh(`${label}-${driver.name.replace(/\W/g, "")}`);
      return { ...fresh, target: { ...fresh.target, driver: driver.target } };
    },
  };
}

/** The call() floor of bench/lib/sqlite-backend.mjs, on `driver`'s raw binding: INSERT, claim, complete (each its own commit), SELECT. */
async function callFloor(driver, { calls, warmup }) {
  const { target, cleanup } = await backendOn(driver).fresh("floor-call");
  const store = openStore(target);
  await store.connect();
  await store.close();
  const db = driver.open(target.path);
  try {
    for (const pragma of ["journal_mode = WAL", "synchronous = NORMAL", "temp_store = MEMORY", "foreign_keys = ON"]) db.exec(`PRAGMA ${pragma}`);
    return callFloorOn(db, PROTOCOL, { calls, warmup, result: null, label: `the ${driver.name} call floor` });
  } finally {
    db.close();
    await cleanup();
  }
}

/** The call() floor across two processes (bench/lib/sqlite-backend.mjs), on `driver`'s raw binding in both. */
async function crossFloor(driver, { calls, warmup }) {
  const { target, cleanup } = await backendOn(driver).fresh("floor-call-x");
  const store = openStore(target);
  await store.connect();
  await store.close();
  try {
    return await crossProcessCallFloor(driver.target, target.path, { calls, warmup });
  } finally {
    await cleanup();
  }
}

const out = {};
try {
  for (let rep = 0; rep < config.reps; rep += 1) {
    for (const driver of DRIVERS) {
      const r = (out[driver.name] ??= { floorP50: [], floorP99: [], crossP50: [], p50: [], p99: [], clientBusy: [], workerBusy: [] });
      const floor = await callFloor(driver, config);
      r.floorP50.push(floor.p50);
      r.floorP99.push(floor.p99);
      r.crossP50.push((await crossFloor(driver, config)).p50);
      const latency = await callLatency(backendOn(driver), { calls: config.calls, warmup: config.warmup, label: "latency" });
      r.p50.push(latency.p50);
      r.p99.push(latency.p99);
      r.clientBusy.push(latency.clientBusyRetries);
      r.workerBusy.push(latency.workerBusyRetries);
      process.stderr.write(`[drivers] ${driver.name} rep ${rep + 1}: call p50 ${latency.p50.toFixed(2)} ms (floor ${floor.p50.toFixed(2)} ms)\n`);
    }
  }
} finally {
  await finishOurs();
  await sqliteBackend.finish();
}
process.stdout.write(`${JSON.stringify({ node: process.version, results: out })}\n`);
