// The SQLite driver comparison (`--only drivers`): better-sqlite3 and node:sqlite under Node 22, and
// bun:sqlite under Bun, in the same run, each against its own raw call() floor. The bench itself runs on
// the Node that installed the workspace (20), where neither node:sqlite nor bun:sqlite exists, so the
// measuring runs in child processes (drivers-child.mjs): one on Node 22 for the first two, one on Bun for
// the third (scripts/runtimes.mjs fetches both runtimes, and builds better-sqlite3 for Node 22, once).
// Each repetition starts both children, one after the other, the order swapped from one repetition to the
// next, so a machine getting busier or quieter within a run favours no runtime.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ensureBetterSqlite3For, ensureRuntime } from "../../scripts/runtimes.mjs";
import { median } from "./stats.mjs";

const CHILD = fileURLToPath(new URL("../drivers-child.mjs", import.meta.url));

/** Runs drivers-child.mjs on `runtime` with `config`; resolves with its JSON line. */
async function runChild(runtime, execArgs, config) {
  const stdout = await new Promise((resolve, reject) => {
    const child = spawn(runtime.bin, [...execArgs, CHILD, JSON.stringify(config)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`the driver comparison on ${runtime.label} exited with code ${code}`))));
  });
  return JSON.parse(stdout.trim().split("\n").pop());
}

/**
 * Runs the comparison; resolves with `{ node, bun, runtimes, results }`: the Node 22 and Bun versions,
 * each driver's runtime ("Node v22…", "Bun 1.…") and its samples, one per repetition (see drivers-child.mjs).
 * Throws, saying why, when either runtime cannot be had: the Bun row is not skipped silently.
 */
export async function driverComparison({ calls, warmup, reps }, log) {
  const node = ensureRuntime("node22");
  const bun = ensureRuntime("bun");
  log(`drivers: ${node.label} ${node.version} (${node.source}), ${bun.label} ${bun.version} (${bun.source}); better-sqlite3 for ${node.label} (a first run compiles it, a few minutes)`);
  const { modulePath, source } = ensureBetterSqlite3For("node22");
  log(`drivers: better-sqlite3 for ${node.label} (${source})`);
  const children = [
    { runtime: node, execArgs: ["--disable-warning=ExperimentalWarning"], drivers: ["better-sqlite3", "node:sqlite"] },
    { runtime: bun, execArgs: [], drivers: ["bun:sqlite"] },
  ];
  const comparison = { node: node.version, bun: bun.version, runtimes: {}, results: {} };
  for (let rep = 0; rep < reps; rep += 1) {
    for (const child of rep % 2 === 0 ? children : [...children].reverse()) {
      const out = await runChild(child.runtime, child.execArgs, { calls, warmup, reps: 1, rep, drivers: child.drivers, betterSqlite3: modulePath });
      for (const driver of child.drivers) {
        comparison.runtimes[driver] = out.runtime;
        const into = (comparison.results[driver] ??= {});
        for (const [figure, samples] of Object.entries(out.results[driver])) (into[figure] ??= []).push(...samples);
      }
    }
  }
  // Rows in the children's order (better-sqlite3, node:sqlite, bun:sqlite) whichever ran first.
  const order = children.flatMap((child) => child.drivers);
  comparison.results = Object.fromEntries(order.map((driver) => [driver, comparison.results[driver]]));
  return comparison;
}

/** The comparison as a markdown table (medians over the repetitions). */
export function renderDrivers(comparison, calls) {
  const fmt = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
  const lines = [
    "",
    `SQLite drivers, same run: better-sqlite3 and node:sqlite under Node ${comparison.node}, bun:sqlite under Bun ${comparison.bun} (${calls} sequential call()s per repetition, idle worker in another process on the same runtime and driver; floor = that driver's raw call() floor; across processes = the same raw round trip split over two processes, as a call() is; busy retries per repetition, the client's over the timed calls, the worker's over its whole run):`,
    "",
    "| driver | runtime | call() p50 | floor p50 | ratio | floor p50 across processes | ratio | call() p99 | floor p99 | client busy retries | worker busy retries |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const [driver, r] of Object.entries(comparison.results)) {
    const p50 = median(r.p50);
    const floor = median(r.floorP50);
    const cross = median(r.crossP50);
    lines.push(
      `| ${driver} | ${comparison.runtimes?.[driver] ?? `Node ${comparison.node}`} | ${fmt(p50)} ms | ${fmt(floor)} ms | ${(p50 / floor).toFixed(2)}× | ${fmt(cross)} ms | ${(p50 / cross).toFixed(2)}× | ${fmt(median(r.p99))} ms | ${fmt(median(r.floorP99))} ms | ${r.clientBusy.join(", ")} | ${r.workerBusy.join(", ")} |`,
    );
  }
  return lines.join("\n");
}
