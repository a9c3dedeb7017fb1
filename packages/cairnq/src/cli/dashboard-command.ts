/**
 * `cairnq dashboard`: the `@cairnq/dashboard` handler on a plain Node HTTP
 * server, until SIGINT/SIGTERM.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { CairnQ } from "@cairnq/client";
import type { DashboardHandler } from "@cairnq/dashboard";
import { createDashboard } from "@cairnq/dashboard";
import type { CliIo } from "./output.js";
import { paint } from "./output.js";
import { OperationFailed } from "./usage-error.js";

/** Host names every loopback dashboard answers besides the one it listens on. */
const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

/**
 * `host` as a browser's Host header spells it (WHATWG URL host parsing:
 * `127.1` → `127.0.0.1`, `::ffff:127.0.0.1` → `[::ffff:7f00:1]`, lower
 * case), or `null` when it is no host at all.
 */
function canonicalHost(host: string): string | null {
  try {
    return new URL(`http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}/`).hostname;
  } catch {
    return null;
  }
}

/**
 * Whether `host` is this machine's loopback interface in any spelling:
 * `localhost`, all of 127.0.0.0/8 (`127.0.0.2`, `127.1`), `::1`, and
 * IPv4-mapped `::ffff:127.x.y.z` — each of them needs the DNS-rebinding guard.
 *
 * @example
 * ```ts
 * isLoopbackHost("127.1"); // true
 * isLoopbackHost("0.0.0.0"); // false
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  const name = canonicalHost(host);
  if (name === null) return false;
  return name === "localhost" || name === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(name) || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(name);
}

/**
 * The `Host` header values a dashboard listening on `host` (bound to
 * `address`, port `port`) answers. On loopback: that host as given and as a
 * browser spells it, the bound address, and 127.0.0.1, localhost and [::1],
 * each with `:port` — and without it on port 80, where browsers leave the
 * default port out. Besides those, each of `allowed` (`--allowed-host`) as
 * given and, when it has no port of its own, with `:port` (a proxy in front
 * may send it either way). Off
 * loopback without `allowed`: `undefined`, any host.
 *
 * @example
 * ```ts
 * dashboardAllowedHosts("127.0.0.1", "127.0.0.1", 80); // [..., "127.0.0.1:80", "127.0.0.1", ...]
 * dashboardAllowedHosts("0.0.0.0", "0.0.0.0", 4000, ["queue.internal"]); // ["queue.internal", "queue.internal:4000"]
 * ```
 */
export function dashboardAllowedHosts(host: string, address: string, port: number, allowed: readonly string[] = []): string[] | undefined {
  const loopback = isLoopbackHost(host) || isLoopbackHost(address);
  if (!loopback && allowed.length === 0) return undefined;
  const answered = new Set<string>();
  for (const name of allowed) {
    const spelled = name.toLowerCase();
    answered.add(spelled);
    // A name given with its port (`name:443`, `[::1]:8080`) is answered only as given.
    if (!/(?:^[^:]*|\]):\d+$/.test(spelled)) answered.add(`${spelled}:${port}`);
  }
  if (!loopback) return [...answered];
  const names = new Set<string>();
  for (const spelled of [host, address]) {
    names.add((spelled.includes(":") && !spelled.startsWith("[") ? `[${spelled}]` : spelled).toLowerCase());
    const canonical = canonicalHost(spelled);
    if (canonical !== null) names.add(canonical);
  }
  for (const name of LOOPBACK_NAMES) names.add(name);
  for (const name of names) for (const value of port === 80 ? [`${name}:${port}`, name] : [`${name}:${port}`]) answered.add(value);
  return [...answered];
}

/** What `cairnq dashboard` prints (to stderr) when it answers any `Host` header: off loopback without `--allowed-host`. */
export function unguardedWarning(host: string): string {
  return `warning: listening on ${host}, the dashboard answers any Host header, so any web page opened in a browser that can reach it could drive it through DNS rebinding; pass --allowed-host <name> for each name it is reached by`;
}

/** `listen` error codes an other `--port` fixes: the port is taken, or needs privileges (below 1024). */
const PORT_CODES = new Set(["EADDRINUSE", "EACCES"]);
/** `listen` error codes an other `--host` fixes: the name does not resolve, or the address is not this machine's. */
const HOST_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EADDRNOTAVAIL"]);

/**
 * What `cairnq dashboard` says when it cannot listen on `host:port`: the
 * cause, and the option to change for it — `--port` for a taken or
 * privileged port, `--host` for a name that does not resolve or an address
 * that is not this machine's.
 *
 * @example
 * ```ts
 * listenFailure("999.1.1.1", 4000, err).message; // "cannot listen on 999.1.1.1:4000: getaddrinfo ENOTFOUND 999.1.1.1; check --host: …"
 * ```
 */
export function listenFailure(host: string, port: number, err: unknown): OperationFailed {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  const hint = PORT_CODES.has(String(code))
    ? "pick another --port"
    : HOST_CODES.has(String(code))
      ? "check --host: it must be an address of this machine, or a name that resolves to one (127.0.0.1 by default)"
      : "check --host and --port";
  return new OperationFailed(`cannot listen on ${host}:${port}: ${err instanceof Error ? err.message : String(err)}; ${hint}`, "listen_failed");
}

/** Serves the dashboard for `client` and resolves once a signal stopped it and the database is closed. */
export async function serveDashboard(
  client: CairnQ,
  io: CliIo,
  options: { port: number; host: string; readOnly: boolean; description: string; allowedHosts?: readonly string[] },
): Promise<void> {
  try {
    await client.connect();
  } catch (err) {
    await client.close();
    throw err;
  }
  let dashboard: DashboardHandler | null = null;
  const server = createServer((req, res) => {
    if (dashboard !== null) return dashboard(req, res);
    res.writeHead(503).end();
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (err) {
    await client.close();
    throw listenFailure(options.host, options.port, err);
  }
  const { port, address } = server.address() as AddressInfo;
  // On a loopback address, answer only loopback host names (and --allowed-host): a web page cannot
  // reach the dashboard through DNS rebinding (its Host header would differ).
  const allowedHosts = dashboardAllowedHosts(options.host, address, port, options.allowedHosts);
  if (allowedHosts === undefined) io.err(`${unguardedWarning(options.host)}\n`);
  dashboard = createDashboard({ client, readOnly: options.readOnly, ...(allowedHosts === undefined ? {} : { allowedHosts }) });
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  io.out(
    `${paint("CairnQ dashboard", "bold", io.color)} on http://${host}:${port}/ — ${options.description}${options.readOnly ? " (read-only)" : ""}; Ctrl-C stops it\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      server.close(() => resolve());
      server.closeAllConnections();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await dashboard.close();
  await client.close();
  io.out("dashboard stopped\n");
}
