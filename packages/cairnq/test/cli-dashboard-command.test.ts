/**
 * `cairnq dashboard`'s DNS-rebinding guard: which listen hosts count as
 * loopback, and which Host headers a loopback dashboard answers — checked on
 * a real dashboard, since the router compares them as sent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DashboardHandler } from "@cairnq/dashboard";
import { createDashboard } from "@cairnq/dashboard";
import { CairnQ } from "@cairnq/client";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowedHostValue } from "../src/cli/allowed-host.js";
import { dashboardAllowedHosts, isLoopbackHost, listenFailure, serveDashboard, unguardedWarning } from "../src/cli/dashboard-command.js";

describe("isLoopbackHost", () => {
  it("counts every spelling of the loopback interface", () => {
    for (const host of ["127.0.0.1", "127.0.0.2", "127.255.255.254", "127.1", "localhost", "LOCALHOST", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::ffff:127.9.8.7", "[::ffff:7f00:1]"]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
  });

  it("does not count other addresses, wildcard binds or names", () => {
    for (const host of ["0.0.0.0", "::", "128.0.0.1", "10.0.0.1", "::ffff:10.0.0.1", "::2", "example.com", "127.0.0.1.example.com", "", "[bad"]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe("dashboardAllowedHosts", () => {
  it("answers the host as given and as a browser spells it, and the usual loopback names, with the port", () => {
    expect(dashboardAllowedHosts("127.0.0.1", "127.0.0.1", 4000)).toEqual(["127.0.0.1:4000", "localhost:4000", "[::1]:4000"]);
    expect(dashboardAllowedHosts("127.0.0.2", "127.0.0.2", 4000)).toContain("127.0.0.2:4000");
    expect(dashboardAllowedHosts("127.1", "127.0.0.1", 4000)).toEqual(["127.1:4000", "127.0.0.1:4000", "localhost:4000", "[::1]:4000"]);
    expect(dashboardAllowedHosts("::ffff:127.0.0.1", "::ffff:127.0.0.1", 4000)).toEqual(["[::ffff:127.0.0.1]:4000", "[::ffff:7f00:1]:4000", "127.0.0.1:4000", "localhost:4000", "[::1]:4000"]);
    // A name the system resolves to a loopback address (Debian's 127.0.1.1 for the machine's name).
    expect(dashboardAllowedHosts("myhost", "127.0.1.1", 4000)).toEqual(["myhost:4000", "127.0.1.1:4000", "127.0.0.1:4000", "localhost:4000", "[::1]:4000"]);
  });

  it("answers the port-less Host browsers send on port 80", () => {
    expect(dashboardAllowedHosts("127.0.0.1", "127.0.0.1", 80)).toEqual(["127.0.0.1:80", "127.0.0.1", "localhost:80", "localhost", "[::1]:80", "[::1]"]);
  });

  it("guards nothing off loopback without --allowed-host", () => {
    expect(dashboardAllowedHosts("0.0.0.0", "0.0.0.0", 4000)).toBeUndefined();
    expect(dashboardAllowedHosts("10.0.0.5", "10.0.0.5", 80)).toBeUndefined();
    expect(unguardedWarning("0.0.0.0")).toMatch(/^warning: listening on 0\.0\.0\.0, the dashboard answers any Host header, .* DNS rebinding; pass --allowed-host <name>/);
  });

  it("answers each --allowed-host as given and with the port, beside the loopback names on loopback", () => {
    expect(dashboardAllowedHosts("0.0.0.0", "0.0.0.0", 4000, ["queue.internal", "10.0.0.5:443"])).toEqual(["queue.internal", "queue.internal:4000", "10.0.0.5:443"]);
    expect(dashboardAllowedHosts("0.0.0.0", "0.0.0.0", 4000, ["[::1]:8080", "[fd00::5]"])).toEqual(["[::1]:8080", "[fd00::5]", "[fd00::5]:4000"]);
    expect(dashboardAllowedHosts("127.0.0.1", "127.0.0.1", 4000, ["queue.internal"])).toEqual(["queue.internal", "queue.internal:4000", "127.0.0.1:4000", "localhost:4000", "[::1]:4000"]);
  });
});

describe("allowedHostValue", () => {
  it("takes a host as a browser's Host header spells it, with an optional port", () => {
    expect(allowedHostValue("Queue.Internal")).toBe("queue.internal");
    expect(allowedHostValue("queue.internal:4000")).toBe("queue.internal:4000");
    expect(allowedHostValue("queue.internal:80")).toBe("queue.internal:80");
    expect(allowedHostValue("127.1")).toBe("127.0.0.1");
    expect(allowedHostValue("[::1]:4000")).toBe("[::1]:4000");
  });

  it("refuses what is not a host", () => {
    for (const value of ["", "http://queue.internal/", "queue.internal/admin", "user@queue.internal", "queue internal", "queue.internal:99999", "[bad", "a\\b"]) {
      expect(allowedHostValue(value), value).toBeNull();
    }
  });
});

describe("a loopback dashboard's Host check", () => {
  let dir: string;
  let store: SQLiteStore;
  let server: Server;
  let dashboards: DashboardHandler[];
  let current: DashboardHandler | null = null;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-cli-dashboard-"));
    store = new SQLiteStore(join(dir, "cairnq.db"));
    dashboards = [];
    server = createServer((req, res) => current?.(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const dashboard of dashboards) await dashboard.close();
    await new Promise((resolve) => server.close(resolve));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The status of GET /api/overview with this Host header, from a dashboard guarded as `cairnq dashboard --host <host> --port <listenPort> [--allowed-host …]` would guard it. */
  function statusFor(host: string, listenHost: string, address: string, listenPort: number, allowed: readonly string[] = []): Promise<number> {
    const allowedHosts = dashboardAllowedHosts(listenHost, address, listenPort, allowed);
    current = createDashboard({ store, ...(allowedHosts === undefined ? {} : { allowedHosts }) });
    dashboards.push(current);
    return new Promise((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path: "/api/overview", headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.once("error", reject);
      req.end();
    });
  }

  it("answers a browser's port-less Host on --port 80, and refuses a rebound name there", async () => {
    expect(await statusFor("127.0.0.1", "127.0.0.1", "127.0.0.1", 80)).toBe(200);
    expect(await statusFor("localhost", "127.0.0.1", "127.0.0.1", 80)).toBe(200);
    expect(await statusFor("attacker.example", "127.0.0.1", "127.0.0.1", 80)).toBe(421);
  });

  it("off loopback answers only the --allowed-host names, with or without the port", async () => {
    const statusWith = (host: string): Promise<number> => statusFor(host, "0.0.0.0", "0.0.0.0", 4000, ["queue.internal"]);
    expect(await statusWith("queue.internal")).toBe(200);
    expect(await statusWith("queue.internal:4000")).toBe(200);
    expect(await statusWith("attacker.example:4000")).toBe(421);
    expect(await statusFor("attacker.example:4000", "0.0.0.0", "0.0.0.0", 4000)).toBe(200);
  });

  it("guards every loopback listen address against a rebound name", async () => {
    for (const [host, address] of [["127.0.0.2", "127.0.0.2"], ["127.1", "127.0.0.1"], ["::ffff:127.0.0.1", "::ffff:127.0.0.1"]] as const) {
      expect(await statusFor("attacker.example:4000", host, address, 4000), host).toBe(421);
      expect(await statusFor("localhost:4000", host, address, 4000), host).toBe(200);
    }
    expect(await statusFor("127.0.0.2:4000", "127.0.0.2", "127.0.0.2", 4000)).toBe(200);
  });
});

describe("cairnq dashboard that cannot listen", () => {
  const io = { out: (): void => {}, err: (): void => {}, color: false, tty: false, env: {}, now: () => Date.now() };

  async function failure(host: string, port: number): Promise<Error> {
    const dir = mkdtempSync(join(tmpdir(), "cairnq-dash-listen-"));
    try {
      const err = await serveDashboard(new CairnQ(new SQLiteStore(join(dir, "q.db"))), io, { port, host, readOnly: true, description: "test" }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      return err as Error;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("says to pick another --port when the port is taken", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      expect((await failure("127.0.0.1", port)).message).toMatch(new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE.*; pick another --port$`));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("says to check --host when the address is not this machine's", async () => {
    // 192.0.2.1 (TEST-NET-1, RFC 5737) is no machine's address: binding it fails at once, without DNS.
    const message = (await failure("192.0.2.1", 0)).message;
    expect(message).toMatch(/EADDRNOTAVAIL.*; check --host: /);
    expect(message).not.toContain("--port");
  });

  it("names the option that fits each cause", () => {
    const withCode = (code: string): Error => Object.assign(new Error(`listen ${code}`), { code });
    expect(listenFailure("999.1.1.1", 0, withCode("ENOTFOUND")).message).toBe(
      "cannot listen on 999.1.1.1:0: listen ENOTFOUND; check --host: it must be an address of this machine, or a name that resolves to one (127.0.0.1 by default)",
    );
    expect(listenFailure("127.0.0.1", 80, withCode("EACCES")).message).toMatch(/; pick another --port$/);
    expect(listenFailure("127.0.0.1", 80, withCode("EMFILE")).message).toMatch(/; check --host and --port$/);
    expect(listenFailure("127.0.0.1", 80, withCode("EMFILE")).code).toBe("listen_failed");
  });
});
