// The SQLite driver comparison (`--only drivers`): node:sqlite against better-sqlite3 under Node 22,
// in the same run, each against its own raw call() floor. The bench itself runs on the Node that
// installed the workspace (20), where node:sqlite does not exist, so the measuring runs in a child
// process on Node 22 (scripts/runtimes.mjs fetches it, and builds better-sqlite3 for it, once).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ensureBetterSqlite3For, ensureRuntime } from "../../scripts/runtimes.mjs";
import { median } from "./stats.mjs";

const CHILD = fileURLToPath(new URL("../drivers-child.mjs", import.meta.url));

/** Runs the comparison; resolves with `{ node, results }` (see drivers-child.mjs). */
export async function driverComparison({ calls, warmup, reps }, log) {
  const runtime = ensureRuntime("node22");
  log(`drivers: ${runtime.label} ${runtime.version} (${runtime.source}); better-sqlite3 for it (a first run compiles it, a few minutes)`);
  const { modulePath, source } = ensureBetterSqlite3For("node22");
  log(`drivers: better-sqlite3 for ${runtime.label} (${source})`);
  const args = ["--disable-warning=ExperimentalWarning", CHILD, JSON.stringify({ calls, warmup, reps, betterSqlite3: modulePath })];
  const stdout = await new Promise((resolve, reject) => {
    const child = spawn(runtime.bin, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`the driver comparison on ${runtime.label} exited with code ${code}`))));
  });
  return JSON.parse(stdout.trim().split("\n").pop());
}

/** The comparison as a markdown table (medians over the repetitions). */
export function renderDrivers(comparison, calls) {
  const fmt = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
  const lines = [
    "",
    `SQLite drivers under Node ${comparison.node}, same run (${calls} sequential call()s, idle worker in another process on the same driver; floor = that driver's raw call() floor; across processes = the same raw round trip split over two processes, as a call() is):`,
    "",
    "| driver | call() p50 | floor p50 | ratio | floor p50 across processes | ratio | call() p99 | floor p99 | client busy retries | worker busy retries |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const [driver, r] of Object.entries(comparison.results)) {
    const p50 = median(r.p50);
    const floor = median(r.floorP50);
    const cross = median(r.crossP50);
    lines.push(
      `| ${driver} | ${fmt(p50)} ms | ${fmt(floor)} ms | ${(p50 / floor).toFixed(2)}× | ${fmt(cross)} ms | ${(p50 / cross).toFixed(2)}× | ${fmt(median(r.p99))} ms | ${fmt(median(r.floorP99))} ms | ${r.clientBusy.join(", ")} | ${r.workerBusy.join(", ")} |`,
    );
  }
  return lines.join("\n");
}
