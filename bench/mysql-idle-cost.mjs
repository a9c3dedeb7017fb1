// What an idle MySQL worker costs the server: statements per second from an
// idle worker process (and an idle client beside it), counted in MariaDB's
// general log, the first second after the last call and the 10 s after that.
// Not part of the table: bench/README.md and docs/protocol.md ("MySQL/MariaDB
// mapping") quote it. Turns the server's general log on for the two windows
// (a global setting: run it on a server nobody else is measuring on).
//
//   node bench/mysql-idle-cost.mjs ['{"pollIntervalMs":500}' (the worker's options)]
import { createRequire } from "node:module";
import { spawnWorker } from "./lib/child.mjs";
import { mysqlBackend } from "./lib/mysql-backend.mjs";
import { openClient } from "./lib/targets.mjs";

const require = createRequire(import.meta.url);
const mysql = require("mysql2/promise");
const { target, cleanup } = await mysqlBackend.fresh("idlecost");
const database = new URL(target.dsn).pathname.slice(1);
const client = openClient(target);
const root = await mysql.createConnection({ uri: new URL("/mysql", target.dsn).href });
let child = null;
try {
  await client.connect();
  child = await spawnWorker({ target, worker: JSON.parse(process.argv[2] ?? "{}"), expect: 0 });
  child.start();
  await client.call("noop", {}, { waitTimeoutMs: 30_000 });
  for (const [ms, label] of [
    [1_000, "the first second after a call"],
    [10_000, "the next 10 s"],
  ]) {
    await root.query("TRUNCATE mysql.general_log");
    await root.query("SET GLOBAL log_output = 'TABLE'");
    await root.query("SET GLOBAL general_log = 1");
    await new Promise((resolve) => setTimeout(resolve, ms));
    await root.query("SET GLOBAL general_log = 0");
    const [threads] = await root.query("SELECT id FROM information_schema.processlist WHERE db = ?", [database]);
    const ids = threads.map((t) => Number(t.id));
    const [rows] = await root.query(`SELECT count(*) AS n FROM mysql.general_log WHERE command_type = 'Query' AND thread_id IN (${ids.join(",") || "0"})`);
    const n = Number(rows[0].n);
    console.log(`${label}: ${n} statements in ${ms} ms (${(n / (ms / 1000)).toFixed(1)}/s) from ${ids.length} connections`);
  }
} finally {
  await root.end();
  await child?.stop();
  await client.close();
  await cleanup();
}
