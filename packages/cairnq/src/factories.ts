import type { CairnQOptions } from "@cairnq/client";
import { CairnQ as ClientCairnQ, CLIENT_OPTION_KEYS } from "@cairnq/client";
import type { TaskStore } from "@cairnq/protocol";
import type { RuntimeClock } from "@cairnq/runtime";
import { checkOptions } from "@cairnq/runtime";
import type { MySQLStoreOptions, MySQLTarget } from "@cairnq/store-mysql";
import { MYSQL_STORE_OPTION_KEYS, MySQLStore } from "@cairnq/store-mysql";
import type { PostgresStoreOptions, PostgresTarget } from "@cairnq/store-postgres";
import { POSTGRES_STORE_OPTION_KEYS, PostgresStore } from "@cairnq/store-postgres";
import type { SQLiteStoreOptions } from "@cairnq/store-sqlite";
import { SQLITE_STORE_OPTION_KEYS, SQLiteStore } from "@cairnq/store-sqlite";
import type { WorkerOptions } from "@cairnq/worker";
import { Worker as BaseWorker, WORKER_OPTION_KEYS } from "@cairnq/worker";

/**
 * The `clock` of a SQLite factory: the store's and the role's at once. A
 * `RuntimeClock` (a virtual one from `@cairnq/testing`) is the client's or worker's
 * clock, and the store reads its `now()`; a bare `() => number` is the
 * store's only, as before clocks reached the client and the worker.
 */
export interface SQLiteFactoryClock {
  /** @default the system clock */
  clock?: RuntimeClock | (() => number) | undefined;
}

/** Options of {@link CairnQ.sqlite}: the store's and the client's, in one bag. */
export type SQLiteCairnQOptions = Omit<CairnQOptions, "clock"> & Omit<SQLiteStoreOptions, "clock"> & SQLiteFactoryClock;

/** Options of {@link Worker.sqlite}: the store's and the worker's, in one bag. */
export type SQLiteWorkerOptions = Omit<WorkerOptions, "closeStore" | "clock"> & Omit<SQLiteStoreOptions, "clock"> & SQLiteFactoryClock;

/**
 * The store's options inside a factory's bag. The store's `onError` (pool and
 * LISTEN connection failures, `(err, { source })`) is named `storeOnError`
 * there, so that a worker's `onError(err, { phase, taskId })` keeps its name
 * and hears the worker's own errors.
 */
export type PostgresFactoryStoreOptions = Omit<PostgresStoreOptions, "onError" | "logger"> & {
  /** The store's `onError`: background pool and LISTEN failures. @default undefined */
  storeOnError?: PostgresStoreOptions["onError"];
};

/** Options of {@link CairnQ.postgres}: the store's and the client's, in one bag. */
export type PostgresCairnQOptions = CairnQOptions & PostgresFactoryStoreOptions;

/** Options of {@link Worker.postgres}: the store's and the worker's, in one bag. */
export type PostgresWorkerOptions = Omit<WorkerOptions, "closeStore"> & PostgresFactoryStoreOptions;

/** Options of {@link CairnQ.mysql}: the store's and the client's, in one bag. */
export type MySQLCairnQOptions = CairnQOptions & MySQLStoreOptions;

/** Options of {@link Worker.mysql}: the store's and the worker's, in one bag. */
export type MySQLWorkerOptions = Omit<WorkerOptions, "closeStore"> & MySQLStoreOptions;

const SQLITE_STORE_KEYS: readonly string[] = SQLITE_STORE_OPTION_KEYS;
const MYSQL_STORE_KEYS: readonly string[] = MYSQL_STORE_OPTION_KEYS;
/**
 * The store's keys as the factories spell them: `onError` is `storeOnError` there, and `logger` is the
 * role's (the client's or worker's), which the factory hands to the store as well.
 */
const POSTGRES_STORE_KEYS: readonly string[] = POSTGRES_STORE_OPTION_KEYS.filter((key) => key !== "logger").map((key) => (key === "onError" ? "storeOnError" : key));
/** The factories build a worker's store, so they close it: `closeStore` is not theirs to take. */
const FACTORY_WORKER_KEYS: readonly string[] = WORKER_OPTION_KEYS.filter((key) => key !== "closeStore");

/**
 * One key list per factory, the store's and the role's together, so a typo
 * is reported against every option the call takes ("did you mean
 * 'schema'?") instead of being handed to whichever side does not know it.
 */
const FACTORY_KEYS = {
  "CairnQ.sqlite(path, options)": union(SQLITE_STORE_KEYS, CLIENT_OPTION_KEYS),
  "CairnQ.postgres(target, options)": union(POSTGRES_STORE_KEYS, CLIENT_OPTION_KEYS),
  "Worker.sqlite(path, options)": union(SQLITE_STORE_KEYS, FACTORY_WORKER_KEYS),
  "Worker.postgres(target, options)": union(POSTGRES_STORE_KEYS, FACTORY_WORKER_KEYS),
  "CairnQ.mysql(target, options)": union(MYSQL_STORE_KEYS, CLIENT_OPTION_KEYS),
  "Worker.mysql(target, options)": union(MYSQL_STORE_KEYS, FACTORY_WORKER_KEYS),
} as const satisfies Record<string, readonly string[]>;

/** Both lists, each key once (`clock` is the store's and the role's), in order. */
function union(first: readonly string[], second: readonly string[]): readonly string[] {
  return [...new Set([...first, ...second])];
}

/**
 * Routes a SQLite factory's `clock` (see {@link SQLiteFactoryClock}): a
 * `RuntimeClock` goes to the role too, and the store reads its `now()`.
 */
function sqliteClock<R extends object>(parts: { store: SQLiteStoreOptions; rest: R }): { store: SQLiteStoreOptions; rest: R } {
  const clock = parts.store.clock as RuntimeClock | (() => number) | undefined;
  if (clock === undefined || clock === null || typeof clock === "function") return parts;
  return { store: { ...parts.store, clock: () => clock.now() }, rest: { ...parts.rest, clock } };
}

/** Rejects an unknown key with the factory's whole key list, then splits the bag. */
function factoryOptions<S extends object, R extends object>(
  options: S & R,
  what: keyof typeof FACTORY_KEYS,
  storeKeys: readonly string[],
): { store: S; rest: R } {
  return splitOptions<S, R>(checkOptions(options, what, FACTORY_KEYS[what]) as S & R, storeKeys);
}

/** The store of a Postgres factory: its own options, plus the role's `logger` (one logger hears the process). */
function postgresStore(target: PostgresTarget, options: PostgresFactoryStoreOptions, logger: PostgresStoreOptions["logger"]): PostgresStore {
  const { storeOnError, ...rest } = options;
  return new PostgresStore(target, {
    ...rest,
    ...(storeOnError === undefined ? {} : { onError: storeOnError }),
    ...(logger === undefined ? {} : { logger }),
  });
}

/**
 * The pool size `Worker.postgres` gives the store it builds from a connection string when no `max`
 * is given: `min(10, 2 + ceil(concurrency / 4))` — 3 for a worker of concurrency 1 to 4, 10 from 32 up.
 *
 * Why: the worker's own traffic needs about three connections whatever its concurrency — claims
 * (at most two in flight), and heartbeats and settlements batched into one statement in flight per
 * kind. Measured: a concurrency-64 worker draining 10,000 no-op tasks kept at most 2 pooled
 * connections busy (pg_stat_activity sampled every 5 ms) and drained as fast with `max` 2, 4 or 10
 * (3,400–3,900 tasks/s here). What grows with concurrency is what handlers hold: each
 * `ctx.succeedIn` body holds a connection for its transaction (64 such handlers with 5 ms bodies:
 * 334 tasks/s with 10 connections, 290 with 4). Re-measure with a worker at `concurrency: 64` and
 * `claimBatch: 64`, sampling `pg_stat_activity` for its `application_name`.
 */
export function workerPoolSize(concurrency: number | undefined): number {
  const handlers = typeof concurrency === "number" && Number.isFinite(concurrency) && concurrency > 0 ? concurrency : 1;
  return Math.min(10, 2 + Math.ceil(handlers / 4));
}

/** Splits one option bag into the store's part and the rest (the client and worker reject keys they do not know). */
export function splitOptions<S extends object, R extends object>(options: S & R, storeKeys: readonly string[]): { store: S; rest: R } {
  const store: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) (storeKeys.includes(key) ? store : rest)[key] = value;
  return { store: store as S, rest: rest as R };
}

/**
 * The CairnQ client (`@cairnq/client`), with factories that build its store.
 *
 * @example
 * ```ts
 * import { CairnQ } from "cairnq";
 *
 * const cairnq = CairnQ.sqlite("./cairnq.db");
 * const task = await cairnq.submit("thumbnail", { url: "https://example.com/a.png" });
 * const done = await cairnq.wait(task.id);
 * ```
 */
export class CairnQ extends ClientCairnQ {
  /**
   * A client on a SQLite database file (created if absent). The SQLite driver
   * (`driver`: better-sqlite3, node:sqlite or bun:sqlite; without it the first
   * available) is loaded when the store first opens, not when `cairnq` is
   * imported. `close()` closes the store too.
   */
  static sqlite(path: string, options: SQLiteCairnQOptions = {}): CairnQ {
    const { store, rest } = sqliteClock(factoryOptions<SQLiteStoreOptions, CairnQOptions>(options as SQLiteStoreOptions & CairnQOptions, "CairnQ.sqlite(path, options)", SQLITE_STORE_KEYS));
    return new CairnQ(new SQLiteStore(path, store), rest);
  }

  /**
   * A client on Postgres: a connection string (cairnq builds and owns the
   * pool), your `pg.Pool`, or your Kysely instance (never closed by cairnq).
   * The pg driver is loaded when the store first connects. `close()` closes
   * the store, and with it only what the store built.
   */
  static postgres(target: PostgresTarget, options: PostgresCairnQOptions = {}): CairnQ {
    const { store, rest } = factoryOptions<PostgresFactoryStoreOptions, CairnQOptions>(options, "CairnQ.postgres(target, options)", POSTGRES_STORE_KEYS);
    return new CairnQ(postgresStore(target, store, rest.logger), rest);
  }

  /**
   * A client on MySQL/MariaDB: a `mysql://` connection string (cairnq builds and owns the pool), your
   * `mysql2` pool, or your Kysely instance (never closed by cairnq). `mysql2` is loaded when the
   * store is built from a connection string; a missing one fails with `npm install mysql2`.
   * `close()` closes the store, and with it only what the store built.
   *
   * @example
   * ```ts
   * const cairnq = CairnQ.mysql("mysql://app@localhost:3306/app");
   * ```
   */
  static mysql(target: MySQLTarget, options: MySQLCairnQOptions = {}): CairnQ {
    const { store, rest } = factoryOptions<MySQLStoreOptions, CairnQOptions>(options, "CairnQ.mysql(target, options)", MYSQL_STORE_KEYS);
    return new CairnQ(new MySQLStore(target, store), rest);
  }
}

/**
 * The CairnQ worker (`@cairnq/worker`), with factories that build its store.
 *
 * @example
 * ```ts
 * import { Worker } from "cairnq";
 *
 * const worker = Worker.sqlite("./cairnq.db", { concurrency: 8 });
 * worker.task("thumbnail", async (ctx, payload) => ({ ok: true }));
 * await worker.serve(); // until SIGINT/SIGTERM, then drain and close
 * ```
 */
export class Worker extends BaseWorker {
  /** A worker on a SQLite database file; `close()` closes the store it built. */
  static sqlite(path: string, options: SQLiteWorkerOptions = {}): Worker {
    const { store, rest } = sqliteClock(factoryOptions<SQLiteStoreOptions, WorkerOptions>(options as SQLiteStoreOptions & WorkerOptions, "Worker.sqlite(path, options)", SQLITE_STORE_KEYS));
    return new Worker(new SQLiteStore(path, store), { ...rest, closeStore: true });
  }

  /**
   * A worker on Postgres (connection string, `pg.Pool` or Kysely); `close()` closes the store it built.
   * With a connection string and no `max`, the pool is sized for the worker's `concurrency`
   * ({@link workerPoolSize}), not pg's 10.
   */
  static postgres(target: PostgresTarget, options: PostgresWorkerOptions = {}): Worker {
    const { store, rest } = factoryOptions<PostgresFactoryStoreOptions, WorkerOptions>(options, "Worker.postgres(target, options)", POSTGRES_STORE_KEYS);
    const sized = typeof target === "string" && store.max === undefined ? { ...store, max: workerPoolSize(rest.concurrency) } : store;
    return new Worker(postgresStore(target, sized, rest.logger), { ...rest, closeStore: true });
  }

  /**
   * A worker on MySQL/MariaDB (connection string, `mysql2` pool or Kysely); `close()` closes the store
   * it built. With a connection string and no `max`, the pool is sized for the worker's `concurrency`
   * ({@link workerPoolSize}), as on Postgres. MySQL has no push channel: an idle worker checks for new work at intervals growing with its idle time (`MySQLWakeups`).
   *
   * @example
   * ```ts
   * const worker = Worker.mysql("mysql://app@localhost:3306/app", { concurrency: 8 });
   * ```
   */
  static mysql(target: MySQLTarget, options: MySQLWorkerOptions = {}): Worker {
    const { store, rest } = factoryOptions<MySQLStoreOptions, WorkerOptions>(options, "Worker.mysql(target, options)", MYSQL_STORE_KEYS);
    const sized = typeof target === "string" && store.max === undefined ? { ...store, max: workerPoolSize(rest.concurrency) } : store;
    return new Worker(new MySQLStore(target, sized), { ...rest, closeStore: true });
  }

  /** A worker over any store; it does not close a store it did not build. */
  constructor(store: TaskStore, options?: WorkerOptions) {
    super(store, options);
  }
}
