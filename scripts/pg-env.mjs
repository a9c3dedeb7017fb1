// Provides a Postgres for the test suite (see docs/testing.md).
//
//   const { dsn, stop, source } = await ensurePostgres();
//
// Order tried:
//   (a) CAIRNQ_TEST_PG_DSN, if set: it must answer `select 1`, or this throws.
//   (b) a server on 127.0.0.1:5432, user postgres, database test (trust auth).
//   (c) a Debian cluster (pg_lsclusters) that is down: pg_ctlcluster start, retry (b).
//   (d) a throwaway cluster: initdb into a temp dir, start on a free port,
//       create database test; stop() stops it and removes the dir.
//   (e) no Postgres binaries at all, root with apt-get: install postgresql,
//       then (b)-(d) again.
//   (f) otherwise: throw an Error that says what is missing and how to fix it.
//
// CAIRNQ_TEST_PG_THROWAWAY=1 skips (a)-(c) and always uses a throwaway cluster.
// Postgres tests never silently skip: failing to get a database is an error.
//
// With { privateDatabase: true } (as `pnpm test` asks), a run on the shared
// server of (b)/(c) gets a database of its own, cairnq_run_<pid>, dropped by
// stop(): Postgres delivers NOTIFY per database, on channels the protocol names
// (cairnq_queued, cairnq_done) whatever the schema, so two runs in one database
// wake each other's workers and break the tests that count wake-ups.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let LOCAL_DSN = "postgres://postgres@127.0.0.1:5432/test";
const CONNECT_TIMEOUT_MS = 5_000;

/** `postgres://user:secret@host/db` → `postgres://user:***@host/db`, for printing. */
export function redactDsn(dsn) {
  try {
    const u = new URL(dsn);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return dsn.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@");
  }
}

// ---------------------------------------------------------------------------
// Connectivity: the `pg` driver of packages/store-postgres, or psql as fallback.

let pgModule;
function loadPg() {
  if (pgModule !== undefined) return pgModule;
  pgModule = null;
  for (const from of ["packages/store-postgres/package.json", "package.json"]) {
    try {
      pgModule = createRequire(path.join(ROOT, from))("pg");
      break;
    } catch {
      // try the next place, then psql
    }
  }
  return pgModule;
}

function which(cmd) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Runs `sql` against `dsn`. Resolves with { ok: true } or
 * { ok: false, code, message } (code is the SQLSTATE or errno when known).
 */
async function runSql(dsn, sql) {
  const pg = loadPg();
  if (pg) {
    const client = new pg.Client({
      connectionString: dsn,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      statement_timeout: 30_000,
    });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query(sql);
      return { ok: true };
    } catch (err) {
      const msg = err?.message || (Array.isArray(err?.errors) ? err.errors.map((e) => e.message).join("; ") : String(err));
      return { ok: false, code: err?.code, message: msg || String(err?.code ?? err) };
    } finally {
      await client.end().catch(() => {});
    }
  }
  const psql = which("psql");
  if (psql) {
    const r = spawnSync(psql, ["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql], {
      encoding: "utf8",
      env: { ...process.env, PGCONNECT_TIMEOUT: String(CONNECT_TIMEOUT_MS / 1000) },
      timeout: 60_000,
    });
    if (r.status === 0) return { ok: true };
    const message = (r.stderr || r.error?.message || `psql exited with ${r.status}`).trim();
    const code = /database "[^"]*" does not exist/.test(message) ? "3D000" : undefined;
    return { ok: false, code, message };
  }
  throw new Error(
    "Cannot check Postgres connectivity: neither the `pg` package (a dependency of packages/store-postgres) " +
      "nor `psql` is available. Run `pnpm install` at the repository root first.",
  );
}

async function select1(dsn) {
  return runSql(dsn, "select 1");
}

/** (b): the machine's server on 127.0.0.1:5432; creates database `test` if only it is missing. */
async function tryLocal(notes) {
  let r = await select1(LOCAL_DSN);
  if (!r.ok && r.code === "3D000") {
    const created = await runSql(LOCAL_DSN.replace(/\/test$/, "/postgres"), "create database test");
    if (created.ok || created.code === "42P04") r = await select1(LOCAL_DSN);
  }
  if (r.ok) return true;
  notes.push(`${redactDsn(LOCAL_DSN)}: ${r.message}`);
  return false;
}

// ---------------------------------------------------------------------------
// (c) Debian clusters.

function debianClusters() {
  const lsclusters = which("pg_lsclusters");
  if (!lsclusters) return [];
  const r = spawnSync(lsclusters, ["--no-header"], { encoding: "utf8" });
  if (r.status !== 0) return [];
  return r.stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 4)
    .map(([version, cluster, port, status]) => ({ version, cluster, port: Number(port), status }));
}

async function tryStartDebianCluster(notes, log) {
  const down = debianClusters().filter((c) => c.cluster === "main" && c.status.startsWith("down"));
  // Prefer the cluster configured for 5432, newest version first.
  down.sort((a, b) => (a.port === 5432 ? 0 : 1) - (b.port === 5432 ? 0 : 1) || Number(b.version) - Number(a.version));
  const ctl = which("pg_ctlcluster");
  if (!ctl || down.length === 0) return false;
  for (const c of down) {
    log(`postgres: Debian cluster ${c.version}/main is down; starting it with pg_ctlcluster`);
    const r = spawnSync(ctl, ["--skip-systemctl-redirect", c.version, "main", "start"], { encoding: "utf8" });
    if (r.status !== 0) {
      notes.push(`pg_ctlcluster ${c.version} main start failed: ${(r.stderr || r.stdout || "").trim()}`);
      continue;
    }
    for (let i = 0; i < 10; i++) {
      if (await tryLocal([])) return true;
      await sleep(500);
    }
    const last = [];
    if (await tryLocal(last)) return true;
    notes.push(`started Debian cluster ${c.version}/main, but ${last.join("; ")}`);
  }
  return false;
}

// ---------------------------------------------------------------------------
// (d) Throwaway cluster.

/** Directory holding initdb + pg_ctl (+ postgres), or null. */
export function findPgBinDir({ libRoot = "/usr/lib/postgresql", usePath = true } = {}) {
  const complete = (dir) =>
    ["initdb", "pg_ctl", "postgres"].every((b) => {
      try {
        fs.accessSync(path.join(dir, b), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (usePath) {
    const initdb = which("initdb");
    if (initdb) {
      const dir = path.dirname(fs.realpathSync(initdb));
      if (complete(dir)) return dir;
    }
  }
  let versions = [];
  try {
    versions = fs.readdirSync(libRoot).filter((v) => /^\d+(\.\d+)?$/.test(v));
  } catch {
    // no such dir
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const dir = path.join(libRoot, v, "bin");
    if (complete(dir)) return dir;
  }
  return null;
}

function isRoot() {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/** As root, initdb refuses to run: pick a non-root OS user to own the cluster. */
function pickClusterUser() {
  for (const name of ["postgres", "nobody"]) {
    const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
    if (uid.status === 0 && gid.status === 0) {
      return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
    }
  }
  return null;
}

function shellQuote(s) {
  return `'${String(s).replace(/'/g, `'\\''`)}'`;
}

/** Command + args that run `argv` as `user` (or as ourselves when user is null). */
function asUser(user, argv) {
  if (!user) return argv;
  const runuser = which("runuser") ?? (fs.existsSync("/usr/sbin/runuser") ? "/usr/sbin/runuser" : null);
  if (runuser) return [runuser, "-u", user.name, "--", ...argv];
  return ["su", "-s", "/bin/sh", user.name, "-c", argv.map(shellQuote).join(" ")];
}

function run(argv, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], ...opts });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", (err) => resolve({ code: -1, out: out + String(err) }));
    child.on("close", (code) => resolve({ code, out }));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tail(file, lines = 20) {
  try {
    return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

async function startThrowaway(binDir, log) {
  const user = isRoot() ? pickClusterUser() : null;
  if (isRoot() && !user) {
    throw new Error(
      "Cannot start a throwaway Postgres: running as root, and initdb refuses root, but there is no " +
        "`postgres` or `nobody` OS user to run it as. Create one (useradd postgres) or set CAIRNQ_TEST_PG_DSN.",
    );
  }
  // The cluster's owner must be able to reach the dir: fall back to /tmp if TMPDIR is private.
  let base = os.tmpdir();
  if (user) {
    try {
      const st = fs.statSync(base);
      if (!(st.mode & 0o001)) base = "/tmp";
    } catch {
      base = "/tmp";
    }
  }
  const dir = fs.mkdtempSync(path.join(base, "cairnq-pg-"));
  const dataDir = path.join(dir, "data");
  const logFile = path.join(dir, "postgres.log");
  fs.chmodSync(dir, 0o700);
  if (user) fs.chownSync(dir, user.uid, user.gid);

  const pgCtl = path.join(binDir, "pg_ctl");
  const env = { ...process.env, LC_ALL: "C", LANG: "C" };
  delete env.PGDATA;
  delete env.PGPORT;
  delete env.PGHOST;
  const spawnOpts = { cwd: dir, env };
  let started = false;
  let stopped = false;

  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    if (started) {
      const [cmd, ...args] = asUser(user, [pgCtl, "-D", dataDir, "-m", "immediate", "-w", "-t", "30", "stop"]);
      spawnSync(cmd, args, { ...spawnOpts, stdio: "ignore" });
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  // Last resort if the process exits without calling stop() (uncaught error, process.exit).
  process.once("exit", stopSync);

  try {
    const init = await run(
      asUser(user, [
        path.join(binDir, "initdb"),
        "-D", dataDir,
        "-U", "postgres",
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
      ]),
      spawnOpts,
    );
    if (init.code !== 0) throw new Error(`initdb failed (exit ${init.code}):\n${init.out.trim()}`);

    let port;
    let lastErr = "";
    const pgStart = async () => {
      const pgOpts = [
        `-p ${port}`,
        `-k ${shellQuote(dir)}`,
        "-c listen_addresses=127.0.0.1",
        "-c fsync=off",
        "-c synchronous_commit=off",
        "-c full_page_writes=off",
        "-c max_connections=200",
      ].join(" ");
      return run(asUser(user, [pgCtl, "-D", dataDir, "-l", logFile, "-o", pgOpts, "-w", "-t", "60", "start"]), spawnOpts);
    };
    for (let attempt = 0; attempt < 3 && !started; attempt++) {
      port = await freePort();
      const r = await pgStart();
      if (r.code === 0) started = true;
      else lastErr = `${r.out.trim()}\n${tail(logFile)}`;
    }
    if (!started) throw new Error(`pg_ctl start failed:\n${lastErr}`);

    const admin = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const created = await runSql(admin, "create database test");
    if (!created.ok) throw new Error(`create database test failed: ${created.message}`);
    const dsn = `postgres://postgres@127.0.0.1:${port}/test`;
    const check = await select1(dsn);
    if (!check.ok) throw new Error(`throwaway cluster does not answer select 1: ${check.message}`);

    const stop = async () => {
      if (stopped) return;
      stopped = true;
      process.removeListener("exit", stopSync);
      const r = await run(asUser(user, [pgCtl, "-D", dataDir, "-m", "fast", "-w", "-t", "30", "stop"]), spawnOpts);
      if (r.code !== 0) {
        // Fast shutdown waits for clients; don't leave a server behind.
        await run(asUser(user, [pgCtl, "-D", dataDir, "-m", "immediate", "-w", "-t", "30", "stop"]), spawnOpts);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    };
    const version = path.basename(path.dirname(binDir));
    const owner = user ? ` as OS user ${user.name}` : "";
    log(`postgres: throwaway cluster (${binDir}${owner}) in ${dir}, ${dsn}`);
    // For restart tests: shut the server down (`fast` or `immediate`) and start it again on the same port and data.
    const shutdown = async (mode = "fast") => {
      if (!["smart", "fast", "immediate"].includes(mode)) throw new Error(`shutdown mode must be smart, fast or immediate, got ${mode}`);
      const r = await run(asUser(user, [pgCtl, "-D", dataDir, "-m", mode, "-w", "-t", "60", "stop"]), spawnOpts);
      if (r.code !== 0) throw new Error(`pg_ctl stop -m ${mode} failed (exit ${r.code}):\n${r.out.trim()}\n${tail(logFile)}`);
    };
    const start = async () => {
      const r = await pgStart();
      if (r.code !== 0) throw new Error(`pg_ctl start (restart on port ${port}) failed (exit ${r.code}):\n${r.out.trim()}\n${tail(logFile)}`);
    };
    return { dsn, port, stop, shutdown, start, source: "throwaway", dir, version, logFile };
  } catch (err) {
    stopSync();
    process.removeListener("exit", stopSync);
    throw err;
  }
}

/**
 * A throwaway cluster of its own for a test that must stop and restart its
 * server (never the shared one): initdb into a temp dir, start on a free
 * port, database `test`. Throws, saying what is missing, when initdb, pg_ctl
 * or postgres cannot be found (PATH, /usr/lib/postgresql/<v>/bin) — a
 * restart test never skips.
 *
 * @returns {Promise<{ dsn: string, port: number, stop: () => Promise<void>, shutdown: (mode?: "smart" | "fast" | "immediate") => Promise<void>, start: () => Promise<void>, dir: string, logFile: string }>}
 */
export async function startThrowawayCluster(opts = {}) {
  const log = opts.log ?? (() => {});
  const binDir = findPgBinDir({ libRoot: opts.libRoot, usePath: opts.usePath });
  if (!binDir) {
    throw new Error(
      "This test needs a Postgres cluster of its own to stop and restart, but initdb, pg_ctl and postgres were not " +
        "found on PATH or in /usr/lib/postgresql/*/bin. Install the PostgreSQL server binaries (Debian/Ubuntu: " +
        "apt-get install postgresql; macOS: brew install postgresql@16).",
    );
  }
  return startThrowaway(binDir, log);
}

// ---------------------------------------------------------------------------
// (e) apt-get install postgresql.

async function aptInstall(log) {
  log("postgres: no PostgreSQL server binaries found; installing Debian's postgresql with apt-get");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const argv of [["apt-get", "update"], ["apt-get", "install", "-y", "postgresql"]]) {
    const r = spawnSync(argv[0], argv.slice(1), { stdio: ["ignore", process.stderr, process.stderr], env });
    if (r.status !== 0) {
      return `\`${argv.join(" ")}\` failed (exit ${r.status ?? r.error?.message})`;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------

/**
 * @param {object} [opts]
 * @param {(line: string) => void} [opts.log]  where progress lines go (default: stdout)
 * @param {string} [opts.libRoot]  where Debian keeps versioned binaries (testing hook)
 * @param {boolean} [opts.usePath] look for initdb on PATH too (testing hook)
 * @param {string} [opts.localDsn] the "local server" DSN of step (b) (testing hook)
 * @param {boolean} [opts.privateDatabase] on the server of (b)/(c), use a database of this run's own
 * @returns {Promise<{ dsn: string, stop: () => Promise<void>, source: string }>}
 */
export async function ensurePostgres(opts = {}) {
  const found = await findPostgres(opts);
  if (!opts.privateDatabase || (found.source !== "local" && found.source !== "debian")) return found;
  const log = opts.log ?? ((line) => console.log(line));
  const name = `cairnq_run_${process.pid}`;
  const admin = found.dsn.replace(/\/[^/?]*(\?.*)?$/, "/postgres$1");
  // A run killed with SIGKILL leaves its database behind; a later run with the same pid replaces it.
  await runSql(admin, `drop database if exists ${name}`);
  const created = await runSql(admin, `create database ${name}`);
  if (!created.ok) throw new Error(`Could not create the run's own database ${name} on ${redactDsn(admin)}: ${created.message}`);
  const dsn = found.dsn.replace(/\/[^/?]*(\?.*)?$/, `/${name}$1`);
  log(`postgres: this run's own database: ${redactDsn(dsn)} (dropped at the end)`);
  const stop = async () => {
    const dropped = await runSql(admin, `drop database if exists ${name} with (force)`);
    if (!dropped.ok) log(`postgres: could not drop ${name}: ${dropped.message}`);
    await found.stop();
  };
  return { dsn, stop, source: `${found.source}, database ${name}` };
}

/**
 * A second database on the server of `dsn`, named after `dsn`'s database plus `_<suffix>` (a run
 * killed with SIGKILL leaves it behind; the next one replaces it), for a lane of `pnpm test` that runs
 * beside another: Postgres delivers NOTIFY per database, so two lanes in one database would wake
 * each other's workers. Returns its DSN and drop(); throws when the database cannot be created.
 * @param {string} dsn
 * @param {string} suffix
 * @returns {Promise<{ dsn: string, drop: () => Promise<void> }>}
 */
export async function createDatabaseBeside(dsn, suffix) {
  const base = decodeURIComponent(new URL(dsn).pathname.slice(1)) || "postgres";
  const name = `${base}_${suffix}`;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || name.length > 63) throw new Error(`cannot name a database "${name}" beside ${redactDsn(dsn)}`);
  const admin = dsn.replace(/\/[^/?]*(\?.*)?$/, "/postgres$1");
  await runSql(admin, `drop database if exists "${name}" with (force)`);
  const created = await runSql(admin, `create database "${name}"`);
  if (!created.ok) throw new Error(`could not create the database ${name} on ${redactDsn(admin)}: ${created.message}`);
  const url = new URL(dsn);
  url.pathname = `/${name}`;
  const drop = async () => {
    const dropped = await runSql(admin, `drop database if exists "${name}" with (force)`);
    if (!dropped.ok) throw new Error(`could not drop ${name}: ${dropped.message}`);
  };
  return { dsn: url.toString(), drop };
}

async function findPostgres(opts) {
  const log = opts.log ?? ((line) => console.log(line));
  if (opts.localDsn) LOCAL_DSN = opts.localDsn;
  const findOpts = { libRoot: opts.libRoot, usePath: opts.usePath };
  const noop = async () => {};
  const throwaway = /^(1|true|yes)$/i.test(process.env.CAIRNQ_TEST_PG_THROWAWAY ?? "");
  const notes = [];

  if (!throwaway) {
    // (a)
    const given = process.env.CAIRNQ_TEST_PG_DSN;
    if (given) {
      const r = await select1(given);
      if (!r.ok) {
        throw new Error(
          `CAIRNQ_TEST_PG_DSN is set to ${redactDsn(given)}, but that Postgres does not answer \`select 1\`: ` +
            `${r.message}\nFix CAIRNQ_TEST_PG_DSN, or unset it to let the test command use the server on ` +
            "127.0.0.1:5432 or start a throwaway one.",
        );
      }
      log(`postgres: using CAIRNQ_TEST_PG_DSN (${redactDsn(given)})`);
      return { dsn: given, stop: noop, source: "env" };
    }
    // (b)
    if (await tryLocal(notes)) {
      log(`postgres: using the local server at ${LOCAL_DSN}`);
      return { dsn: LOCAL_DSN, stop: noop, source: "local" };
    }
    // (c)
    if (await tryStartDebianCluster(notes, log)) {
      log(`postgres: using the local server at ${LOCAL_DSN} (Debian cluster started by the test command; left running)`);
      return { dsn: LOCAL_DSN, stop: noop, source: "debian" };
    }
  } else {
    log("postgres: CAIRNQ_TEST_PG_THROWAWAY is set; skipping CAIRNQ_TEST_PG_DSN and the local server");
  }

  // (d)
  let binDir = findPgBinDir(findOpts);
  if (!binDir) {
    // (e)
    if (isRoot() && which("apt-get")) {
      const failed = await aptInstall(log);
      if (failed) notes.push(failed);
      else {
        if (!throwaway) {
          if (await tryLocal(notes)) {
            log(`postgres: using the local server at ${LOCAL_DSN} (installed by the test command)`);
            return { dsn: LOCAL_DSN, stop: noop, source: "local" };
          }
          if (await tryStartDebianCluster(notes, log)) {
            log(`postgres: using the local server at ${LOCAL_DSN} (installed and started by the test command)`);
            return { dsn: LOCAL_DSN, stop: noop, source: "debian" };
          }
        }
        binDir = findPgBinDir(findOpts);
        if (!binDir) notes.push("apt-get install postgresql succeeded, but initdb/pg_ctl are still not found");
      }
    } else if (isRoot()) {
      notes.push("apt-get is not available to install PostgreSQL");
    } else {
      notes.push("not running as root, so PostgreSQL was not installed automatically");
    }
  }
  if (binDir) {
    for (const n of notes) log(`postgres: not usable: ${n}`);
    return startThrowaway(binDir, log);
  }

  // (f)
  throw new Error(
    [
      "No PostgreSQL available for the tests (Postgres tests never skip).",
      throwaway
        ? "CAIRNQ_TEST_PG_THROWAWAY is set, so only a throwaway cluster was tried,"
        : "CAIRNQ_TEST_PG_DSN is not set, nothing usable answers on 127.0.0.1:5432, no stopped Debian cluster could be started,",
      "and no PostgreSQL server binaries (initdb, pg_ctl, postgres) were found on PATH or in /usr/lib/postgresql/*/bin.",
      ...[...new Set(notes)].map((n) => `  - ${n}`),
      "Fix it one of these ways:",
      "  - set CAIRNQ_TEST_PG_DSN=postgres://USER:PASSWORD@HOST:PORT/DB to a database the tests may write to, or",
      "  - install PostgreSQL so initdb and pg_ctl exist (Debian/Ubuntu: sudo apt-get install postgresql;",
      "    macOS: brew install postgresql@16), and the test command starts a throwaway cluster itself.",
    ].join("\n"),
  );
}
