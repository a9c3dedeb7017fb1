/**
 * A TCP proxy to a Postgres server that can make connections go dark: bytes
 * stop flowing both ways, but neither side sees a FIN or an RST and the
 * proxy keeps ACKing — a NAT entry dropped, a network path gone silent.
 * Shared by the store-level half-open test and the worker-process one in
 * `cairnq`'s tests.
 *
 * - `freeze()`: every connection open now goes dark; new ones work (a new path).
 * - `cut()`: every connection, open now or opened until `heal()`, is dark
 *   (the whole path is gone: even reconnecting does not help).
 * - `heal()`: connections opened from now on work again; the dark ones stay dark.
 */
import net from "node:net";

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  frozen: boolean;
}

export class HalfOpenProxy {
  readonly #server: net.Server;
  readonly #pairs = new Set<Pair>();
  #cut = false;
  port = 0;

  /** @param target - Where the server is: the host and port of `dsn`. */
  constructor(readonly dsn: string) {
    const url = new URL(dsn);
    const host = url.hostname === "localhost" ? "127.0.0.1" : url.hostname;
    const port = Number(url.port || 5432);
    this.#server = net.createServer((client) => {
      const upstream = net.connect(port, host);
      const pair: Pair = { client, upstream, frozen: this.#cut };
      this.#pairs.add(pair);
      client.on("data", (chunk) => {
        if (!pair.frozen) upstream.write(chunk);
      });
      upstream.on("data", (chunk) => {
        if (!pair.frozen) client.write(chunk);
      });
      const close = (): void => {
        this.#pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      // A frozen pair ignores even a FIN from either side: nothing crosses a dead path.
      client.on("end", () => (pair.frozen ? undefined : close()));
      upstream.on("end", () => (pair.frozen ? undefined : close()));
      client.on("error", close);
      upstream.on("error", close);
    });
  }

  /** Starts listening on a free port; resolves with `dsn` pointed at the proxy. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as net.AddressInfo).port;
    const url = new URL(this.dsn);
    url.hostname = "127.0.0.1";
    url.port = String(this.port);
    return url.toString();
  }

  /** Every connection open now stops carrying bytes, silently; returns how many. */
  freeze(): number {
    for (const pair of this.#pairs) pair.frozen = true;
    return this.#pairs.size;
  }

  /** Every connection open now, and every one opened until {@link heal}, is dark; returns how many were open. */
  cut(): number {
    this.#cut = true;
    return this.freeze();
  }

  /**
   * Every connection open now is closed on the client's side only, as when the server's host dies or a
   * middlebox resets the path: the client hears the server hang up mid-statement, while the server's session
   * goes on with what it was sent (its answer goes nowhere). Returns how many.
   */
  sever(): number {
    for (const pair of this.#pairs) {
      pair.frozen = true;
      pair.client.destroy();
    }
    return this.#pairs.size;
  }

  /** New connections work again (the dark ones stay dark, as a dead NAT entry does). */
  heal(): void {
    this.#cut = false;
  }

  /** Connections open now that carry no bytes. */
  get dark(): number {
    return [...this.#pairs].filter((pair) => pair.frozen).length;
  }

  async close(): Promise<void> {
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
