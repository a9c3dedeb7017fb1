// Diagnostic preload for worker processes (`bench/group-drain-diag.mjs` passes it with --import): how the
// worker paces its claims, and what one claim costs in round trips. Counts, in this process, the store's
// claims (whichever store class the worker opened), the rows each returned (a histogram: empty, 1–15,
// 16–47, 48+), the wall time spent inside claim(), the claim waits (`claimWake`: the worker idling) and
// their time, and the round trips sent while a claim was in flight (Postgres: pg Syncs and simple
// queries; MySQL: mysql2 queries; SQLite: better-sqlite3 statement runs, all in this process). A
// settlement sent while a claim is in flight counts too: without prefetch a c64 drain's claims and
// completes alternate, so few do. Writes one JSON object to `$CAIRNQ_CLAIM_PACING_OUT` at exit.
// Wraps prototypes: never part of a measured run.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as cairnq from "cairnq";
import { aroundMethod, sqliteStatementPrototype } from "./stamp-methods.mjs";

const require = createRequire(import.meta.url);
const counts = { claims: 0, rows: 0, rowsHist: { 0: 0, "1-15": 0, "16-47": 0, "48+": 0 }, claimMs: 0, tripsInClaims: 0, waits: 0, waitMs: 0 };
let inClaim = 0;
const bucket = (n) => (n === 0 ? 0 : n < 16 ? "1-15" : n < 48 ? "16-47" : "48+");

for (const Store of [cairnq.SQLiteStore, cairnq.PostgresStore, cairnq.MySQLStore]) {
  aroundMethod(Store, "claim", async (claim, store, args) => {
    inClaim += 1;
    const started = performance.now();
    try {
      const rows = await claim.apply(store, args);
      counts.claims += 1;
      counts.rows += rows.length;
      counts.rowsHist[bucket(rows.length)] += 1;
      return rows;
    } finally {
      inClaim -= 1;
      counts.claimMs += performance.now() - started;
    }
  });
  aroundMethod(Store, "claimWake", async (claimWake, store, args) => {
    const started = performance.now();
    try {
      return await claimWake.apply(store, args);
    } finally {
      counts.waits += 1;
      counts.waitMs += performance.now() - started;
    }
  });
}

const trip = () => {
  if (inClaim > 0) counts.tripsInClaims += 1;
};
const Connection = require("pg/lib/connection");
for (const method of ["sync", "query"]) {
  const original = Connection.prototype[method];
  Connection.prototype[method] = function countedTrip(...args) {
    trip();
    return original.apply(this, args);
  };
}
const mysqlQuery = require("mysql2").Connection.prototype.query;
require("mysql2").Connection.prototype.query = function countedQuery(...args) {
  trip();
  return mysqlQuery.apply(this, args);
};
const statement = sqliteStatementPrototype();
for (const method of ["all", "run", "get", "iterate"]) {
  const original = statement[method];
  statement[method] = function countedRun(...args) {
    trip();
    return original.apply(this, args);
  };
}

process.on("exit", () => {
  const out = process.env.CAIRNQ_CLAIM_PACING_OUT;
  if (out) writeFileSync(out, JSON.stringify(counts));
});
