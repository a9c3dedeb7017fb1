// The parent's side of worker-child.mjs.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("../worker-child.mjs", import.meta.url));
const SQL_TRACE = new URL("./sql-trace.mjs", import.meta.url).href;
/**
 * The runtime of the worker processes: `CAIRNQ_BENCH_WORKER_NODE=<path to a node binary>` runs them on another
 * Node than the bench's own (a diagnostic: say, the telemetry row's Postgres drains on Node 24, whose
 * AsyncLocalStorage needs no async_hooks; better-sqlite3 is built for the bench's Node only). Default: this Node.
 */
const WORKER_NODE = process.env.CAIRNQ_BENCH_WORKER_NODE || process.execPath;

/**
 * Forks a worker process on `target` and waits until it is connected.
 *
 * @param {object} options
 * @param {object} options.target
 * @param {object} options.worker - WorkerOptions (plain data).
 * @param {number} options.expect - Report `done` after this many successes (0: never, an idle worker).
 * @param {number} [options.warmup] - Time `done` from this many successes on (the first ones are the warm-up).
 * @param {string | null} options.cpuProfDir - Write a V8 CPU profile of the child there.
 * @param {boolean} options.traceSql - Preload lib/sql-trace.mjs (diagnostics: SQLite time by statement).
 * @param {boolean} [options.stamp] - The handler returns `{ at: Date.now() }` when it starts (pickup timing).
 * @param {number} [options.handlerMs] - The handler awaits this long before it answers (a task waiting on I/O).
 * @param {string[]} [options.preload] - More modules to preload with --import (diagnostics, e.g. lib/claim-count.mjs).
 */
export async function spawnWorker({ target, worker, taskOptions, expect, warmup = 0, cpuProfDir = null, traceSql = false, stamp = false, handlerMs = 0, telemetry = false, preload = [] }) {
  const execArgv = cpuProfDir === null ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`];
  if (traceSql) execArgv.push("--import", SQL_TRACE);
  for (const module of preload) execArgv.push("--import", module);
  const child = fork(CHILD, [JSON.stringify({ target, worker, taskOptions, expect, warmup, stamp, handlerMs, telemetry })], { execArgv, execPath: WORKER_NODE, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const errors = [];
  const stats = { busyRetries: null };
  let onDone = null;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    child.on("message", (message) => {
      if (message.type === "ready") resolve();
      else if (message.type === "done") onDone?.(message);
      else if (message.type === "stats") stats.busyRetries = message.busyRetries;
      else if (message.type === "error") {
        errors.push(message.message);
        reject(new Error(message.message));
      }
    });
    void exited.then(({ code, signal }) => reject(new Error(`the worker process exited before it was ready (code ${code}, signal ${signal})`)));
  });
  await ready;
  return {
    pid: child.pid,
    errors,
    /** What the worker reported on stop (its SQLite busy retries); filled once `stop()` resolved. */
    stats,
    /** Starts the worker and resolves with its `done` report (rejects when the process exits first or after `timeoutMs`). */
    run(timeoutMs) {
      const done = new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the worker did not report done within ${timeoutMs}ms; errors: ${errors.join("; ") || "none"}`)), timeoutMs);
        onDone = (message) => {
          clearTimeout(timer);
          resolve(message);
        };
        void exited.then(({ code }) => {
          clearTimeout(timer);
          reject(new Error(`the worker process exited (code ${code}) before it reported done; errors: ${errors.join("; ") || "none"}`));
        });
      });
      child.send({ type: "start" });
      return done;
    },
    /** Starts the worker without waiting for anything (the idle worker of the latency measurement). */
    start() {
      child.send({ type: "start" });
    },
    /** Closes the worker and waits for the process to exit (killed after 10 s). */
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) child.send({ type: "stop" });
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
