#!/usr/bin/env node
// `pnpm test:runtimes`, and the runtimes phase of `pnpm test`: the conformance kit
// and the driver checks (packages/store-sqlite/test/runtimes/run-kit.mjs) against
// SQLiteStore on node:sqlite under Node 22 and Node 24 and on bun:sqlite under Bun,
// each runtime fetched from the npm registry when missing (scripts/runtimes.mjs).
// Needs @cairnq/store-sqlite and @cairnq/conformance built. One runtime at a time:
// the kit's lease cases measure tens of milliseconds of real time.
//
//   node scripts/test-runtimes.mjs               every runtime
//   node scripts/test-runtimes.mjs node22 bun    only those
//
// A runtime that cannot be had fails the run, saying why; nothing is skipped.

import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureRuntime, RUNTIMES } from "./runtimes.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGE = path.join(ROOT, "packages", "store-sqlite");

function runKit(runtime) {
  return new Promise((resolve) => {
    const child = spawn(runtime.bin, ["test/runtimes/run-kit.mjs", runtime.driver], { cwd: PACKAGE, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", (err) => {
      console.error(`test-runtimes: could not start ${runtime.bin}: ${err.message}`);
      resolve(127);
    });
    child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(RUNTIMES);
let failures = 0;
for (const name of names) {
  let runtime;
  try {
    runtime = ensureRuntime(name);
  } catch (err) {
    console.error(`\ntest-runtimes: ${err.message}`);
    console.log(`\n      Tests  1 failed (1)`);
    failures += 1;
    continue;
  }
  console.log(`\n> ${runtime.label} ${runtime.version} (${runtime.source}), ${runtime.driver}: ${path.relative(ROOT, runtime.bin)}`);
  if ((await runKit(runtime)) !== 0) failures += 1;
}
process.exit(failures > 0 ? 1 : 0);
