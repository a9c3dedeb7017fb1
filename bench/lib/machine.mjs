// What the run measured on: the numbers only mean something next to these.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import os from "node:os";

const require = createRequire(import.meta.url);

/** The SQLite library version better-sqlite3 is built with. */
export function sqliteVersion() {
  const Database = require("better-sqlite3");
  const db = new Database(":memory:");
  try {
    return db.prepare("SELECT sqlite_version() AS v").get().v;
  } finally {
    db.close();
  }
}

function gitCommit() {
  try {
    const cwd = new URL("..", import.meta.url).pathname;
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    return dirty === "" ? head : `${head}+dirty`;
  } catch {
    return "unknown";
  }
}

/**
 * The packages whose sources differ from the commit (tracked changes or new
 * files under `packages/<name>/src`): the built code measured is the working
 * tree's, so the table must say when that is not the commit.
 */
function uncommittedPackages() {
  try {
    const cwd = new URL("..", import.meta.url).pathname;
    const out = execFileSync("git", ["status", "--porcelain", "--", "../packages"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const names = new Set();
    for (const line of out.split("\n")) {
      const match = line.slice(3).match(/^packages\/([^/]+)\/src\//);
      if (match) names.add(match[1]);
    }
    return [...names].sort();
  } catch {
    return [];
  }
}

/** CPU, cores, memory, Node, SQLite, the commit, and the load average when the run started. */
export function machineInfo() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model?.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    /** The worker processes' Node when `CAIRNQ_BENCH_WORKER_NODE` runs them on another one (lib/child.mjs), else null. */
    workerNode: process.env.CAIRNQ_BENCH_WORKER_NODE ? execFileSync(process.env.CAIRNQ_BENCH_WORKER_NODE, ["--version"], { encoding: "utf8" }).trim() : null,
    sqlite: sqliteVersion(),
    postgres: null,
    commit: gitCommit(),
    uncommittedSources: uncommittedPackages(),
    loadAverageAtStart: os.loadavg().map((v) => Math.round(v * 100) / 100),
  };
}
