/** Dashboards served on 127.0.0.1 for the HTTP tests, and their teardown after each test. */
import type { Server } from "node:http";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import type { DashboardHandler, DashboardOptions } from "@cairnq/dashboard";
import { createDashboard } from "@cairnq/dashboard";

const served: { server: Server; dashboard: DashboardHandler }[] = [];

/** Serves `createDashboard(options)` on an ephemeral port; returns its base URL. */
export async function serveDashboard(options: DashboardOptions): Promise<string> {
  const dashboard = createDashboard(options);
  const server = createServer((req, res) => dashboard(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  served.push({ server, dashboard });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes every dashboard served so far (its live streams first, so the server can close). */
export async function closeDashboards(): Promise<void> {
  for (const { server, dashboard } of served.splice(0)) {
    await dashboard.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A request with its target sent exactly as given (a URL string would be normalized first). */
export function callRaw(base: string, target: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path: target }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once("error", reject);
    req.end();
  });
}
