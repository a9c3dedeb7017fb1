// Where a grouped claim spends its time, per statement, against the plain claim (not part of the table).
//
//   node bench/group-cycle.mjs [--backend sqlite|postgres] [--cycles 150] [--modes plain,g10,g10k]
//
// Each mode has a fresh database filled with (cycles + 1) × 64 tasks through the client (`plain`: 10
// groups, no limits; `g10`: 10 groups, groupConcurrency 8; `g10k`: 10,000 groups, groupConcurrency 2 — the
// drains of the `groups` section). A cycle is one store.claim of 64 (probe skipped, as a worker whose
// last claim came back full) and the complete of every row it took, sent together so the store combines
// them as a worker's are. The modes take turns cycle by cycle (the order reversed every other cycle), so
// a machine getting busier or quieter weighs on each alike. Printed per mode: tasks per claim, the claim's
// and the completes' µs per task and this process's CPU µs per task (median and p10: the p10 is the
// figure least disturbed by other processes), the round trips per claim (Postgres: Syncs and simple
// queries), and each statement of the claim with its count per claim and its time (median, p10): on
// SQLite the time better-sqlite3 spent in it, on Postgres the server's execution time as auto_explain
// reports it (loaded into the measured connections' sessions through the DSN's `options`; planning,
// the commit and the wire are not in it).
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { fill } from "./lib/ours.mjs";
import { sqliteStatementPrototype } from "./lib/stamp-methods.mjs";
import { newWorkerId, openStore } from "./lib/targets.mjs";

const { values: args } = parseArgs({
  options: { backend: { type: "string", default: "sqlite" }, cycles: { type: "string", default: "150" }, modes: { type: "string", default: "plain,g10,g10k" } },
});
const cycles = Number(args.cycles);
const MODES = {
  plain: { groups: 10, limits: null },
  g10: { groups: 10, limits: { groupConcurrency: 8 } },
  g10k: { groups: 10_000, limits: { groupConcurrency: 2 } },
};
const require = createRequire(import.meta.url);
const backend =
  args.backend === "sqlite" ? (await import("./lib/sqlite-backend.mjs")).sqliteBackend : args.backend === "postgres" ? (await import("./lib/postgres-backend.mjs")).postgresBackend : null;
if (backend === null) throw new Error(`--backend must be sqlite or postgres, got ${args.backend}`);

/** The statements of the cycle in progress, by text: `{ n, ns[] }`; null between claims. */
let current = null;
let trips = 0;
const keys = new Map();
function keyOf(sql) {
  let key = keys.get(sql);
  if (key === undefined) {
    key = String(sql).replace(/\s+/g, " ").slice(0, 80);
    keys.set(sql, key);
  }
  return key;
}
function record(sql, ns) {
  if (current === null) return;
  const key = keyOf(sql);
  const entry = current.get(key) ?? { n: 0, ns: [] };
  entry.n += 1;
  entry.ns.push(ns);
  current.set(key, entry);
}

if (args.backend === "sqlite") {
  const proto = sqliteStatementPrototype();
  for (const method of ["all", "run", "get", "iterate"]) {
    const original = proto[method];
    proto[method] = function timed(...a) {
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, a);
      } finally {
        record(this.source, Number(process.hrtime.bigint() - started));
      }
    };
  }
} else {
  const pg = require("pg");
  const connect = pg.Client.prototype.connect;
  pg.Client.prototype.connect = function withNotices(...a) {
    this.on("notice", (message) => {
      const m = /^duration: ([0-9.]+) ms\s+plan:\s*([\s\S]*)$/.exec(message.message);
      if (m === null) return;
      let text = m[2];
      try {
        text = JSON.parse(m[2])["Query Text"];
      } catch {
        // A plan that is not JSON: keyed by its text.
      }
      record(text, Number(m[1]) * 1e6);
    });
    return connect.apply(this, a);
  };
  const Connection = require("pg/lib/connection");
  for (const method of ["sync", "query"]) {
    const original = Connection.prototype[method];
    Connection.prototype[method] = function counted(...a) {
      if (current !== null) trips += 1;
      return original.apply(this, a);
    };
  }
}

const AUTO_EXPLAIN = "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 -c auto_explain.log_level=notice -c auto_explain.log_format=json";
function measured(target) {
  if (target.backend !== "postgres") return target;
  const url = new URL(target.dsn);
  url.searchParams.set("options", `${url.searchParams.get("options") ?? ""} ${AUTO_EXPLAIN}`.trim());
  return { ...target, dsn: url.toString() };
}

const sides = [];
for (const mode of args.modes.split(",")) {
  const spec = MODES[mode];
  if (spec === undefined) throw new Error(`unknown mode ${mode} (${Object.keys(MODES).join(", ")})`);
  const { target, cleanup } = await backend.fresh(`group-cycle-${mode}`);
  await fill(target, (cycles + 1) * 64, spec.groups);
  const store = openStore(measured(target));
  await store.connect();
  sides.push({ mode, spec, store, cleanup, workerId: newWorkerId(), claim: [], complete: [], cpu: [], got: 0, trips: 0, statements: new Map() });
}
for (let c = 0; c < cycles; c++) {
  for (const side of c % 2 === 0 ? sides : [...sides].reverse()) {
    const flowControl = side.spec.limits === null ? {} : { flowControl: { noop: side.spec.limits } };
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    current = side.statements;
    trips = 0;
    const rows = await side.store.claim({ queues: ["default"], workerId: side.workerId, leaseMs: 30_000, names: ["noop"], limit: 64, probe: false, ...flowControl });
    current = null;
    side.trips += trips;
    const t1 = performance.now();
    await Promise.all(rows.map((row) => side.store.complete({ taskId: row.id, workerId: side.workerId, attempt: row.attempt, result: null })));
    const t2 = performance.now();
    const used = process.cpuUsage(cpu);
    side.got += rows.length;
    if (rows.length === 0) continue;
    side.claim.push(((t1 - t0) * 1000) / rows.length);
    side.complete.push(((t2 - t1) * 1000) / rows.length);
    side.cpu.push((used.user + used.system) / rows.length);
  }
}

const at = (values, p) => [...values].sort((a, b) => a - b)[Math.floor(values.length * p)] ?? NaN;
const fmt = (values, scale = 1) => `${(at(values, 0.5) / scale).toFixed(1)} (p10 ${(at(values, 0.1) / scale).toFixed(1)})`;
for (const side of sides) {
  console.log(
    `${side.mode}: ${(side.got / cycles).toFixed(1)} tasks/claim; µs per task: claim ${fmt(side.claim)}, completes ${fmt(side.complete)}, CPU ${fmt(side.cpu)}` +
      (args.backend === "postgres" ? `; ${(side.trips / cycles).toFixed(2)} round trips/claim` : ""),
  );
  for (const [key, entry] of [...side.statements].sort((a, b) => at(b[1].ns, 0.5) - at(a[1].ns, 0.5))) {
    if (entry.n / cycles < 0.05) continue;
    console.log(`  ${(entry.n / cycles).toFixed(2)}/claim  µs ${fmt(entry.ns, 1000)}  ${key}`);
  }
  await side.store.close();
  await side.cleanup();
}
