/**
 * What a `PostgresStore` runs on (§10 "obtain executor"): a connection string
 * (the store builds and owns a `pg.Pool`), a `pg.Pool` the application owns,
 * or an existing Kysely instance. Also where `pg` is loaded (lazily), where
 * the `schema` option reaches every pooled connection, and where the pool's
 * error events are caught so a killed backend never crashes the process.
 *
 * The pool holds no session state, so it runs through a transaction-mode
 * pooler (PgBouncer, RDS Proxy, Supavisor): locks are transaction-scoped
 * advisory locks only, the one setting the store makes is `SET LOCAL` inside
 * each transaction, and no startup parameter is sent except `options` for
 * the `schema` option's search_path (see `poolConfig`).
 */
import type pg from "pg";
import type { Logger } from "@cairnq/protocol";
import { InvalidArgument } from "@cairnq/protocol";
import { logSafely } from "@cairnq/protocol/sdk";
import { requireInt } from "@cairnq/protocol/adapter";
import type { AnyKysely } from "@cairnq/store-kysely";
import { redactConnectionString } from "@cairnq/store-kysely";
import type { PostgresPool as KyselyPostgresPool } from "kysely";
import { Kysely, PostgresDialect } from "kysely";
import { checkOptions } from "@cairnq/runtime";
import { connectionStringProblem, requireConnectionString } from "./postgres-connection-string.js";
import { loadPgDriver } from "./postgres-driver.js";
import type { DiscardingPool } from "./postgres-pool.js";
import { discardingPool, isDiscarded } from "./postgres-pool.js";
import type { PooledClientBehaviour } from "./postgres-prepared.js";
import { prepareRegistered } from "./postgres-prepared.js";
import { destroySocket } from "./postgres-socket.js";
import type { ListenClient, ListenConnector } from "./postgres-wakeups.js";
import { LISTEN_CHECK_TIMEOUT_MS, LISTEN_PING_INTERVAL_MS } from "./postgres-wakeups.js";

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
  /** See {@link PostgresTimeouts}; only with a connection string, except `listenPingIntervalMs`, `listenCheckTimeoutMs` and `storeQueryTimeoutMs`. */
  readonly timeouts?: Partial<PostgresTimeouts>;
  /** Send CairnQ's statements as named prepared statements on the pool's clients (see `postgres-prepared.ts`). @default true */
  readonly preparedStatements?: boolean;
  /** Where the store's once-only warnings go (a LISTEN that cannot hear, a server turned read-only), besides `onError`. @default none */
  readonly logger?: Logger;
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
   * call fails within this time instead of waiting. Also bounds opening the
   * LISTEN connection (a `listen` function included), with any target.
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
   * A statement of CairnQ's own — a claim, heartbeat, settlement, submit or
   * read the store compiled, not a statement of your `completeIn` or
   * `withTransaction` body — must answer within this, or the call fails and
   * its connection is destroyed, with every idle connection of the pool
   * (opened over the same path, so probably as dead). This is what brings a
   * worker back quickly from a path that went dark without FIN or RST: its
   * calls fail at this bound, not at `queryTimeoutMs`, and it continues on
   * fresh connections. The key lock's wait is exempt (another transaction,
   * possibly yours, may hold the key for long). Also applies to your own
   * `pg.Pool`. Never above `queryTimeoutMs` when that is set.
   * @default 10000
   */
  storeQueryTimeoutMs: number;
  /**
   * Server side: a transaction of this store that sits open without sending
   * anything for this long is ended by the server
   * (`idle_in_transaction_session_timeout`, set with `SET LOCAL` as each
   * transaction begins, in the same round trip), releasing its row locks.
   * Without it, a claim transaction whose connection was cut mid-way keeps
   * its rows locked, and every other worker's `SKIP LOCKED` skips them for
   * good. Transaction-scoped, so it holds behind a transaction-mode pooler
   * and leaves the server session as it found it.
   * @default 60000
   */
  idleInTransactionTimeoutMs: number;
  /** TCP keepalive on every connection, first probe after this much idle time (detects peers that vanished). @default 10000 */
  keepAliveInitialDelayMs: number;
  /**
   * On connect and after every reconnect, the LISTEN connection must hear a
   * NOTIFY the store sends itself through the pool within this, or push
   * wakeups are given up for good: the store polls, says so once (through
   * `onError` and its logger) and `listenState` is `deaf`. Catches a LISTEN
   * that "works" but never hears (through a transaction-mode pooler, or on
   * another server than the pool writes to). Each LISTEN statement of the
   * setup must be answered within it too, or the connection is destroyed,
   * reported and retried with backoff (a path gone dark mid-setup, a client
   * never connected). Also applies to a caller's pool or Kysely instance.
   * @default 5000
   */
  listenCheckTimeoutMs: number;
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
  storeQueryTimeoutMs: 10_000,
  idleInTransactionTimeoutMs: 60_000,
  keepAliveInitialDelayMs: 10_000,
  listenCheckTimeoutMs: LISTEN_CHECK_TIMEOUT_MS,
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
          "connectionTimeoutMillis, query_timeout, keepAlive and idle_in_transaction_session_timeout (on the role, or per session) where you create it",
      );
    }
    out[key] = requireInt(value, key, 0, 2_147_483_647);
  }
  return out;
}

/** `schema` must be a plain identifier when the store puts it into SQL and `search_path` (§10). */
const SCHEMA_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/** Postgres truncates identifiers to this many bytes (NAMEDATALEN - 1), so a longer `schema` would name another schema. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * Refuses a `schema` no installation can live in, before anything is created: longer than 63 bytes (Postgres would
 * create the truncated name, which `current_schema()` then never matches) or starting with `pg_` (reserved for system
 * schemas: CREATE SCHEMA refuses it). Applies to every target: with your pool or Kysely instance such a schema could
 * never be `current_schema()` either.
 */
function requireSchemaName(schema: string): void {
  if (typeof schema !== "string") {
    throw new InvalidArgument("schema", `schema must be a string, got ${schema === null ? "null" : typeof schema}`);
  }
  const bytes = Buffer.byteLength(schema, "utf8");
  if (bytes > MAX_IDENTIFIER_BYTES) {
    throw new InvalidArgument(
      "schema",
      `schema must be at most ${MAX_IDENTIFIER_BYTES} bytes (Postgres truncates longer identifiers, so the schema created would not be the one named), got ${bytes} bytes: ${JSON.stringify(schema)}`,
    );
  }
  if (schema.startsWith("pg_")) {
    throw new InvalidArgument("schema", `schema must not start with "pg_" (Postgres reserves that prefix for system schemas), got ${JSON.stringify(schema)}`);
  }
}

/** What the `listen` option takes, as its refusals say. */
const LISTEN_FORMS =
  'a connection string pg reads (a postgres:// or postgresql:// URL, a socket: URL, or "<socket directory> [database]"), a function returning a connected pg.Client, or false';

/**
 * Refuses a `listen` option that is not `false`, a function or a connection string pg reads (as the target's,
 * {@link connectionStringProblem}): `true`, `0`, `{}`, a port or a mistyped URL would otherwise quietly become the
 * derived default (or a connection that can never open). `null` too, unlike `logger: null` (which has a meaning:
 * silence): `false` is how LISTEN is turned off.
 */
function requireListenOption(listen: unknown): void {
  if (listen === undefined || listen === false || typeof listen === "function") return;
  if (typeof listen === "string") {
    const problem = connectionStringProblem(listen);
    if (problem === null) return;
    throw new InvalidArgument(
      "listen",
      `listen must be ${LISTEN_FORMS}, got ${redactConnectionString(listen)}: ${problem}`,
    );
  }
  const hint = listen === null ? "; use listen: false to turn LISTEN off (push wakeups become plain polling)" : "";
  const shown =
    listen === null ? "null" : typeof listen === "number" || typeof listen === "boolean" ? `${typeof listen} ${listen}` : typeof listen === "object" ? "an object" : `a ${typeof listen}`;
  throw new InvalidArgument("listen", `listen must be ${LISTEN_FORMS}, got ${shown}${hint}`);
}

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
  /**
   * The pool {@link PostgresConnection.db} runs on, for the executor's direct path past Kysely's
   * layers (`postgres-executor.ts`): the same clients, checked out and released the same way.
   * `null` with a Kysely instance (its pool is out of reach), and — with a connection string —
   * until Kysely has built the pool on its first statement (the store's connect), so that Kysely's
   * `destroy` still ends every pool the store built.
   */
  get directPool(): KyselyPostgresPool | null {
    return this.#kyselyPool;
  }
  /** True when the store built the pool (a DSN): only then does `close()` end it. */
  readonly owned: boolean;
  /** The `schema` option, or `null`. */
  readonly schema: string | null;
  /** The size of the pool the store builds from a connection string (`max`), or `null` for your pool or Kysely instance. */
  readonly max: number | null;
  /** True when the store creates `schema` and sets `search_path` itself (a DSN with `schema`); otherwise it only checks (§10). */
  readonly managesSchema: boolean;
  /** How the LISTEN connection is opened, or `null` when there is none (push wakeups off). */
  readonly listen: ListenConnector | null;
  /**
   * Whether the LISTEN connection is opened exactly as the pool's connections are (a connection
   * string, `listen` not given), so the store's writes may run on it (`postgres-listen-lane.ts`).
   */
  readonly listenRunsWrites: boolean;
  readonly #onError: PostgresErrorHook;
  readonly #logger: Logger | undefined;
  readonly #clientBehaviour: PooledClientBehaviour;
  #pool: PostgresPool | null;
  /** The pool Kysely runs on (the caller's or ours, with unusable connections dropped), once built; `null` with a Kysely instance. */
  #kyselyPool: DiscardingPool | null = null;
  #poolGuarded = false;
  /** Each guarded client's own error listener (its errors are not reported once the store dropped it on purpose). */
  readonly #guardedClients = new Map<ClientEvents, (error: unknown) => void>();
  #warnedReadOnly = false;
  readonly #reported = new WeakSet<object>();
  /**
   * Called when the pool the store built found a connection dead or read-only and dropped the
   * others opened the same way: the LISTEN connection, opened the same way, stops running writes
   * (`postgres-listen-lane.ts`) until it is reopened.
   */
  onSuspects: (() => void) | null = null;
  /**
   * The LISTEN connection, opened the same way as the pool's, proved dead (a write on it hit its
   * read timeout): the pool's idle connections are suspect too and are dropped, as when one of
   * them is found dead.
   */
  listenFoundDead(): void {
    this.#kyselyPool?.dropIdle();
  }
  /**
   * A write on the LISTEN connection (which is then lent no more) found the server read-only: the
   * pool's idle connections, opened the same way, are dropped, and it is reported as when a pooled
   * connection finds it.
   */
  listenFoundReadOnly(error: unknown): void {
    this.#kyselyPool?.dropIdle();
    this.#onReadOnly(error);
  }
  /** The timeouts in force (defaults filled in). */
  readonly timeouts: PostgresTimeouts;

  /**
   * @param target - A connection string, a `pg.Pool`, or a Kysely instance.
   * @param options - See {@link PostgresConnectionOptions}.
   */
  constructor(target: PostgresTarget, options: PostgresConnectionOptions) {
    this.schema = options.schema;
    if (this.schema !== null) requireSchemaName(this.schema);
    requireListenOption(options.listen);
    this.#onError = options.onError ?? (() => {});
    this.timeouts = resolveTimeouts(options.timeouts, typeof target === "string");
    this.#logger = options.logger;
    const ownsPool = typeof target === "string";
    const { queryTimeoutMs, storeQueryTimeoutMs, idleInTransactionTimeoutMs } = this.timeouts;
    this.#clientBehaviour = {
      named: options.preparedStatements ?? true,
      storeTimeoutMs: queryTimeoutMs > 0 && storeQueryTimeoutMs > 0 ? Math.min(queryTimeoutMs, storeQueryTimeoutMs) : storeQueryTimeoutMs,
      // Only on the pool the store builds: on a caller's pool the wrapper would rewrite the application's own BEGINs too.
      transactionSetup: ownsPool && idleInTransactionTimeoutMs > 0 ? `SET LOCAL idle_in_transaction_session_timeout = ${idleInTransactionTimeoutMs}` : null,
    };
    if (typeof target === "string") {
      requireConnectionString(target);
      if (this.schema !== null && !SCHEMA_IDENTIFIER.test(this.schema)) {
        throw new InvalidArgument(
          "schema",
          `schema must be a plain identifier matching ${SCHEMA_IDENTIFIER.source} (it is quoted into CREATE SCHEMA and search_path), got ${JSON.stringify(this.schema)}`,
        );
      }
      const max = options.max === undefined ? DEFAULT_MAX : requireInt(options.max, "max", 1);
      this.max = max;
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
            this.#kyselyPool = discardingPool(pool, { hold: true, onReadOnly: this.#onReadOnly, onSuspects: () => this.onSuspects?.() });
            return Promise.resolve(this.#kyselyPool);
          },
        }),
      });
      this.listenRunsWrites = options.listen === undefined;
      const connector = listenConnector(options.listen, () => ({ ...config, max: undefined }), null);
      // The lane's statements go through the LISTEN client's query as through a pooled client's: prepared by name, bounded.
      this.listen =
        connector === null || !this.listenRunsWrites
          ? connector
          : async (signal) => {
              const client = await connector(signal);
              prepareRegistered(client, this.#clientBehaviour);
              return client;
            };
      return;
    }
    if (options.max !== undefined) {
      throw new InvalidArgument("max", "max sizes the pool the store builds from a connection string; size your own pg.Pool where you create it");
    }
    this.owned = false;
    this.listenRunsWrites = false;
    this.managesSchema = false;
    this.max = null;
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
    this.#kyselyPool = discardingPool(target, { hold: false, onReadOnly: this.#onReadOnly });
    this.db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: this.#kyselyPool }) });
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

  /** pg-pool's `error` event: `(error, client)` — an idle client died; expected for one the store dropped on purpose. */
  readonly #onPoolError = (error: unknown, client?: unknown): void => {
    if (!isDiscarded(client)) this.#report(error, "pool");
  };

  /** Every client handed out (new or idle, ours or not) gets an error listener once: pg.Pool removes its own while a client is checked out. */
  readonly #onAcquire = (client: ClientEvents): void => {
    prepareRegistered(client, this.#clientBehaviour);
    if (this.#guardedClients.has(client)) return;
    const listener = (error: unknown): void => {
      if (!isDiscarded(client)) this.#report(error, "pool");
    };
    this.#guardedClients.set(client, listener);
    client.on("error", listener);
    client.once("end", () => this.#guardedClients.delete(client));
  };

  /**
   * A write found its server read-only (a failover left the connection on a standby): the pool has
   * dropped that connection and its idle ones; the error goes to `onError`, and the logger hears it
   * once per store (each failing call still rejects).
   */
  readonly #onReadOnly = (error: unknown): void => {
    this.#report(error, "pool");
    if (this.#warnedReadOnly) return;
    this.#warnedReadOnly = true;
    logSafely(
      this.#logger,
      "warn",
      "a write of the store reached a read-only server (SQLSTATE 25006, e.g. a standby after a failover): its connection no longer carries writes " +
        "(a pooled one is dropped, the LISTEN one only listens) and the idle ones were dropped, so the next calls open fresh connections; " +
        "if this repeats, the connection string still points at a standby",
      { error },
    );
  };

  /** The logger the store's once-only warnings go to (see {@link PostgresConnectionOptions.logger}). */
  get logger(): Logger | undefined {
    return this.#logger;
  }

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
    for (const [client, listener] of this.#guardedClients) client.removeListener("error", listener);
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
 *
 * That startup parameter is the only one the store adds, and only for
 * `schema`: a transaction-mode pooler cannot give each client its own
 * search_path (PgBouncer 1.18 refuses `options` outright), so behind one
 * search_path belongs on the role or database and `schema` is left out.
 * Every other setting is per transaction (see `transactionSetup`).
 */
function poolConfig(dsn: string, schema: string | null, max: number, timeouts: PostgresTimeouts): pg.PoolConfig {
  const config: pg.PoolConfig = { connectionString: dsn, max, allowExitOnIdle: true };
  if (timeouts.connectTimeoutMs > 0) config.connectionTimeoutMillis = timeouts.connectTimeoutMs;
  if (timeouts.queryTimeoutMs > 0) config.query_timeout = timeouts.queryTimeoutMs;
  if (timeouts.keepAliveInitialDelayMs > 0) {
    config.keepAlive = true;
    config.keepAliveInitialDelayMillis = timeouts.keepAliveInitialDelayMs;
  }
  if (schema === null) return config;
  const settings = [`-c search_path="${schema}"`];
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
  if (typeof option === "string") return (signal) => connectClient(null, { connectionString: option }, signal);
  if (config === null) return null;
  return (signal) => connectClient(ClientClass, config(), signal);
}

/**
 * Opens one non-pooled client; an error before the caller's listeners are attached is swallowed (the promise carries it).
 * `signal` (the store began to close) destroys the socket of a connect in flight: on a dead path it would otherwise
 * hold the store's close for connectTimeoutMs.
 */
async function connectClient(ClientClass: (new (config: object) => ListenClient) | null, config: object, signal?: AbortSignal): Promise<ListenClient> {
  const Client = (ClientClass ?? loadPgDriver().Client) as unknown as new (config: object) => ListenClient & { connect(): Promise<unknown> };
  signal?.throwIfAborted();
  const client = new Client(config);
  // Errors after connect are the wakeups' to handle; this listener only keeps an early one from being thrown.
  client.on("error", () => {});
  const abandon = (): void => destroySocket(client);
  signal?.addEventListener("abort", abandon, { once: true });
  try {
    await client.connect();
  } finally {
    signal?.removeEventListener("abort", abandon);
  }
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
