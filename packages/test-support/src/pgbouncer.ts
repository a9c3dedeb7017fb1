/**
 * A throwaway PgBouncer in front of the test database, for the tests that
 * prove CairnQ runs behind a transaction-mode pooler. Tests that need one
 * never skip: without a `pgbouncer` binary (and no way to install one) they
 * fail saying what to do.
 *
 * Where the binary comes from, in order: `CAIRNQ_TEST_PGBOUNCER` (a path;
 * the root `pnpm test` can set it), `pgbouncer` on the PATH or in
 * `/usr/sbin`, else — running as root with apt-get — Debian's `pgbouncer`
 * package is installed (1.18 on Debian 12: no prepared statements in
 * transaction mode). PgBouncer refuses to run as root, so as root it is
 * started with `-u postgres` (or `nobody`).
 */
import { spawn, spawnSync } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { redactConnectionString } from "@cairnq/store-kysely";
import { pgDsn } from "./postgres.js";

/** The environment variable naming the `pgbouncer` binary to use. */
export const PGBOUNCER_VARIABLE = "CAIRNQ_TEST_PGBOUNCER";

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(command: string): string | null {
  for (const dir of [...(process.env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/usr/local/sbin"]) {
    if (dir !== "" && executable(path.join(dir, command))) return path.join(dir, command);
  }
  return null;
}

/**
 * The `pgbouncer` binary: {@link PGBOUNCER_VARIABLE}, the PATH, or Debian's
 * package installed on the spot when running as root. Throws, saying how to
 * get one, when none can be had.
 */
export function findPgBouncer(): string {
  const given = process.env[PGBOUNCER_VARIABLE];
  if (given !== undefined && given.trim() !== "") {
    if (executable(given)) return given;
    throw new Error(`${PGBOUNCER_VARIABLE}=${given} is not an executable file; point it at a pgbouncer binary, or unset it`);
  }
  const found = onPath("pgbouncer");
  if (found !== null) return found;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (root && onPath("apt-get") !== null) {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    let install = spawnSync("apt-get", ["install", "-y", "-q", "pgbouncer"], { encoding: "utf8", env, timeout: 300_000 });
    if (install.status !== 0) {
      // A fresh machine has no package lists yet.
      spawnSync("apt-get", ["update", "-q"], { encoding: "utf8", env, timeout: 300_000 });
      install = spawnSync("apt-get", ["install", "-y", "-q", "pgbouncer"], { encoding: "utf8", env, timeout: 300_000 });
    }
    const installed = onPath("pgbouncer");
    if (installed !== null) return installed;
    throw new Error(`the PgBouncer tests need pgbouncer; \`apt-get install -y pgbouncer\` failed: ${(install.stderr || install.stdout || "").trim().slice(-800)}`);
  }
  throw new Error(
    "the PgBouncer tests need a pgbouncer binary and none was found (they never skip): install it (Debian/Ubuntu: `apt-get install -y pgbouncer`, " +
      `macOS: \`brew install pgbouncer\`) or set ${PGBOUNCER_VARIABLE}=/path/to/pgbouncer`,
  );
}

/** Options of {@link startPgBouncer}. */
export interface PgBouncerOptions {
  /** The server PgBouncer forwards to. @default the test database ({@link pgDsn}) */
  upstream?: string;
  /** @default "transaction" */
  poolMode?: "transaction" | "session";
  /** Server connections per database and user (`default_pool_size`): what the server sees, whatever the clients. @default 10 */
  poolSize?: number;
  /** @default 1000 */
  maxClientConn?: number;
}

/** A running PgBouncer. */
export interface PgBouncer {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** `options.poolSize`. */
  readonly poolSize: number;
  /** The upstream DSN with host and port replaced by PgBouncer's: the same database, through the pooler. */
  readonly dsn: string;
  /** The same, for another database name (PgBouncer forwards any). */
  dsnFor(database: string): string;
  /** Everything it logged (stderr), for failure messages and for checking what it refused. */
  log(): string;
  /** Stops it (SIGTERM, then SIGKILL) and removes its config. Idempotent. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** PgBouncer refuses root: the account to switch to, when we are root. */
function runAs(): string[] {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return [];
  for (const user of ["postgres", "nobody"]) {
    if (spawnSync("id", ["-u", user]).status === 0) return ["-u", user];
  }
  throw new Error("running as root, and PgBouncer refuses root, but neither a `postgres` nor a `nobody` account exists to run it as");
}

/**
 * Starts PgBouncer on a free 127.0.0.1 port in front of `upstream`: every
 * database name maps to the same-named database upstream, every client logs
 * in as the upstream's user (`auth_type = any`), `default_pool_size` server
 * connections per database. Resolves once a `select 1` goes through it.
 *
 * @example
 * ```ts
 * const bouncer = await startPgBouncer({ poolSize: 8 });
 * const store = new PostgresStore(bouncer.dsn, { preparedStatements: false, listen: pgDsn() });
 * // …
 * await bouncer.stop();
 * ```
 */
export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const binary = findPgBouncer();
  const upstream = new URL(options.upstream ?? pgDsn());
  const poolSize = options.poolSize ?? 10;
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-pgbouncer-"));
  fs.chmodSync(dir, 0o755);
  const host = upstream.hostname === "localhost" ? "127.0.0.1" : upstream.hostname;
  const user = decodeURIComponent(upstream.username || "postgres");
  const password = decodeURIComponent(upstream.password);
  const ini = [
    "[databases]",
    `* = host=${host} port=${upstream.port || "5432"} user=${user}${password === "" ? "" : ` password=${password}`}`,
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${port}`,
    "unix_socket_dir =",
    "auth_type = any",
    `pool_mode = ${options.poolMode ?? "transaction"}`,
    `default_pool_size = ${poolSize}`,
    "min_pool_size = 0",
    "reserve_pool_size = 0",
    `max_client_conn = ${options.maxClientConn ?? 1000}`,
    "server_reset_query =",
    "log_connections = 0",
    "log_disconnections = 0",
    "",
  ].join("\n");
  const config = path.join(dir, "pgbouncer.ini");
  fs.writeFileSync(config, ini, { mode: 0o644 });
  const child: ChildProcessWithoutNullStreams = spawn(binary, [...runAs(), config], { stdio: ["pipe", "pipe", "pipe"] });
  let text = "";
  child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const dsnFor = (database: string): string => {
    const url = new URL(upstream.toString());
    url.hostname = "127.0.0.1";
    url.port = String(port);
    url.pathname = `/${database}`;
    return url.toString();
  };
  const dsn = dsnFor(decodeURIComponent(upstream.pathname.slice(1)) || "postgres");
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`pgbouncer (${binary}) exited at start (${child.exitCode ?? child.signalCode}): ${text.trim().slice(-800)}`);
    }
    const client = new pg.Client({ connectionString: dsn, connectionTimeoutMillis: 2_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("select 1");
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`pgbouncer on port ${port} did not pass a query to ${redactConnectionString(upstream.toString())} within 15 s: ${String(error)}; its log: ${text.trim().slice(-800)}`, {
          cause: error,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { port, poolSize, dsn, dsnFor, log: () => text, stop };
}
