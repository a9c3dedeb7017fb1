// The SQLite driver comparison's measuring process (bench/lib/drivers.mjs starts it under Node 22 for
// better-sqlite3 and node:sqlite, and under Bun for bun:sqlite): for each driver it is given, in turn,
// `reps` times: the call() floor on that driver's raw binding (in one process, and across two), and
// call() latency with an idle worker process on that driver (forked with this same runtime). Prints one
// JSON line: { runtime, node, results: { [driver]: { floorP50: [], floorP99: [], crossP50: [], p50: [],
// p99: [], clientBusy: [], workerBusy: [] } } }. `rep`, when given, numbers the progress lines (lib/drivers.mjs
// starts one child per repetition).
//
//   node22 --disable-warning=ExperimentalWarning bench/drivers-child.mjs '{"calls":1000,"warmup":20,"reps":1,"drivers":["better-sqlite3","node:sqlite"],"betterSqlite3":"/…/lib/index.js"}'
//   bun bench/drivers-child.mjs '{"calls":1000,"warmup":20,"reps":1,"drivers":["bun:sqlite"]}'
import { callLatency, finishOurs } from "./lib/ours.mjs";
import { callFloorOn, crossProcessCallFloor, openDriver, PROTOCOL, sqliteBackend } from "./lib/sqlite-backend.mjs";
import { openStore } from "./lib/targets.mjs";

const config = JSON.parse(process.argv[2]);

/** Each driver's target (see lib/targets.mjs): better-sqlite3 is the copy built for this Node. */
const TARGETS = {
  "better-sqlite3": { betterSqlite3: config.betterSqlite3 },
  "node:sqlite": "node:sqlite",
  "bun:sqlite": "bun:sqlite",
};
const DRIVERS = config.drivers.map((name) => {
  if (!(name in TARGETS)) throw new Error(`drivers-child: unknown driver '${name}'; the drivers are ${Object.keys(TARGETS).join(", ")}`);
  return { name, target: TARGETS[name] };
});

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
  const db = openDriver(driver.target, target.path);
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
      process.stderr.write(`[drivers] ${driver.name} rep ${(config.rep ?? rep) + 1}: call p50 ${latency.p50.toFixed(2)} ms (floor ${floor.p50.toFixed(2)} ms)\n`);
    }
  }
} finally {
  await finishOurs();
  await sqliteBackend.finish();
}
const runtime = process.versions.bun === undefined ? `Node ${process.version}` : `Bun ${process.versions.bun}`;
process.stdout.write(`${JSON.stringify({ runtime, node: process.version, results: out })}\n`);
