/**
 * What a `PostgresStore` runs on (§10 "obtain executor"): a connection string
 * (the store builds and owns a `pg.Pool`), a `pg.Pool` the application owns,
 * or an existing Kysely instance. Also where `pg` is loaded (lazily), where
 * the `schema` option reaches every pooled connection, and where the pool's
 * error events are caught so a killed backend never crashes the process.
 */
import { createRequire } from "node:module";
import type pg from "pg";
import { InvalidArgument, requireInt } from "@cairnq/protocol";
import type { AnyKysely } from "@cairnq/store-kysely";
import type { PostgresPool as KyselyPostgresPool } from "kysely";
import { Kysely, PostgresDialect } from "kysely";
import type { ListenClient, ListenConnector } from "./postgres-wakeups.js";

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
  /** True when the store built the pool (a DSN): only then does `close()` end it. */
  readonly owned: boolean;
  /** The `schema` option, or `null`. */
  readonly schema: string | null;
  /** True when the store creates `schema` and sets `search_path` itself (a DSN with `schema`); otherwise it only checks (§10). */
  readonly managesSchema: boolean;
  /** How the LISTEN connection is opened, or `null` when there is none (push wakeups off). */
  readonly listen: ListenConnector | null;
  readonly #onError: PostgresErrorHook;
  #pool: PostgresPool | null;
  #poolGuarded = false;
  readonly #guardedClients = new Set<ClientEvents>();
  readonly #reported = new WeakSet<object>();

  /**
   * @param target - A connection string, a `pg.Pool`, or a Kysely instance.
   * @param options - See {@link PostgresConnectionOptions}.
   */
  constructor(target: PostgresTarget, options: PostgresConnectionOptions) {
    this.schema = options.schema;
    this.#onError = options.onError ?? (() => {});
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
      const config = poolConfig(target, this.schema, max);
      this.db = new Kysely<Record<string, never>>({
        dialect: new PostgresDialect({
          // A function: pg is loaded, and the pool built, on the first statement — not at import or construction.
          pool: () => {
            const Driver = loadDriver();
            const pool = new Driver.Pool(config) as unknown as PostgresPool;
            this.#pool = pool;
            this.#guardPool(pool);
            return Promise.resolve(pool);
          },
        }),
      });
      this.listen = listenConnector(options.listen, () => ({ connectionString: target }), null);
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
    this.db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: target }) });
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
function poolConfig(dsn: string, schema: string | null, max: number): pg.PoolConfig {
  const config: pg.PoolConfig = { connectionString: dsn, max, allowExitOnIdle: true };
  if (schema === null) return config;
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
  config.options = `${existing}-c search_path="${schema}"`;
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
  if (typeof option === "string") return () => connectClient(null, { connectionString: option });
  if (config === null) return null;
  return () => connectClient(ClientClass, config());
}

/** Opens one non-pooled client; an error before the caller's listeners are attached is swallowed (the promise carries it). */
async function connectClient(ClientClass: (new (config: object) => ListenClient) | null, config: object): Promise<ListenClient> {
  const Client = (ClientClass ?? loadDriver().Client) as unknown as new (config: object) => ListenClient & { connect(): Promise<unknown> };
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

/**
 * Loads `pg` when the first connection is made rather than at import, so
 * importing `cairnq` (which re-exports this store) loads no driver until a
 * Postgres store actually connects.
 */
function loadDriver(): typeof pg {
  return createRequire(import.meta.url)("pg") as typeof pg;
}
