#!/usr/bin/env node
// `pnpm test`: the whole suite, with a Postgres provided (see docs/testing.md).
//
//   1. ensure a Postgres (scripts/pg-env.mjs) and export CAIRNQ_TEST_PG_DSN
//   2. turbo run build typecheck lint check-package
//   3. turbo run test --concurrency=1 [extra args, e.g. --filter=@cairnq/store-sqlite]
//   4. stop a throwaway Postgres, print "N passed, N failed"
//
// Exits non-zero as soon as a step fails.

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensurePostgres } from "./pg-env.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(ROOT);

// Native addons (better-sqlite3) build from the local Node headers: there is
// no network to download them or prebuilt binaries from.
if (!process.env.npm_config_nodedir && fs.existsSync("/usr/include/node/node.h")) {
  process.env.npm_config_nodedir = "/usr";
}
process.env.TURBO_TELEMETRY_DISABLED ??= "1";
process.env.TURBO_NO_UPDATE_NOTIFIER ??= "1";

// `pnpm test -- --filter=x` may hand us a literal "--".
const extraArgs = process.argv.slice(2).filter((a, i) => !(i === 0 && a === "--"));

// The pnpm that runs us (npm_execpath), so `npx -p pnpm@X pnpm test` uses pnpm X for its children too.
const PNPM = (() => {
  const execpath = process.env.npm_execpath;
  if (execpath && /^pnpm/.test(path.basename(execpath))) {
    return /\.[cm]?js$/.test(execpath) ? [process.execPath, execpath] : [execpath];
  }
  return ["pnpm"];
})();

let current = null; // the running child, for signal forwarding
let pgStop = null;
let exiting = false;

async function finish(code) {
  if (exiting) return;
  exiting = true;
  if (pgStop) {
    try {
      await pgStop();
    } catch (err) {
      console.error(`test: stopping the throwaway Postgres failed: ${err.message}`);
    }
  }
  process.exit(code);
}

let interrupted = 0; // exit code after a signal: start no further step

function killTree(child, sig) {
  try {
    process.kill(-child.pid, sig); // its process group (spawned detached)
  } catch {
    child.kill(sig);
  }
}

for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    if (interrupted) {
      // Second signal: don't wait any longer.
      if (current) killTree(current, "SIGKILL");
      void finish(interrupted);
      return;
    }
    interrupted = 128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 }[sig] ?? 0);
    console.error(`\ntest: ${sig}, stopping`);
    const child = current;
    if (!child) return void finish(interrupted);
    killTree(child, sig);
    const timer = setTimeout(() => killTree(child, "SIGKILL"), 10_000);
    child.once("close", () => {
      clearTimeout(timer);
      void finish(interrupted);
    });
  });
}

/** Runs a command, forwarding its output; `onLine` sees each stdout/stderr line when given. */
function run([cmd, ...pre], args, onLine) {
  if (interrupted) return Promise.resolve(interrupted);
  console.log(`\n> pnpm ${args.join(" ")}\n`);
  return new Promise((resolve) => {
    // Own process group, so a signal to this script reaches turbo and every task under it.
    const child = spawn(cmd, [...pre, ...args], {
      stdio: onLine ? ["ignore", "pipe", "pipe"] : ["ignore", "inherit", "inherit"],
      env: process.env,
      detached: true,
    });
    current = child;
    if (onLine) {
      for (const [stream, out] of [
        [child.stdout, process.stdout],
        [child.stderr, process.stderr],
      ]) {
        let buf = "";
        stream.on("data", (chunk) => {
          out.write(chunk);
          buf += chunk.toString("utf8");
          let nl;
          while ((nl = buf.indexOf("\n")) !== -1) {
            onLine(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        });
        stream.on("end", () => {
          if (buf) onLine(buf);
        });
      }
    }
    child.on("error", (err) => {
      console.error(`test: could not run ${cmd}: ${err.message}`);
      resolve(127);
    });
    child.on("close", (code, signal) => {
      current = null;
      // turbo exits 0 after a clean shutdown on a signal: that run still did not finish.
      resolve(interrupted || (code ?? (signal ? 1 : 0)));
    });
  });
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;

/**
 * Parses vitest's per-run summary, e.g. `      Tests  12 passed (12)` or
 * `Tests  1 failed | 11 passed | 2 skipped (14)`, possibly behind turbo's
 * `pkg:test: ` prefix. Returns null for any other line ("Test Files" included).
 */
function parseTestsLine(line) {
  const m = /(?:^|[\s:])Tests\s+((?:\d+\s+[a-z]+(?:\s*\|\s*)?)+)\s*\(\d+\)/.exec(line.replace(ANSI, ""));
  if (!m) return null;
  const counts = {};
  for (const part of m[1].matchAll(/(\d+)\s+([a-z]+)/g)) counts[part[2]] = (counts[part[2]] ?? 0) + Number(part[1]);
  return counts;
}

async function main() {
  let pg;
  try {
    pg = await ensurePostgres();
  } catch (err) {
    console.error(`\ntest: no Postgres for the test suite.\n${err.message}`);
    console.log("0 passed, 0 failed");
    return 1;
  }
  pgStop = pg.stop;
  process.env.CAIRNQ_TEST_PG_DSN = pg.dsn;

  const checks = await run(PNPM, ["exec", "turbo", "run", "build", "typecheck", "lint", "check-package", "--ui=stream"]);
  if (interrupted) {
    console.error("\ntest: interrupted.");
    return interrupted;
  }
  if (checks !== 0) {
    console.error(`\ntest: build/typecheck/lint/check-package failed (exit ${checks}); tests were not run.`);
    console.log("0 passed, 0 failed");
    return checks || 1;
  }

  const totals = { passed: 0, failed: 0, skipped: 0, todo: 0 };
  let reports = 0;
  const code = await run(PNPM, ["exec", "turbo", "run", "test", "--concurrency=1", "--ui=stream", ...extraArgs], (line) => {
    const counts = parseTestsLine(line);
    if (!counts) return;
    reports++;
    for (const [k, v] of Object.entries(counts)) totals[k] = (totals[k] ?? 0) + v;
  });

  console.log("");
  if (interrupted) console.error("test: interrupted.");
  else if (code !== 0) console.error(`test: turbo run test failed (exit ${code}).`);
  const extra = [totals.skipped && `${totals.skipped} skipped`, totals.todo && `${totals.todo} todo`].filter(Boolean);
  console.log(`test: ${reports} vitest run(s) reported${extra.length ? `; ${extra.join(", ")}` : ""}`);
  console.log(`${totals.passed} passed, ${totals.failed} failed`);
  return code !== 0 || totals.failed > 0 ? code || 1 : 0;
}

main().then(
  (code) => finish(interrupted || code),
  (err) => {
    console.error(err);
    finish(1);
  },
);
