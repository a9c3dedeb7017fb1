// Diagnostic preload (`node bench/run.mjs --trace-sql` passes it to worker
// children with --import): times every better-sqlite3 statement execution and
// every pg query in the process and prints, at exit, the statements by total
// time. better-sqlite3 times are CPU spent in SQLite (it is synchronous); pg
// times are from query() to its result, so they include waiting for the
// server, for locks and for the client's own queue. Used to tell which SQL a
// drain spends its time in; never part of a measured run worth reporting (the
// wrapping adds overhead).
import { createRequire } from "node:module";
import { sqliteStatementPrototype } from "./stamp-methods.mjs";

const require = createRequire(import.meta.url);
const proto = sqliteStatementPrototype();

const stats = new Map();
function record(sql, ns) {
  const key = String(sql).replace(/\s+/g, " ").slice(0, 140);
  const entry = stats.get(key) ?? { count: 0, ns: 0 };
  entry.count += 1;
  entry.ns += ns;
  stats.set(key, entry);
}
for (const method of ["all", "run", "get", "iterate"]) {
  const original = proto[method];
  proto[method] = function timed(...args) {
    const started = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      record(this.source, Number(process.hrtime.bigint() - started));
    }
  };
}

const pg = require("pg");
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function timedQuery(config, values, callback) {
  const sql = typeof config === "string" ? config : config?.text;
  const started = process.hrtime.bigint();
  const done = () => record(sql, Number(process.hrtime.bigint() - started));
  const cb = [values, callback].find((arg) => typeof arg === "function");
  if (cb !== undefined || typeof config?.submit === "function") {
    // Callback style and Submittables (Kysely's pg driver passes a callback): time until the callback.
    if (cb === undefined) return query.call(this, config, values, callback);
    const wrapped = (...args) => {
      done();
      return cb(...args);
    };
    return typeof values === "function" ? query.call(this, config, wrapped) : query.call(this, config, values, wrapped);
  }
  const result = query.call(this, config, values);
  if (result && typeof result.then === "function") result.then(done, done);
  return result;
};

// Statements a Postgres pipeline writes to the wire itself (store-postgres's claim and batches), which the
// wrapper above sees as one call: counted by text from pg's wire messages (a named statement's text from its
// first parse), so a trace tells the statements per claim on Postgres too. Their time is their pipeline's.
const Connection = require("pg/lib/connection");
const wire = new Map();
const namedText = new Map();
const parse = Connection.prototype.parse;
Connection.prototype.parse = function tracedParse(message) {
  if (message.name) namedText.set(message.name, message.text);
  this.cairnqTraceText = message.text;
  return parse.call(this, message);
};
const bind = Connection.prototype.bind;
Connection.prototype.bind = function tracedBind(message) {
  const text = message.statement ? namedText.get(message.statement) : this.cairnqTraceText;
  this.cairnqTraceText = undefined;
  if (text !== undefined) {
    const key = String(text).replace(/\s+/g, " ").slice(0, 140);
    wire.set(key, (wire.get(key) ?? 0) + 1);
  }
  return bind.call(this, message);
};

// mysql2 (the MySQL store's driver and the MySQL floors'): each query() is one round trip, timed until its
// callback or promise; a multi-statement query (the store joins a plan's statements with ";\n") also counts
// each of its statements by text, so a trace tells round trips and statements per task on MySQL.
const mysqlTrips = { queries: 0, statements: 0 };
/** The mysql2 round trips and statements this process sent so far (for a script that traces itself). */
export function mysqlTripCounts() {
  return { ...mysqlTrips };
}
const mysqlStatements = new Map();
let mysqlConnection = null;
try {
  mysqlConnection = require("mysql2").Connection;
} catch {
  // mysql2 not installed where this runs: nothing to trace.
}
if (mysqlConnection !== null) {
  const mysqlQuery = mysqlConnection.prototype.query;
  mysqlConnection.prototype.query = function timedMysqlQuery(sql, values, callback) {
    const text = typeof sql === "string" ? sql : sql?.sql;
    mysqlTrips.queries += 1;
    for (const one of String(text).split(";\n")) {
      mysqlTrips.statements += 1;
      const key = one.replace(/\s+/g, " ").trim().slice(0, 140);
      mysqlStatements.set(key, (mysqlStatements.get(key) ?? 0) + 1);
    }
    const started = process.hrtime.bigint();
    const done = () => record(text, Number(process.hrtime.bigint() - started));
    const cb = [values, callback].find((arg) => typeof arg === "function");
    if (cb === undefined) {
      const result = mysqlQuery.call(this, sql, values, callback);
      result?.once?.("end", done);
      return result;
    }
    const wrapped = (...args) => {
      done();
      return cb(...args);
    };
    return typeof values === "function" ? mysqlQuery.call(this, sql, wrapped) : mysqlQuery.call(this, sql, values, wrapped);
  };
}

process.on("exit", () => {
  const rows = [...stats].sort((a, b) => b[1].ns - a[1].ns).slice(0, 20);
  const total = rows.reduce((sum, [, e]) => sum + e.ns, 0);
  const lines = [`[sql-trace pid ${process.pid}] ${(total / 1e6).toFixed(0)} ms in the top statements:`];
  for (const [sql, e] of rows) {
    lines.push(`  ${(e.ns / 1e6).toFixed(1).padStart(8)} ms  ${String(e.count).padStart(7)}×  ${(e.ns / e.count / 1e3).toFixed(1).padStart(7)} µs  ${sql}`);
  }
  if (wire.size > 0) {
    lines.push(`[sql-trace pid ${process.pid}] statements sent on pg's wire (pipelines included), by count:`);
    for (const [sql, count] of [...wire].sort((a, b) => b[1] - a[1]).slice(0, 30)) lines.push(`  ${String(count).padStart(7)}×  ${sql}`);
  }
  if (mysqlTrips.queries > 0) {
    lines.push(`[sql-trace pid ${process.pid}] mysql2: ${mysqlTrips.queries} round trips, ${mysqlTrips.statements} statements; statements by count:`);
    for (const [sql, count] of [...mysqlStatements].sort((a, b) => b[1] - a[1]).slice(0, 30)) lines.push(`  ${String(count).padStart(7)}×  ${sql}`);
  }
  process.stderr.write(`${lines.join("\n")}\n`);
});
