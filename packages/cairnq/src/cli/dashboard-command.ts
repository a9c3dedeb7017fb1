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

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

/** Serves the dashboard for `client` and resolves once a signal stopped it and the database is closed. */
export async function serveDashboard(
  client: CairnQ,
  io: CliIo,
  options: { port: number; host: string; readOnly: boolean; description: string },
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
    throw new OperationFailed(`cannot listen on ${options.host}:${options.port}: ${err instanceof Error ? err.message : String(err)}; pick another --port`, "listen_failed");
  }
  const { port } = server.address() as AddressInfo;
  // On a loopback address, answer only loopback host names: a web page cannot
  // reach the dashboard through DNS rebinding (its Host header would differ).
  const loopback = LOOPBACK.has(options.host);
  dashboard = createDashboard({
    client,
    readOnly: options.readOnly,
    ...(loopback ? { allowedHosts: [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`] } : {}),
  });
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
