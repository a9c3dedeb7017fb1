#!/usr/bin/env node
// `pnpm test`: the whole suite, with a Postgres provided (see docs/testing.md).
//
//   1. check that every test file is in a tier that runs (tiers.mjs)
//   2. the fast tier: the protocol's tests with coverage, then every other
//      package's fast tests in one vitest run (the root vitest.config.ts)
//   3. ensure a Postgres (scripts/pg-env.mjs), export CAIRNQ_TEST_PG_DSN, a
//      MariaDB (scripts/mysql-env.mjs), export CAIRNQ_TEST_MYSQL_DSN, and
//      turbo run build typecheck lint:repo check-package (lint:repo: one ESLint
//      run over every package, scripts/lint.mjs), with the consumer test
//      (npm installs, in tests/consumer) in the same run: turbo starts it as
//      soon as the packages it packs are built
//   4. the runtimes phase (scripts/test-runtimes.mjs): the conformance kit on
//      SQLiteStore under Node 22 and 24 (node:sqlite) and Bun (bun:sqlite),
//      each runtime fetched from the npm registry once and then cached
//   5. turbo run test:integration --concurrency=1: the rest of the integration
//      tier (real processes, Postgres, Chromium) in two lanes side by side,
//      cairnq in one and every other package one at a time in the other (with
//      databases of its own: NOTIFY is per database), and beside them the
//      wait-bound lane: the suites that mostly wait (store-mysql's whole
//      integration tier among them); then, alone,
//      the cairnq suites that need both cores or their whole timeout (scripts/integration-lanes.mjs:
//      the turbo runs leave those files out)
//   6. stop a throwaway Postgres, print how long each phase took, what
//      failed (vitest's FAIL lines with their errors' first lines) and
//      "N passed, N failed"
//
// Step 4 runs turbo with --only: step 3 built everything it depends on.
// Arguments after `--` go to every turbo run (`pnpm test -- --force`). With a
// filter (`pnpm test -- --filter=@cairnq/store-sqlite`) the checks still cover
// every package, and the tests become one `turbo run test test:integration
// --concurrency=1` after them, over the packages it selects: both tiers of
// each, one task at a time.
//
// Exits non-zero as soon as a step fails.

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDatabaseBeside, ensurePostgres } from "./pg-env.mjs";
import { ensurePgBouncer } from "./pgbouncer-env.mjs";
import { ensureMySQL } from "./mysql-env.mjs";
import { ALONE_FILES, FIRST_LANE, LANE_ENV, WAIT_BOUND_FILES, WAITS_LANE_PACKAGES } from "./integration-lanes.mjs";
import { OWN_LINT } from "./lint.mjs";
import { untieredTests } from "./tiers.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(ROOT);

// Native addons (better-sqlite3) build from the local Node headers: there is
// no network to download them or prebuilt binaries from.
if (!process.env.npm_config_nodedir && fs.existsSync("/usr/include/node/node.h")) {
  process.env.npm_config_nodedir = "/usr";
}
process.env.TURBO_TELEMETRY_DISABLED ??= "1";
process.env.TURBO_NO_UPDATE_NOTIFIER ??= "1";

// `pnpm test -- --filter=x` may hand us a literal "--". Every turbo run gets
// the arguments (`--force`, say); the checks never get a filter.
const extraArgs = process.argv.slice(2).filter((a, i) => !(i === 0 && a === "--"));
const isFilter = (a, i, all) => a.startsWith("--filter=") || a === "--filter" || (i > 0 && all[i - 1] === "--filter") || a === "-F" || (i > 0 && all[i - 1] === "-F");
const filtered = extraArgs.some(isFilter);
const checkArgs = extraArgs.filter((a, i, all) => !isFilter(a, i, all));

/** The consumer test runs with the checks; every other integration suite runs in step 4. */
const CONSUMER = "@cairnq/consumer-test";

// The pnpm that runs us (npm_execpath), so `npx -p pnpm@X pnpm test` uses pnpm X for its children too.
const PNPM = (() => {
  const execpath = process.env.npm_execpath;
  if (execpath && /^pnpm/.test(path.basename(execpath))) {
    return /\.[cm]?js$/.test(execpath) ? [process.execPath, execpath] : [execpath];
  }
  return ["pnpm"];
})();

const running = new Set(); // the children running now, for signal forwarding
let pgStop = null;
let mysqlStop = null;
/** Makes a MySQL database beside the run's (ensureMySQL's `beside`). */
let mysqlBeside = async () => {
  throw new Error("no MySQL");
};
/** The databases of the integration tier's second lane (`integrationLanes`), or null to run one lane. */
let secondLane = null;
/** The wait-bound lane's databases, or null: it then uses the run's own (beside the first lane). */
let waitsLane = null;
let exiting = false;

async function finish(code) {
  if (exiting) return;
  exiting = true;
  for (const [lane, dbs] of [["second lane", secondLane], ["wait-bound lane", waitsLane]]) {
    if (!dbs) continue;
    try {
      await dbs.drop();
    } catch (err) {
      console.error(`test: dropping the ${lane}'s Postgres database failed: ${err.message}`);
    }
  }
  if (pgStop) {
    try {
      await pgStop();
    } catch (err) {
      console.error(`test: stopping the throwaway Postgres failed: ${err.message}`);
    }
  }
  if (mysqlStop) {
    try {
      await mysqlStop();
    } catch (err) {
      console.error(`test: dropping the run's MySQL databases failed: ${err.message}`);
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
      for (const child of running) killTree(child, "SIGKILL");
      void finish(interrupted);
      return;
    }
    interrupted = 128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 }[sig] ?? 0);
    console.error(`\ntest: ${sig}, stopping`);
    const children = [...running];
    if (children.length === 0) return void finish(interrupted);
    for (const child of children) killTree(child, sig);
    const timer = setTimeout(() => children.forEach((child) => killTree(child, "SIGKILL")), 10_000);
    void Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once("close", resolve))))).then(() => {
      clearTimeout(timer);
      void finish(interrupted);
    });
  });
}

/** Runs a command, copying its output line by line and handing each line to `onLine`. */
function run([cmd, ...pre], args, { onLine = () => {}, env = process.env } = {}) {
  if (interrupted) return Promise.resolve(interrupted);
  console.log(`\n> ${cmd === process.execPath ? "node" : "pnpm"} ${args.join(" ")}\n`);
  return new Promise((resolve) => {
    // Own process group, so a signal to this script reaches every task under the command.
    const child = spawn(cmd, [...pre, ...args], { stdio: ["ignore", "pipe", "pipe"], env, detached: true });
    running.add(child);
    for (const [stream, out] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let buf = "";
      const emit = (line) => {
        out.write(`${line}\n`);
        onLine(line);
      };
      stream.on("data", (chunk) => {
        buf += chunk.toString("utf8");
        let nl;
        while ((nl = buf.indexOf("\n")) !== -1) {
          emit(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      });
      stream.on("end", () => {
        if (buf) emit(buf);
      });
    }
    child.on("error", (err) => {
      console.error(`test: could not run ${cmd}: ${err.message}`);
      running.delete(child);
      resolve(127);
    });
    child.on("close", (code, signal) => {
      running.delete(child);
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

const totals = { passed: 0, failed: 0, skipped: 0, todo: 0 };
let reports = 0;

/**
 * vitest's `FAIL  file > suite > test` lines, each with turbo's task prefix when it has one (the file path is
 * relative to its package) and the six lines after it from the same task (the error's first lines: runs side by
 * side interleave their lines), repeated at the end of the run beside the counts, so a log cut to its tail
 * still names what failed. At most 60 lines.
 */
const failures = [];
/** Error lines still to take after a FAIL line, by turbo task prefix ("" for a run without one). */
const failureLinesLeft = new Map();
function noteFailure(line) {
  if (failures.length >= 60) return;
  const plain = line.replace(ANSI, "");
  const prefix = /^[\w@/.-]+:test(?::integration)?:/.exec(plain)?.[0] ?? "";
  const text = plain.slice(prefix.length).trim();
  if (/^FAIL\s/.test(text)) {
    failures.push(prefix === "" ? text : `${prefix} ${text}`);
    failureLinesLeft.set(prefix, 6);
    return;
  }
  const left = failureLinesLeft.get(prefix) ?? 0;
  if (left > 0 && text !== "" && !text.startsWith("⎯")) {
    failures.push(`    ${text}`);
    failureLinesLeft.set(prefix, left - 1);
  }
}

function countTests(line) {
  noteFailure(line);
  const counts = parseTestsLine(line);
  if (!counts) return;
  reports++;
  for (const [k, v] of Object.entries(counts)) totals[k] = (totals[k] ?? 0) + v;
}

// ---------------------------------------------------------------------------
// Phases: what ran, when, and how it ended, for the table printed at the end.

const STARTED = Date.now();
/** @type {{ name: string, start: number, end: number, code: number | null, note?: string, depth: number }[]} */
const phases = [];

/** Times `work` (which resolves to an exit code) as one phase. */
async function phase(name, work, depth = 0) {
  const row = { name, start: Date.now(), end: 0, code: null, depth };
  phases.push(row);
  row.code = await work(row);
  row.end = Date.now();
  return row.code;
}

/**
 * Runs turbo with `--summarize` and adds one row under `parent` per group of
 * its tasks (`groupOf(task)`, null to leave a task out): from the group's
 * first start to its last end.
 */
async function turbo(parent, args, groupOf, options = {}) {
  let summary = null;
  const code = await run(PNPM, ["exec", "turbo", "run", ...args, "--ui=stream", "--summarize"], {
    ...options,
    onLine: (line) => {
      countTests(line);
      const m = /Summary:\s+(\S+\.json)\s*$/.exec(line.replace(ANSI, ""));
      if (m) summary = m[1];
    },
  });
  if (summary === null) return code;
  try {
    const { tasks } = JSON.parse(fs.readFileSync(summary, "utf8"));
    const groups = new Map();
    for (const task of tasks) {
      const { startTime, endTime, exitCode } = task.execution ?? {};
      if (!startTime || !endTime) continue; // never started: the run stopped first
      const key = groupOf(task);
      if (key === null) continue;
      const group = groups.get(key) ?? { name: key, start: startTime, end: endTime, code: 0, depth: parent.depth + 1, tasks: 0, cached: 0, busy: 0, longest: null };
      group.start = Math.min(group.start, startTime);
      group.end = Math.max(group.end, endTime);
      if (exitCode) group.code = exitCode;
      group.tasks++;
      if (task.cache?.status === "HIT") group.cached++;
      group.busy += endTime - startTime;
      if (!group.longest || endTime - startTime > group.longest.ms) group.longest = { id: task.taskId, ms: endTime - startTime };
      groups.set(key, group);
    }
    const rows = [...groups.values()].sort((a, b) => a.start - b.start);
    for (const row of rows) {
      if (row.tasks === 1) row.note = row.cached ? "cached" : undefined;
      else row.note = `${row.tasks} tasks${row.cached ? ` (${row.cached} cached)` : ""}, ${took(row.busy)} summed, longest ${row.longest.id} ${took(row.longest.ms)}`;
    }
    phases.splice(phases.indexOf(parent) + 1, 0, ...rows);
    fs.rmSync(summary, { force: true });
  } catch (err) {
    console.error(`test: could not read turbo's run summary ${summary}: ${err.message}`);
  }
  return code;
}

function clock(ms) {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function took(ms) {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

function printPhases() {
  const rows = phases.map((p) => [
    `${"  ".repeat(p.depth)}${p.name}`,
    clock(p.start - STARTED),
    p.end ? took(p.end - p.start) : "-",
    p.code === null ? "not finished" : p.code === 0 ? "ok" : `failed (${p.code})`,
    p.note ?? "",
  ]);
  rows.push(["total", "", took(Date.now() - STARTED), "", ""]);
  const head = ["phase", "start", "took", "result", ""];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => `  ${r[0].padEnd(width[0])}  ${r[1].padStart(width[1])}  ${r[2].padStart(width[2])}  ${r[3].padEnd(width[3])}  ${r[4]}`.trimEnd();
  console.log("\ntest: phases (start is the time since `pnpm test` began; rows whose times overlap ran at the same time)");
  console.log(line(head));
  for (const r of rows) console.log(line(r));
}

// ---------------------------------------------------------------------------

function summary(code) {
  printPhases();
  console.log("");
  if (interrupted) console.error("test: interrupted.");
  const extra = [totals.skipped && `${totals.skipped} skipped`, totals.todo && `${totals.todo} todo`].filter(Boolean);
  console.log(`test: ${reports} vitest run(s) reported${extra.length ? `; ${extra.join(", ")}` : ""}`);
  if (failures.length > 0) console.log(`test: what failed (vitest's FAIL lines and the errors' first lines)\n${failures.map((l) => `  ${l}`).join("\n")}`);
  console.log(`${totals.passed} passed, ${totals.failed} failed`);
  return code !== 0 || totals.failed > 0 ? code || 1 : 0;
}

/** The fast tier: the protocol's tests with their coverage threshold, then every other package's in one vitest run. */
async function fastTier() {
  const coverage = await phase("fast tier: @cairnq/protocol, coverage 100%", () =>
    run(PNPM, ["--filter", "@cairnq/protocol", "run", "test"], { onLine: countTests }),
  );
  if (coverage !== 0) return coverage;
  return phase("fast tier: every other package, one vitest run", () =>
    run(PNPM, ["exec", "vitest", "run", "--project=!@cairnq/protocol"], { onLine: countTests }),
  );
}

/**
 * Databases of its own for a lane of the integration tier, `<the run's database>_<suffix>` on both servers
 * (made in one phase row, "databases of <lane>"), or null when a server will not make them: the row then
 * says so and what happens `without` them.
 */
async function laneDatabases(pg, lane, suffix, without) {
  let made = null;
  await phase(`databases of ${lane}`, async (row) => {
    try {
      const pgLane = await createDatabaseBeside(pg.dsn, suffix);
      made = { pgDsn: pgLane.dsn, mysqlDsn: "", drop: pgLane.drop };
      made.mysqlDsn = await mysqlBeside(suffix);
      row.note = `${new URL(pgLane.dsn).pathname.slice(1)} on both servers`;
    } catch (err) {
      row.note = `none (${err.message}): ${without}`;
      console.error(`test: no databases for ${lane}, so ${without}: ${err.message}`);
      if (made) await made.drop().catch(() => {});
      made = null;
    }
    return 0;
  });
  return made;
}

/**
 * Postgres, then the checks, and (unless filtered) the consumer test in the same turbo run: its
 * npm installs and compile measure no time, so they can share the cores with typecheck and lint.
 */
async function checks() {
  let pg;
  const pgCode = await phase("postgres", async (row) => {
    try {
      pg = await ensurePostgres({ privateDatabase: true });
      row.note = pg.source;
      return 0;
    } catch (err) {
      console.error(`\ntest: no Postgres for the test suite.\n${err.message}`);
      return 1;
    }
  });
  if (pgCode !== 0) return pgCode;
  pgStop = pg.stop;
  process.env.CAIRNQ_TEST_PG_DSN = pg.dsn;

  // The pooler tests (transaction-mode PgBouncer in front of that Postgres) never skip: a
  // missing PgBouncer fails here, up front, as a missing Postgres does.
  const bouncerCode = await phase("pgbouncer", (row) => {
    try {
      const { binary, source } = ensurePgBouncer();
      process.env.CAIRNQ_TEST_PGBOUNCER = binary;
      row.note = `${binary} (${source})`;
      return 0;
    } catch (err) {
      console.error(`\ntest: no PgBouncer for the pooler tests.\n${err.message}`);
      return 1;
    }
  });
  if (bouncerCode !== 0) return bouncerCode;

  // The MySQL store's tests (MariaDB) never skip either: a server that is down is started, and one
  // that cannot be had fails here. The run gets a database of its own, dropped at the end.
  const mysqlCode = await phase("mysql", async (row) => {
    try {
      const mysql = await ensureMySQL();
      mysqlStop = mysql.stop;
      mysqlBeside = mysql.beside;
      process.env.CAIRNQ_TEST_MYSQL_DSN = mysql.dsn;
      row.note = mysql.source;
      return 0;
    } catch (err) {
      console.error(`\ntest: no MySQL/MariaDB for the test suite.\n${err.message}`);
      return 1;
    }
  });
  if (mysqlCode !== 0) return mysqlCode;

  // The integration tier's second lane (step 5) gets databases of its own beside the run's: NOTIFY is
  // delivered per database. A server that will not make them leaves the tier in one lane.
  if (!filtered) {
    secondLane = await laneDatabases(pg, "the integration tier's second lane", "lane2", "the integration tier runs in one lane");
    // The wait-bound lane too: it runs conformance kits (scripts/integration-lanes.mjs), whose push cases
    // count signals, beside the first lane's workers. Without them it shares the run's databases.
    waitsLane = await laneDatabases(pg, "the wait-bound lane", "waits", "the wait-bound lane uses the run's databases");
  }

  // Lint is one ESLint run over every package's lint paths (scripts/lint.mjs, the root task
  // //#lint:repo): one process shares the parsed TypeScript between packages, where 17 did not.
  // The packages it leaves to their own lint task (OWN_LINT: the Next.js example, whose lint waits
  // for `next build`) run theirs.
  const ownLint = OWN_LINT.map((dir) => `${JSON.parse(fs.readFileSync(path.join(ROOT, dir, "package.json"), "utf8")).name}#lint`);
  const tasks = ["build", "typecheck", "lint:repo", ...ownLint, "check-package", ...(filtered ? [] : [`${CONSUMER}#test:integration`])];
  const name = filtered ? "checks" : "checks, and the consumer test once its packages are built";
  const code = await phase(name, (row) =>
    turbo(row, [...tasks, ...checkArgs], (task) => (task.task === "test:integration" ? `consumer test (npm installs)` : task.task === "lint:repo" ? "lint" : task.task)),
  );
  if (code !== 0 && !interrupted) console.error(`\ntest: ${name} failed (exit ${code}); the integration tier was not run.`);
  return code;
}

async function main() {
  const untiered = untieredTests(ROOT);
  if (untiered.length > 0) {
    console.error(`test: these test files would not run in any tier (see docs/testing.md, "The two tiers"):\n${untiered.map((u) => `  ${u}`).join("\n")}`);
    console.log("0 passed, 0 failed");
    return 1;
  }

  // First and alone: it needs no build and no Postgres, answers within a minute, and its
  // lease tests (leases of tens of ms) must not wait for a core behind the checks' tasks.
  if (!filtered) {
    const fast = await fastTier();
    if (interrupted) return summary(interrupted);
    if (fast !== 0) {
      console.error("\ntest: the fast tier failed; the checks and the integration tier were not run.");
      return summary(fast);
    }
  }

  const checked = await checks();
  if (interrupted) return summary(interrupted);
  if (checked !== 0) return summary(checked);

  if (filtered) {
    const code = await phase(`tests of the selected packages (${extraArgs.join(" ")})`, (row) =>
      turbo(row, ["test", "test:integration", "--only", "--concurrency=1", ...extraArgs], (task) => task.taskId),
    );
    if (code !== 0 && !interrupted) console.error(`test: the tests failed (exit ${code}).`);
    return summary(code);
  }

  // About half a minute once the runtimes are cached (a first run downloads ~100 MB). Not beside the
  // integration tier: the kit's lease cases measure tens of milliseconds of real time, as its tests do.
  const runtimes = await phase("runtimes: the kit on node:sqlite (Node 22, 24) and bun:sqlite (Bun)", () =>
    run([process.execPath], ["scripts/test-runtimes.mjs"], { onLine: countTests }),
  );
  if (interrupted) return summary(interrupted);
  if (runtimes !== 0) {
    console.error("test: the runtimes phase failed; the integration tier was not run.");
    return summary(runtimes);
  }

  // Real processes, Postgres and Chromium, with leases, heartbeats and timeouts
  // measured against the clock: one package at a time; beside them, in a lane of
  // their own, the suites that mostly wait (scripts/integration-lanes.mjs: some of cairnq's and
  // store-postgres's files, and every file of WAITS_LANE_PACKAGES, which neither package lane runs).
  const title = secondLane
    ? `integration tier: ${FIRST_LANE.join(", ")} | every other package | the wait-bound lane; then the suites that run alone`
    : "integration tier: one package at a time | the wait-bound lane; then the suites that run alone";
  const integration = await phase(title, async (row) => {
    const restEnv = { ...process.env, [LANE_ENV]: "rest" };
    const turboArgs = ["test:integration", "--only", "--concurrency=1", `--filter=!${CONSUMER}`, ...WAITS_LANE_PACKAGES.map((p) => `--filter=!${p}`), ...extraArgs];
    const rest = secondLane
      ? Promise.all([
          // cairnq's integration files (minus the wait-bound lane's and the alone ones) take about as
          // long as every other package's together; both lanes spend much of it waiting on processes,
          // leases and servers.
          turbo(row, [...turboArgs, ...FIRST_LANE.map((p) => `--filter=${p}`)], (task) => task.package, { env: restEnv }),
          turbo(row, [...turboArgs, ...FIRST_LANE.map((p) => `--filter=!${p}`)], (task) => task.package, {
            env: { ...restEnv, CAIRNQ_TEST_PG_DSN: secondLane.pgDsn, CAIRNQ_TEST_MYSQL_DSN: secondLane.mysqlDsn },
          }),
        ]).then((codes) => codes.find((c) => c !== 0) ?? 0)
      : turbo(row, turboArgs, (task) => task.package, { env: restEnv });
    // The wait-bound lane: each package's files (integration-lanes.mjs), one package after another.
    const waitsRuns = [...Object.entries(WAIT_BOUND_FILES), ...WAITS_LANE_PACKAGES.map((pkg) => [pkg, ["test/integration/"]])];
    const waitsTitle = waitsRuns
      .map(([pkg, files]) => `${pkg} ${files.map((f) => (f.endsWith("/") ? "all" : path.basename(f, ".test.ts"))).join(", ")}`)
      .join("; ");
    const waits = phase(
      `wait-bound lane: ${waitsTitle}`,
      async () => {
        for (const [pkg, files] of waitsRuns) {
          const env = waitsLane ? { ...process.env, CAIRNQ_TEST_PG_DSN: waitsLane.pgDsn, CAIRNQ_TEST_MYSQL_DSN: waitsLane.mysqlDsn } : process.env;
          const code = await run(PNPM, ["--filter", pkg, "exec", "vitest", "run", ...files], { onLine: countTests, env });
          if (code !== 0 || interrupted) return code;
        }
        return 0;
      },
      1,
    );
    const [restCode, waitsCode] = await Promise.all([rest, waits]);
    if (restCode !== 0 && !interrupted) console.error(`test: turbo run test:integration failed (exit ${restCode}).`);
    if (waitsCode !== 0 && !interrupted) console.error(`test: the wait-bound lane failed (exit ${waitsCode}).`);
    // Then, alone, the suites that keep both cores busy or need their whole timeout (integration-lanes.mjs).
    const aloneCode = await phase(`alone: cairnq ${ALONE_FILES.map((f) => path.basename(f, ".test.ts")).join(", ")}`, () =>
      // One file after another (vitest would run them side by side).
      run(PNPM, ["--filter", "cairnq", "exec", "vitest", "run", "--no-file-parallelism", ...ALONE_FILES], { onLine: countTests }),
      1,
    );
    if (aloneCode !== 0 && !interrupted) console.error(`test: the suites that run alone failed (exit ${aloneCode}).`);
    return restCode || waitsCode || aloneCode;
  });
  return summary(integration);
}

main().then(
  (code) => finish(interrupted || code),
  (err) => {
    console.error(err);
    finish(1);
  },
);
