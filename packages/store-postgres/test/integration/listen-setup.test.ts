/**
 * Opening the LISTEN connection is bounded and never silent: a connection
 * that stalls once LISTEN is sent (the path goes dark after the startup), a
 * connector's client that was never connected, a connector that never
 * answers — each leaves `connecting` for `retrying` within its bound, is
 * reported (`onError`, and once through the logger), and the store polls
 * and retries; `close()` resolves promptly in every state. A LISTEN that
 * cannot connect at all (a wrong port) is said once, on stderr by default;
 * a connector that resolves to something other than a client gets a clear
 * error, once.
 *
 * Bounds here are generous (a loaded 2-core machine): the tests assert the
 * states reached and their order, not tight times.
 */
import net from "node:net";
import { InvalidArgument } from "@cairnq/protocol";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ListenConnector } from "../../src/index.js";
import { openStore, pgDsn, until } from "../helpers.js";

/**
 * A TCP proxy to the server that passes the connection startup, then — while `stalling` — drops every byte both
 * ways once the client sends a `LISTEN` (no FIN, no RST: the path just goes dark). Connections opened after
 * `heal()` pass everything.
 */
class ListenStallProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  stalling = true;
  /** How many connections went dark on their LISTEN. */
  stalled = 0;

  constructor() {
    const url = new URL(pgDsn());
    this.#server = net.createServer((client) => {
      const upstream = net.connect(Number(url.port || 5432), url.hostname === "localhost" ? "127.0.0.1" : url.hostname);
      this.#sockets.add(client).add(upstream);
      const stalls = this.stalling;
      let dark = false;
      client.on("data", (chunk: Buffer) => {
        if (!dark && stalls && chunk.includes("LISTEN ")) {
          dark = true;
          this.stalled += 1;
        }
        if (!dark) upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (!dark) client.write(chunk);
      });
      const close = (): void => {
        if (dark) return;
        client.destroy();
        upstream.destroy();
      };
      client.on("end", close);
      upstream.on("end", close);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    const url = new URL(pgDsn());
    url.hostname = "127.0.0.1";
    url.port = String((this.#server.address() as net.AddressInfo).port);
    return url.toString();
  }

  heal(): void {
    this.stalling = false;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A port nothing listens on (taken, then freed). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function closesWithin(store: { close(): Promise<void> }, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    store.close().then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return outcome;
}

function messages(errors: unknown[]): string[] {
  return errors.map((error) => (error instanceof Error ? error.message : String(error)));
}

/** A connector that hands the store a pg.Client it never connected (breaking its contract), and how many it handed out. */
function neverConnected(): { connector: ListenConnector; opened: () => number } {
  let opened = 0;
  const connector: ListenConnector = () => {
    opened += 1;
    const client = new pg.Client({ connectionString: pgDsn() });
    client.on("error", () => {});
    return Promise.resolve(client);
  };
  return { connector, opened: () => opened };
}

const proxies: ListenStallProxy[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});

describe("opening the LISTEN connection is bounded", () => {
  it("a LISTEN connection that goes dark once LISTEN is sent is destroyed at listenCheckTimeoutMs, reported once, retried; it listens once the path heals", async () => {
    const proxy = new ListenStallProxy();
    proxies.push(proxy);
    const listen = await proxy.listen();
    const errors: unknown[] = [];
    const warnings: string[] = [];
    const store = openStore(undefined, {
      listen,
      timeouts: { listenCheckTimeoutMs: 1_000 },
      onError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    await store.connect();
    // Connecting, stalled on LISTEN, then given up on: retrying (pushWakeups stays true: a LISTEN source remains).
    expect(await until(() => errors.length > 0, 20_000)).toBe(true);
    expect(await until(() => store.listenState === "retrying" || proxy.stalled > 1, 20_000)).toBe(true);
    expect(messages(errors)[0]).toMatch(/did not answer its LISTEN statement within 1000ms/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/LISTEN connection could not be opened .*did not answer its LISTEN statement/);
    // The store polls meanwhile: a claim works on the pool.
    await store.submit({ name: "t", payload: null });
    expect(await store.claim({ queues: ["default"], workerId: "w", leaseMs: 30_000 })).toHaveLength(1);
    // It retries (1 s later), stalls again, and still says it once.
    expect(await until(() => errors.length >= 2, 20_000)).toBe(true);
    expect(proxy.stalled).toBeGreaterThanOrEqual(2);
    expect(warnings).toHaveLength(1);
    proxy.heal();
    expect(await until(() => store.listenState === "listening", 30_000)).toBe(true);
    expect(store.capabilities.pushWakeups).toBe(true);
    expect(await closesWithin(store, 10_000)).toBe(true);
  }, 90_000);

  it("close() resolves promptly while the LISTEN statement stalls, however long its bound", async () => {
    const proxy = new ListenStallProxy();
    proxies.push(proxy);
    const store = openStore(undefined, { listen: await proxy.listen(), timeouts: { listenCheckTimeoutMs: 120_000 } });
    await store.connect();
    expect(await until(() => proxy.stalled === 1, 20_000)).toBe(true);
    expect(store.listenState).toBe("connecting");
    expect(await closesWithin(store, 10_000)).toBe(true);
    expect(store.listenState).toBe("closed");
  }, 60_000);

  it("close() resolves promptly while the LISTEN statement waits on a client the connector never connected, however long its bound", async () => {
    const { connector, opened } = neverConnected();
    const store = openStore(undefined, { listen: connector, timeouts: { listenCheckTimeoutMs: 120_000 } });
    await store.connect();
    expect(await until(() => opened() === 1, 20_000)).toBe(true);
    expect(store.listenState).toBe("connecting");
    expect(await closesWithin(store, 10_000)).toBe(true);
    expect(store.listenState).toBe("closed");
  }, 60_000);

  it("a connector that returns a pg.Client it never connected: retrying within the bound, said once; close() resolves", async () => {
    const errors: unknown[] = [];
    const warnings: string[] = [];
    const { connector, opened } = neverConnected();
    const store = openStore(undefined, {
      listen: connector,
      timeouts: { listenCheckTimeoutMs: 1_000 },
      onError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    await store.connect();
    expect(await until(() => errors.length > 0, 20_000)).toBe(true);
    expect(messages(errors)[0]).toMatch(/never connected/);
    expect(await until(() => opened() >= 2, 20_000)).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(await closesWithin(store, 10_000)).toBe(true);
    expect(store.listenState).toBe("closed");
  }, 60_000);

  it("a connector that never answers is bounded by connectTimeoutMs, and close() does not wait for it", async () => {
    const errors: unknown[] = [];
    let opened = 0;
    const connector: ListenConnector = () => {
      opened += 1;
      return new Promise(() => {});
    };
    const store = openStore(undefined, { listen: connector, timeouts: { connectTimeoutMs: 1_000 }, onError: (error) => errors.push(error) });
    await store.connect();
    expect(await until(() => errors.length > 0, 20_000)).toBe(true);
    expect(messages(errors)[0]).toMatch(/was not open within 1000ms/);
    expect(await until(() => opened >= 2 && store.listenState === "connecting", 20_000)).toBe(true);
    expect(await closesWithin(store, 10_000)).toBe(true);
  }, 60_000);
});

describe("a LISTEN that cannot be opened is never silent", () => {
  it("a wrong port: onError at every attempt, and one warning on stderr with the default logger", async () => {
    const writes: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    const url = new URL(pgDsn());
    url.port = String(await closedPort());
    const store = openStore(undefined, { listen: url.toString() });
    await store.connect();
    expect(await until(() => store.listenState === "retrying", 20_000)).toBe(true);
    // Attempts at about 0, 1 and 3 s: still one line.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const lines = writes.filter((line) => line.includes("LISTEN connection could not be opened"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cairnq warn: .*ECONNREFUSED/);
    expect(lines[0]).toMatch(/listen: false/);
    expect(store.capabilities.pushWakeups).toBe(true);
    // Polling carries on.
    await store.submit({ name: "t", payload: null });
    expect(await store.claim({ queues: ["default"], workerId: "w", leaseMs: 30_000 })).toHaveLength(1);
  }, 60_000);

  it("a wrong port with onError and a logger: every failure to onError, one warning to the logger", async () => {
    const errors: unknown[] = [];
    const warnings: { message: string; fields: unknown }[] = [];
    const url = new URL(pgDsn());
    url.port = String(await closedPort());
    const store = openStore(undefined, {
      listen: url.toString(),
      onError: (error) => errors.push(error),
      logger: { warn: (message, fields) => warnings.push({ message, fields }) },
    });
    await store.connect();
    expect(await until(() => errors.length >= 2, 20_000)).toBe(true);
    expect(errors.every((error) => (error as { code?: unknown }).code === "ECONNREFUSED")).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ listenState: "retrying" });
  }, 60_000);

  it("a connector that resolves to something else than a client: one clear InvalidArgument, polling for good", async () => {
    const errors: unknown[] = [];
    const warnings: string[] = [];
    let calls = 0;
    const store = openStore(undefined, {
      listen: (() => {
        calls += 1;
        return Promise.resolve(42);
      }) as unknown as ListenConnector,
      onError: (error) => errors.push(error),
      logger: { warn: (message) => warnings.push(message) },
    });
    await store.connect();
    expect(await until(() => store.listenState === "unavailable", 20_000)).toBe(true);
    expect(store.capabilities.pushWakeups).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(calls).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(InvalidArgument);
    expect(messages(errors)[0]).toMatch(/the listen connector must resolve to a connected pg.Client, got number/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/got number/);
  }, 30_000);
});
