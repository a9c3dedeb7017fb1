#!/usr/bin/env node
// Summarizes a V8 .cpuprofile (from `node bench/run.mjs --cpu-prof`, which
// profiles the worker child processes): self time by function and by
// package, to name the hot spots of a drain.
//
//   node bench/profile-summary.mjs bench/results/profiles/CPU.….cpuprofile [--top 25]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "25" } } });
const top = Number(values.top);

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  // timeDeltas[i] is the time between samples i-1 and i; charge it to sample i's node.
  for (let i = 0; i < profile.samples.length; i += 1) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map();
  const byPackage = new Map();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id).callFrame;
    const where = frame.url === "" ? "" : `${shorten(frame.url)}:${frame.lineNumber + 1}`;
    const key = `${frame.functionName || "(anonymous)"} ${where}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const pkg = packageOf(frame.url, frame.functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }
  const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms sampled`);
  console.log("\nself time by package:");
  for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${pct(us)}  ${pkg}`);
  console.log(`\nself time by function (top ${top}):`);
  for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${fn}`);
}

function shorten(url) {
  return url.replace(/^file:\/\//, "").replace(/.*\/node_modules\/\.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "packages/");
}

function packageOf(url, functionName) {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native/V8)";
  if (url.startsWith("node:")) return "node internals";
  const pnpm = url.match(/\/node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pnpm) return pnpm[1];
  const ours = url.match(/\/packages\/([^/]+)\//);
  if (ours) return `@cairnq/${ours[1]}`;
  return shorten(url);
}
