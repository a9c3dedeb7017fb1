/**
 * What a `PostgresStore` runs on (§10 "obtain executor"): a connection string
 * (the store builds and owns a `pg.Pool`), a `pg.Pool` the application owns,
 * or an existing Kysely instance. Also where `pg` is loaded (lazily), where
 * the `schema` option reaches every pooled connection, and where the pool's
 * error events are caught so a killed backend never crashes the process.
 */
import type pg from "pg";
import { InvalidArgument } from "@cairnq/protocol";
import { requireInt } from "@cairnq/protocol/adapter";
import type { AnyKysely } from "@cairnq/store-kysely";
import type { PostgresPool as KyselyPostgresPool } from "kysely";
import { Kysely, PostgresDialect } from "kysely";
import { checkOptions } from "@cairnq/runtime";
import { loadPgDriver } from "./postgres-driver.js";
import { prepareRegistered } from "./postgres-prepared.js";
import type { ListenClient, ListenConnector } from "./postgres-wakeups.js";
import { destroySocket, LISTEN_PING_INTERVAL_MS } from "./postgres-wakeups.js";

/**
 * The `pg.Pool` methods the store uses (a `pg.Pool` satisfies it): Kysely's
 * `connect`/`end`, plus the events the store listens to so that a backend
 * killed under an idle or checked-out client is reported, not thrown.
 */
export interface PostgresPool extends KyselyPostgresPool {
  /* eslint-disable @typescript-eslint/no-explicit-any -- EventEmitter's listener type, so pg.Pool's own signatures fit */
  on(event: "error" | "acquire", listener: (...args: any[]) => void): unknown;
  removeListener(event: "error" | "acquire", listener: (...args: any[]) => void): unknown;
  /* eslint-enable @typescript-eslint/no-explicit-any */
  /** The pool's client config; the LISTEN connection is opened with it (§9). */
  readonly options?: object;
  /** The client class of the pool (`pg.Pool` sets it); the LISTEN connection is one of these. */
  readonly Client?: new (config: object) => ListenClient;
}

/** What `new PostgresStore(target)` accepts. */
export type PostgresTarget = string | PostgresPool | AnyKysely;

/** Where an error the store survived came from. */
export interface PostgresErrorInfo {
  /** `"pool"`: a pooled connection failed outside a call (e.g. its backend was terminated); `"listen"`: the LISTEN connection (§9). */
  readonly source: "pool" | "listen";
}

/** Receives errors the store survived: nothing to handle, only to log. */
export type PostgresErrorHook = (error: unknown, info: PostgresErrorInfo) => void;

/** Options of {@link PostgresConnection}. */
export interface PostgresConnectionOptions {
  /** The `schema` option (§10), or `null`. */
  readonly schema: string | null;
  /** Pool size when the store builds the pool. @default 10 */
  readonly max?: number;
  /** Overrides where the LISTEN connection comes from; `false` turns push wakeups off. @default derived from the target */
  readonly listen?: false | string | ListenConnector;
  /** @default ignores the error */
  readonly onError?: PostgresErrorHook;
  /** See {@link PostgresTimeouts}; only with a connection string, except `listenPingIntervalMs`. */
  readonly timeouts?: Partial<PostgresTimeouts>;
  /** Send CairnQ's statements as named prepared statements on the pool's clients (see `postgres-prepared.ts`). @default true */
  readonly prepare?: boolean;
}

/**
 * How long the store waits on the network and the server before giving up
 * on a connection, so a server that restarts, a connection cut without FIN
 * or RST (a NAT entry dropped, a network path gone dark) or a transaction
 * abandoned mid-way never hangs a call or holds row locks forever. All in
 * milliseconds; `0` turns one off.
 */
export interface PostgresTimeouts {
  /**
   * Opening a connection (TCP, TLS, startup) must finish within this, or the
   * call fails (pg's `connectionTimeoutMillis`). While the server is down a
   * call fails within this time instead of waiting.
   * @default 10000
   */
  connectTimeoutMs: number;
  /**
   * A statement must answer within this, or the call fails with pg's
   * "Query read timeout" and the connection is destroyed rather than
   * returned to the pool (a connection that stopped answering would
   * otherwise fail every later call too). Bounds every call of the store,
   * including the statements of `completeIn`/`withTransaction` bodies, so
   * keep it above your longest statement. (pg's `query_timeout`.)
   * @default 30000
   */
  queryTimeoutMs: number;
  /**
   * Server side: a session of this store that sits inside an open
   * transaction without sending anything for this long is ended by the
   * server (`idle_in_transaction_session_timeout`), releasing its row locks.
   * Without it, a claim transaction whose connection was cut mid-way keeps
   * its rows locked, and every other worker's `SKIP LOCKED` skips them for
   * good.
   * @default 60000
   */
  idleInTransactionTimeoutMs: number;
  /** TCP keepalive on every connection, first probe after this much idle time (detects peers that vanished). @default 10000 */
  keepAliveInitialDelayMs: number;
  /**
   * The LISTEN connection must answer a `SELECT 1` every this often, within
   * the same time, or it is dropped and reopened (push wakeups resume). Also
   * applies to a caller's pool or Kysely instance.
   * @default 30000
   */
  listenPingIntervalMs: number;
}

/** The defaults of {@link PostgresTimeouts}. */
export const DEFAULT_POSTGRES_TIMEOUTS: Readonly<PostgresTimeouts> = Object.freeze({
  connectTimeoutMs: 10_000,
  queryTimeoutMs: 30_000,
  idleInTransactionTimeoutMs: 60_000,
  keepAliveInitialDelayMs: 10_000,
  listenPingIntervalMs: LISTEN_PING_INTERVAL_MS,
});

/** The {@link PostgresTimeouts} keys that configure connections the store builds (not a caller's pool). */
const POOL_TIMEOUTS = ["connectTimeoutMs", "queryTimeoutMs", "idleInTransactionTimeoutMs", "keepAliveInitialDelayMs"] as const;

function resolveTimeouts(input: Partial<PostgresTimeouts> | undefined, ownsPool: boolean): PostgresTimeouts {
  // `queryTimoutMs: 1000` silently ignored would leave the 30 s default in force.
  const given = checkOptions(input, "the timeouts option", Object.keys(DEFAULT_POSTGRES_TIMEOUTS)) as Partial<PostgresTimeouts>;
  const out: PostgresTimeouts = { ...DEFAULT_POSTGRES_TIMEOUTS };
  for (const key of Object.keys(DEFAULT_POSTGRES_TIMEOUTS) as (keyof PostgresTimeouts)[]) {
    const value = given?.[key];
    if (value === undefined) continue;
    if (!ownsPool && (POOL_TIMEOUTS as readonly string[]).includes(key)) {
      throw new InvalidArgument(
        key,
        `${key} configures the connections the store builds from a connection string; with your own pg.Pool set ` +
          "connectionTimeoutMillis, query_timeout, keepAlive and options (-c idle_in_transaction_session_timeout=…) where you create it",
      );
    }
    out[key] = requireInt(value, key, 0, 2_147_483_647);
  }
  return out;
}

/** `schema` must be a plain identifier when the store puts it into SQL and `search_path` (§10). */
const SCHEMA_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/** pg's default pool size, kept as ours. */
const DEFAULT_MAX = 10;

/**
 * The connection side of one store: the Kysely instance statements run on,
 * who owns it, and how to open the dedicated LISTEN connection.
 */
export class PostgresConnection {
  /** Which of the three targets was given. */
  readonly kind: "dsn" | "pool" | "kysely";
  /** The Kysely instance every statement runs on. */
  readonly db: AnyKysely;
  /**
   * Whether the store wraps the pooled clients (a connection string or a `pg.Pool`), so a pipeline
   * (`postgres-pipeline.ts`) reaches the wire as one round trip. Not with a Kysely instance, whose
   * pool the store cannot reach.
   */
  get pipelines(): boolean {
    return this.kind !== "kysely";
  }
  /** True when the store built the pool (a DSN): only then does `close()` end it. */
  readonly owned: boolean;
  /** The `schema` option, or `null`. */
  readonly schema: string | null;
  /** True when the store creates `schema` and sets `search_path` itself (a DSN with `schema`); otherwise it only checks (§10). */
  readonly managesSchema: boolean;
  /** How the LISTEN connection is opened, or `null` when there is none (push wakeups off). */
  readonly listen: ListenConnector | null;
  readonly #onError: PostgresErrorHook;
  readonly #prepare: boolean;
  #pool: PostgresPool | null;
  #poolGuarded = false;
  readonly #guardedClients = new Set<ClientEvents>();
  readonly #reported = new WeakSet<object>();
  /** The timeouts in force (defaults filled in). */
  readonly timeouts: PostgresTimeouts;

  /**
   * @param target - A connection string, a `pg.Pool`, or a Kysely instance.
   * @param options - See {@link PostgresConnectionOptions}.
   */
  constructor(target: PostgresTarget, options: PostgresConnectionOptions) {
    this.schema = options.schema;
    this.#onError = options.onError ?? (() => {});
    this.timeouts = resolveTimeouts(options.timeouts, typeof target === "string");
    this.#prepare = options.prepare ?? true;
    if (typeof target === "string") {
      if (target.length === 0) throw new InvalidArgument("connectionString", "the connection string is empty; pass e.g. 'postgres://user@host:5432/db'");
      if (this.schema !== null && !SCHEMA_IDENTIFIER.test(this.schema)) {
        throw new InvalidArgument(
          "schema",
          `schema must be a plain identifier matching ${SCHEMA_IDENTIFIER.source} (it is quoted into CREATE SCHEMA and search_path), got ${JSON.stringify(this.schema)}`,
        );
      }
      const max = options.max === undefined ? DEFAULT_MAX : requireInt(options.max, "max", 1);
      this.kind = "dsn";
      this.owned = true;
      this.managesSchema = this.schema !== null;
      this.#pool = null;
      const config = poolConfig(target, this.schema, max, this.timeouts);
      this.db = new Kysely<Record<string, never>>({
        dialect: new PostgresDialect({
          // A function: pg is loaded, and the pool built, on the first statement — not at import or construction.
          pool: () => {
            const Driver = loadPgDriver();
            const pool = new Driver.Pool(config) as unknown as PostgresPool;
            this.#pool = pool;
            this.#guardPool(pool);
            return Promise.resolve(discardingPool(pool, true));
          },
        }),
      });
      this.listen = listenConnector(options.listen, () => ({ ...config, max: undefined }), null);
      return;
    }
    if (options.max !== undefined) {
      throw new InvalidArgument("max", "max sizes the pool the store builds from a connection string; size your own pg.Pool where you create it");
    }
    this.owned = false;
    this.managesSchema = false;
    if (isKysely(target)) {
      this.kind = "kysely";
      this.db = target;
      this.#pool = null;
      this.listen = listenConnector(options.listen, null, null);
      return;
    }
    if (!isPool(target)) {
      throw new InvalidArgument("target", "PostgresStore takes a connection string, a pg.Pool or a Kysely instance");
    }
    this.kind = "pool";
    this.#pool = target;
    // Kysely over the caller's pool; never destroyed, because Kysely's destroy would end the pool.
    this.db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: discardingPool(target, false) }) });
    this.listen = listenConnector(options.listen, () => target.options ?? {}, target.Client ?? null);
  }

  /**
   * Starts catching the pool's error events (the store's connect calls it).
   * An idle pooled client whose backend dies makes `pg.Pool` emit `error`,
   * and a checked-out client emits `error` on itself; with no listener
   * either one is an uncaught exception that ends the process. The error
   * goes to `onError`; the failed call (if any) still rejects, and the pool
   * replaces the client. A pool the store builds is guarded from its
   * creation. Nothing to do for a Kysely instance: its pool is out of reach.
   */
  guard(): void {
    if (this.#pool !== null) this.#guardPool(this.#pool);
  }

  #guardPool(pool: PostgresPool): void {
    if (this.#poolGuarded) return;
    this.#poolGuarded = true;
    pool.on("error", this.#onPoolError);
    pool.on("acquire", this.#onAcquire);
  }

  readonly #onPoolError = (error: unknown): void => {
    this.#report(error, "pool");
  };

  /** Every client handed out (new or idle, ours or not) gets an error listener once: pg.Pool removes its own while a client is checked out. */
  readonly #onAcquire = (client: ClientEvents): void => {
    prepareRegistered(client, this.#prepare);
    if (this.#guardedClients.has(client)) return;
    this.#guardedClients.add(client);
    client.on("error", this.#onPoolError);
    client.once("end", () => this.#guardedClients.delete(client));
  };

  /** Reports an error the store survived to `onError` (whose own exceptions are swallowed). */
  report(error: unknown, source: PostgresErrorInfo["source"]): void {
    this.#report(error, source);
  }

  #report(error: unknown, source: PostgresErrorInfo["source"]): void {
    // An idle client's death reaches both the pool's listener and the client's own: report it once.
    if (typeof error === "object" && error !== null) {
      if (this.#reported.has(error)) return;
      this.#reported.add(error);
    }
    try {
      this.#onError(error, { source });
    } catch {
      // A throwing hook must not turn a survived error into a crash.
    }
  }

  /** Stops listening to a caller's pool (the store's close calls it); a pool the store built keeps its listeners until it ends. */
  release(): void {
    const pool = this.#pool;
    if (this.owned || pool === null || !this.#poolGuarded) return;
    this.#poolGuarded = false;
    pool.removeListener("error", this.#onPoolError);
    pool.removeListener("acquire", this.#onAcquire);
    for (const client of this.#guardedClients) client.removeListener("error", this.#onPoolError);
    this.#guardedClients.clear();
  }
}

/** The event methods of a pooled `pg.Client` the guard uses. */
interface ClientEvents {
  on(event: "error", listener: (error: unknown) => void): unknown;
  once(event: "end", listener: () => void): unknown;
  removeListener(event: "error", listener: (error: unknown) => void): unknown;
}

/**
 * The pool config for a connection string: `max`, idle clients that do not
 * hold the process open, and — with `schema` — `search_path` set by the
 * server at session start (`options=-c search_path="<schema>"`), so it
 * applies to every pooled connection before its first statement and
 * survives `RESET ALL`/`DISCARD ALL`. An `options` parameter already in a URL
 * connection string is kept: pg lets the URL override the config, so it is
 * moved into the config and ours appended.
 */
function poolConfig(dsn: string, schema: string | null, max: number, timeouts: PostgresTimeouts): pg.PoolConfig {
  const config: pg.PoolConfig = { connectionString: dsn, max, allowExitOnIdle: true };
  if (timeouts.connectTimeoutMs > 0) config.connectionTimeoutMillis = timeouts.connectTimeoutMs;
  if (timeouts.queryTimeoutMs > 0) config.query_timeout = timeouts.queryTimeoutMs;
  if (timeouts.keepAliveInitialDelayMs > 0) {
    config.keepAlive = true;
    config.keepAliveInitialDelayMillis = timeouts.keepAliveInitialDelayMs;
  }
  const settings: string[] = [];
  if (schema !== null) settings.push(`-c search_path="${schema}"`);
  if (timeouts.idleInTransactionTimeoutMs > 0) settings.push(`-c idle_in_transaction_session_timeout=${timeouts.idleInTransactionTimeoutMs}`);
  if (settings.length === 0) return config;
  let existing = "";
  try {
    const url = new URL(dsn);
    const given = url.searchParams.get("options");
    if (given !== null) {
      existing = `${given} `;
      url.searchParams.delete("options");
      config.connectionString = url.toString();
    }
  } catch {
    // Not a URL (e.g. a socket path): pg reads no `options` from it either.
  }
  config.options = `${existing}${settings.join(" ")}`;
  return config;
}

/** pg's error for a statement that did not answer within `query_timeout`. */
function isReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === "Query read timeout";
}

const DISCARDING = Symbol("cairnq.discardOnTimeout");

/** A pooled `pg.Client` as {@link discardingPool} handles it (`_queryable`/`_ending`: what pg-pool checks on release too). */
type PooledClient = Awaited<ReturnType<KyselyPostgresPool["connect"]>> & {
  [DISCARDING]?: true;
  _queryable?: boolean;
  _ending?: boolean;
  connection?: { stream?: { destroyed?: boolean } };
  ref?(): void;
  unref?(): void;
  on(event: "error" | "end", listener: () => void): unknown;
};

/** How long the held client of a pool the store built may sit unused before it goes back to the pool (which then applies its own idle timeout). */
const HELD_IDLE_MS = 1_000;

/**
 * `pool` as Kysely sees it, except that a client whose statement hit the
 * query timeout has its socket destroyed before Kysely releases it: pg
 * leaves such a client "queryable", so the pool would hand the dead
 * connection to the next call, which would time out again, forever. A
 * destroyed client ends, and the pool drops it on release.
 *
 * With `hold` (only for the pool the store builds, never a caller's), one
 * released client stays checked out and is handed straight to the next
 * `connect`, so back-to-back statements skip pg-pool's checkout and release
 * (its pending queue, connection and idle timers, events and promise: a few
 * microseconds of client CPU per statement). Only a healthy client is held
 * (what pg-pool checks on release, plus an intact socket), and only while no
 * one waits on the pool; it is given back — and so dropped by the pool if
 * dead — when it errors or ends while held, after {@link HELD_IDLE_MS}
 * unused, and on `end`. While held its socket is unref'd, as the pool does
 * for an idle client, so it never keeps the process alive.
 */
function discardingPool(pool: PostgresPool, hold: boolean): KyselyPostgresPool {
  let held: PooledClient | null = null;
  /** pg-pool's `release` of the held client's checkout. */
  let heldRelease: ((error?: unknown) => void) | null = null;
  let heldSince = 0;
  let reaper: ReturnType<typeof setTimeout> | null = null;
  let ending = false;
  /** Hands the held `client` back to the pool; `error` (it died) makes the pool drop it. */
  const giveBack = (client: PooledClient, error?: Error): void => {
    if (held !== client || heldRelease === null) return;
    const release = heldRelease;
    held = null;
    heldRelease = null;
    client.ref?.();
    release(error);
  };
  const reap = (): void => {
    reaper = null;
    if (held === null) return;
    const left = heldSince + HELD_IDLE_MS - Date.now();
    if (left > 0) armReaper(left);
    else giveBack(held);
  };
  const armReaper = (ms: number): void => {
    reaper = setTimeout(reap, ms);
    reaper.unref();
  };
  const healthy = (client: PooledClient): boolean =>
    client._queryable !== false && client._ending !== true && client.connection?.stream?.destroyed !== true;
  const waiting = (): number => (pool as { waitingCount?: number }).waitingCount ?? 0;
  return {
    connect: async () => {
      const reused = held;
      if (reused !== null) {
        held = null;
        heldRelease = null;
        reused.ref?.();
        return reused;
      }
      let opened: unknown;
      try {
        opened = await pool.connect();
      } catch (error) {
        throw connectFailure(error);
      }
      const client = opened as PooledClient;
      if (client[DISCARDING] !== true) {
        client[DISCARDING] = true;
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as { query: unknown }).query = (...args: unknown[]): unknown => {
          const result = query(...args);
          if (result instanceof Promise) {
            return result.catch((error: unknown) => {
              if (isReadTimeout(error)) destroySocket(client);
              throw error;
            });
          }
          return result;
        };
        if (hold) {
          // A held client that dies goes back to the pool at once, which drops it (it is no longer queryable).
          const onGone = (): void => giveBack(client, new Error("a held connection of the pool died"));
          client.on("error", onGone);
          client.on("end", onGone);
        }
      }
      if (hold) {
        // pg-pool sets a fresh `release` on every checkout; ours keeps the client when it can.
        const release = client.release.bind(client);
        client.release = (error?: unknown): void => {
          if (!error && !ending && held === null && healthy(client) && waiting() === 0) {
            held = client;
            heldRelease = release as (error?: unknown) => void;
            heldSince = Date.now();
            client.unref?.();
            if (reaper === null) armReaper(HELD_IDLE_MS);
            return;
          }
          (release as (error?: unknown) => void)(error);
        };
      }
      return client;
    },
    end: () => {
      ending = true;
      if (reaper !== null) clearTimeout(reaper);
      if (held !== null) giveBack(held);
      return pool.end();
    },
  };
}

/**
 * A connection the pool could not open, said plainly: the driver's words
 * (kept as `cause`, its `code` copied), that nothing was written, and what
 * to do. Raw, a submit made while the server restarts fails with a bare
 * `connect ECONNREFUSED 127.0.0.1:5432` or `the database system is
 * shutting down`. Not a `CairnQError`: it stays transient, so a worker
 * retries it with backoff.
 */
export function connectFailure(error: unknown): Error {
  const cause = error instanceof Error ? error : new Error(String(error));
  const code = (cause as { code?: unknown }).code;
  const why =
    code === "57P03"
      ? "the server is starting up or shutting down"
      : /timeout/i.test(cause.message)
        ? "the server did not answer within connectTimeoutMs"
        : "the server is down, restarting or not reachable there";
  const failure = new Error(
    `could not open a connection to Postgres (${cause.message}): ${why}. The statement was not sent, so nothing was written; ` +
      "retry once the server answers (a worker retries by itself, with backoff)",
    { cause },
  );
  failure.name = "PostgresConnectError";
  if (code !== undefined) (failure as Error & { code?: unknown }).code = code;
  return failure;
}

/**
 * The LISTEN connector: the caller's `listen` option when given, else a
 * `pg.Client` (or the pool's client class) over `config`; `null` when
 * neither exists (a Kysely instance without `listen`) or `listen` is `false`.
 */
function listenConnector(
  option: false | string | ListenConnector | undefined,
  config: (() => object) | null,
  ClientClass: (new (config: object) => ListenClient) | null,
): ListenConnector | null {
  if (option === false) return null;
  if (typeof option === "function") return option;
  if (typeof option === "string") return () => connectClient(null, { connectionString: option });
  if (config === null) return null;
  return () => connectClient(ClientClass, config());
}

/** Opens one non-pooled client; an error before the caller's listeners are attached is swallowed (the promise carries it). */
async function connectClient(ClientClass: (new (config: object) => ListenClient) | null, config: object): Promise<ListenClient> {
  const Client = (ClientClass ?? loadPgDriver().Client) as unknown as new (config: object) => ListenClient & { connect(): Promise<unknown> };
  const client = new Client(config);
  // Errors after connect are the wakeups' to handle; this listener only keeps an early one from being thrown.
  client.on("error", () => {});
  await client.connect();
  return client;
}

function isKysely(value: unknown): value is AnyKysely {
  // Duck-typed, not `instanceof`: the caller's Kysely may come from another copy of the package.
  const v = value as Partial<AnyKysely> | null;
  return typeof v === "object" && v !== null && typeof v.transaction === "function" && typeof v.executeQuery === "function" && typeof v.getExecutor === "function";
}

function isPool(value: unknown): value is PostgresPool {
  const v = value as Partial<PostgresPool> | null;
  return typeof v === "object" && v !== null && typeof v.connect === "function" && typeof v.end === "function" && typeof v.on === "function";
}
