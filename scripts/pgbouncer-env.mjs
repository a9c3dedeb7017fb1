// Provides a `pgbouncer` binary for the tests that run CairnQ behind a
// transaction-mode pooler (they never skip; see packages/test-support/src/pgbouncer.ts,
// which starts and stops the PgBouncer processes themselves).
//
//   const { binary, source } = ensurePgBouncer();
//   process.env.CAIRNQ_TEST_PGBOUNCER = binary;
//
// Order tried: CAIRNQ_TEST_PGBOUNCER if set (must be executable); `pgbouncer`
// on the PATH or in /usr/sbin; as root with apt-get, Debian's package
// (`apt-get install -y pgbouncer`, after `apt-get update` if the first try
// fails); otherwise it throws, saying what to install.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

function executable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(command) {
  for (const dir of [...(process.env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/usr/local/sbin"]) {
    if (dir && executable(path.join(dir, command))) return path.join(dir, command);
  }
  return null;
}

/** Returns `{ binary, source }` or throws an Error that says how to get PgBouncer. */
export function ensurePgBouncer({ log = (line) => console.error(line) } = {}) {
  const given = process.env.CAIRNQ_TEST_PGBOUNCER;
  if (given) {
    if (executable(given)) return { binary: given, source: "CAIRNQ_TEST_PGBOUNCER" };
    throw new Error(`CAIRNQ_TEST_PGBOUNCER=${given} is not an executable file`);
  }
  const found = onPath("pgbouncer");
  if (found) return { binary: found, source: "PATH" };
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (!root || !onPath("apt-get")) {
    throw new Error(
      "no pgbouncer binary, and this is not root with apt-get to install one: install it (Debian/Ubuntu: `apt-get install -y pgbouncer`) " +
        "or set CAIRNQ_TEST_PGBOUNCER=/path/to/pgbouncer",
    );
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  log("pgbouncer: not installed; apt-get install -y pgbouncer");
  let r = spawnSync("apt-get", ["install", "-y", "-q", "pgbouncer"], { encoding: "utf8", env });
  if (r.status !== 0) {
    spawnSync("apt-get", ["update", "-q"], { encoding: "utf8", env });
    r = spawnSync("apt-get", ["install", "-y", "-q", "pgbouncer"], { encoding: "utf8", env });
  }
  const installed = onPath("pgbouncer");
  if (installed) return { binary: installed, source: "apt-get" };
  throw new Error(`apt-get install -y pgbouncer failed: ${(r.stderr || r.stdout || "").trim().slice(-800)}`);
}
