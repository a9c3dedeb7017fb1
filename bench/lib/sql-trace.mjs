// Diagnostic preload (`node bench/run.mjs --trace-sql` passes it to worker
// children with --import): times every better-sqlite3 statement execution in
// the process and prints, at exit, the statements by total time. Used to tell
// which SQL a drain spends its SQLite time in; never part of a measured run
// worth reporting (the wrapping adds overhead).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3");
const probe = new Database(":memory:");
const proto = Object.getPrototypeOf(probe.prepare("SELECT 1"));
probe.close();

const stats = new Map();
for (const method of ["all", "run", "get", "iterate"]) {
  const original = proto[method];
  proto[method] = function timed(...args) {
    const started = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      const ns = Number(process.hrtime.bigint() - started);
      const key = this.source.replace(/\s+/g, " ").slice(0, 140);
      const entry = stats.get(key) ?? { count: 0, ns: 0 };
      entry.count += 1;
      entry.ns += ns;
      stats.set(key, entry);
    }
  };
}

process.on("exit", () => {
  const rows = [...stats].sort((a, b) => b[1].ns - a[1].ns).slice(0, 20);
  const total = rows.reduce((sum, [, e]) => sum + e.ns, 0);
  const lines = [`[sql-trace pid ${process.pid}] ${(total / 1e6).toFixed(0)} ms in statements:`];
  for (const [sql, e] of rows) {
    lines.push(`  ${(e.ns / 1e6).toFixed(1).padStart(8)} ms  ${String(e.count).padStart(7)}×  ${(e.ns / e.count / 1e3).toFixed(1).padStart(7)} µs  ${sql}`);
  }
  process.stderr.write(`${lines.join("\n")}\n`);
});
