// Provides a MariaDB/MySQL database for the test suite (see docs/testing.md).
//
//   const { dsn, stop, source } = await ensureMySQL();
//
// Order tried:
//   (a) CAIRNQ_TEST_MYSQL_DSN, if set: its server must answer, or this throws.
//   (b) a server on 127.0.0.1:3306, user root, no password.
//   (c) that server is down: `service mariadb start`, then
//       `start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd`,
//       and wait up to 60 s for it to answer; then (b) again.
//   (d) otherwise: throw an Error that says what is missing and how to fix it.
//
// The run gets a database of its own, cairnq_run_<pid>, and CAIRNQ_TEST_MYSQL_DSN names
// it; suites make their own databases beside it (cairnq_run_<pid>_<case>). stop() drops
// them all. MySQL tests never silently skip: failing to get a database is an error.

import { spawnSync } from "node:child_process";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LOCAL_DSN = "mysql://root@127.0.0.1:3306/test";
const START_WAIT_MS = 60_000;

function loadMysql2() {
  return createRequire(path.join(ROOT, "packages/store-mysql/package.json"))("mysql2/promise");
}

/** Connects to `dsn` (any database) and runs `fn(connection)`; rejects when the server does not answer. */
async function withServer(dsn, fn) {
  const mysql = loadMysql2();
  const url = new URL(dsn);
  url.pathname = "/";
  const conn = await mysql.createConnection({ uri: url.toString(), connectTimeout: 5_000 });
  try {
    return await fn(conn);
  } finally {
    await conn.end();
  }
}

async function answers(dsn) {
  try {
    await withServer(dsn, (c) => c.query("SELECT 1"));
    return null;
  } catch (err) {
    return err;
  }
}

function tryStart(log) {
  const attempts = [
    ["service", ["mariadb", "start"]],
    ["start-stop-daemon", ["--start", "--oknodo", "--background", "--exec", "/usr/sbin/mariadbd", "--", "--user=mysql"]],
  ];
  const tried = [];
  for (const [cmd, args] of attempts) {
    const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 60_000 });
    tried.push(`${cmd} ${args.join(" ")}: ${r.error ? r.error.message : `exit ${r.status}${r.stderr ? ` (${r.stderr.trim().split("\n").at(-1)})` : ""}`}`);
    log(`mysql-env: ${tried.at(-1)}`);
    if (!r.error && r.status === 0) return tried;
  }
  return tried;
}

/**
 * A MySQL/MariaDB database for this run; see the file's opening block for the order tried.
 * @param {{ log?: (line: string) => void }} [opts]
 * @returns {Promise<{ dsn: string, stop: () => Promise<void>, source: string, beside: (suffix: string) => Promise<string> }>}
 */
export async function ensureMySQL(opts = {}) {
  const log = opts.log ?? (() => {});
  const given = process.env.CAIRNQ_TEST_MYSQL_DSN;
  const base = given !== undefined && given !== "" ? given : LOCAL_DSN;
  let source = given ? "CAIRNQ_TEST_MYSQL_DSN" : "127.0.0.1:3306";
  let err = await answers(base);
  if (err !== null && given) {
    throw new Error(`CAIRNQ_TEST_MYSQL_DSN (${base}) does not answer: ${err.message}. Fix it or unset it to use a local MariaDB.`);
  }
  if (err !== null) {
    const tried = tryStart(log);
    const deadline = Date.now() + START_WAIT_MS;
    while (err !== null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      err = await answers(base);
    }
    if (err !== null) {
      throw new Error(
        `no MariaDB/MySQL answers on 127.0.0.1:3306 as root without a password (${err.message}), and starting one failed:\n` +
          `${tried.map((t) => `  ${t}`).join("\n")}\n` +
          `Install MariaDB 10.6+ (apt-get install mariadb-server) or set CAIRNQ_TEST_MYSQL_DSN=mysql://user:pass@host:3306/db.`,
      );
    }
    source = "127.0.0.1:3306 (started)";
  }
  const name = `cairnq_run_${process.pid}`;
  await withServer(base, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await c.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  });
  const url = new URL(base);
  url.pathname = `/${name}`;
  const stop = () =>
    withServer(base, async (c) => {
      const [rows] = await c.query("SELECT schema_name AS name FROM information_schema.schemata WHERE schema_name = ? OR schema_name LIKE ?", [name, `${name}\\_%`]);
      for (const row of rows) await c.query(`DROP DATABASE IF EXISTS \`${row.name}\``);
    });
  // A database for a second lane of `pnpm test` (its tests make per-case databases beside it as the
  // first lane's do, under a name of its own); stop() drops it with the rest (its name starts with `name_`).
  const beside = async (suffix) => {
    const other = `${name}_${suffix}`;
    if (!/^[A-Za-z0-9_]+$/.test(other)) throw new Error(`cannot name a database "${other}"`);
    await withServer(base, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS \`${other}\``);
      await c.query(`CREATE DATABASE \`${other}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    });
    const at = new URL(base);
    at.pathname = `/${other}`;
    return at.toString();
  };
  return { dsn: url.toString(), stop, source, beside };
}
