// Diagnostic preload for Postgres worker processes (`bench/churn-diag-pg.mjs` passes it with --import):
// counts, in this process, the store's claims and the rows each returned (a histogram), the
// claim waits (`claimWake`) and how they ended, the notifications pg delivered per channel, and the
// round trips pg sent (`Client#query` calls, pipelines counted once). Prints one JSON line
// (`[claim-count] {...}`) to stderr at exit. Wraps prototypes: never part of a measured run.
import { createRequire } from "node:module";
import * as cairnq from "cairnq";
import { aroundMethod } from "./stamp-methods.mjs";

const require = createRequire(import.meta.url);
const pg = require("pg");
const counts = { claims: 0, claimRows: 0, rowsHist: {}, waits: 0, waitsEarly: 0, waitMs: 0, notifications: {}, queries: 0, wireStatements: 0 };

aroundMethod(cairnq.PostgresStore, "claim", async (claim, store, args) => {
  const rows = await claim.apply(store, args);
  counts.claims += 1;
  counts.claimRows += rows.length;
  counts.rowsHist[rows.length] = (counts.rowsHist[rows.length] ?? 0) + 1;
  return rows;
});
aroundMethod(cairnq.PostgresStore, "claimWake", async (claimWake, store, [queues, timeoutMs, signal]) => {
  const started = performance.now();
  await claimWake.call(store, queues, timeoutMs, signal);
  const ms = performance.now() - started;
  counts.waits += 1;
  counts.waitMs += ms;
  if (ms < timeoutMs - 5) counts.waitsEarly += 1;
});
const emit = pg.Client.prototype.emit;
pg.Client.prototype.emit = function countedEmit(event, ...args) {
  if (event === "notification") counts.notifications[args[0]?.channel] = (counts.notifications[args[0]?.channel] ?? 0) + 1;
  return emit.call(this, event, ...args);
};
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(...args) {
  counts.queries += 1;
  return query.apply(this, args);
};
const Connection = require("pg/lib/connection");
const bind = Connection.prototype.bind;
Connection.prototype.bind = function countedBind(message) {
  counts.wireStatements += 1;
  return bind.call(this, message);
};

/** This process's counts so far (for a script that preloads itself). */
export function claimCounts() {
  return structuredClone(counts);
}

process.on("exit", () => {
  const cpu = process.cpuUsage();
  process.stderr.write(`[claim-count] ${JSON.stringify({ pid: process.pid, cpuUs: cpu.user + cpu.system, ...counts })}\n`);
});
