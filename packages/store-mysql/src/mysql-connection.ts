import { InvalidArgument } from "@cairnq/protocol";
import { requireInt } from "@cairnq/protocol/adapter";
import type { AnyKysely } from "@cairnq/store-kysely";
import { Kysely, MysqlDialect } from "kysely";
import { parseConnectionString } from "./mysql-connection-string.js";
import type { MySQLPool, MySQLPoolConnection } from "./mysql-driver.js";
import { loadMySQLDriver } from "./mysql-driver.js";
import { GuardedPool } from "./mysql-guarded-pool.js";

/** What a MySQL store runs on: a connection string, a `mysql2` pool (callback API) you own, or a Kysely instance you own. */
export type MySQLTarget = string | MySQLPool | AnyKysely;

/**
 * The session settings of every connection of a pool the store builds:
 * times in UTC (nothing the store writes depends on it, the clock is
 * `UTC_TIMESTAMP`, but an operator reading `NOW()` beside the rows should not
 * be misled), `NO_BACKSLASH_ESCAPES` taken out of `sql_mode` (the driver
 * binds a value by escaping its quotes and backslashes with backslashes: with
 * the mode, a server keeps them, and every JSON value holding a quote is
 * written as text that is not its JSON), and `READ COMMITTED`, the isolation the core's transactions
 * assume of a server (Postgres' default; MySQL's is `REPEATABLE READ`, whose
 * gap locks turn concurrent claims into deadlocks). A pool or Kysely instance
 * you pass keeps its own settings.
 */
export const SESSION_SETUP: readonly string[] = Object.freeze([
  "SET SESSION time_zone = '+00:00', sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','))",
  "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
]);

/** The store's Kysely instance and whether the store owns it (built it from a connection string). */
export class MySQLConnection {
  readonly db: AnyKysely;
  readonly owned: boolean;
  /** The connections take several statements per query: the store built the pool. */
  readonly multipleStatements: boolean;

  /**
   * @param target - See {@link MySQLTarget}.
   * @param max - Pool size when the store builds the pool.
   */
  constructor(target: MySQLTarget, max: number | undefined) {
    if (typeof target === "string") {
      const { options, address } = parseConnectionString(target);
      // Checked here, as the Postgres store does: the pool is built on the first statement, and a bad size found there would fail every call instead of the construction.
      const size = max === undefined ? 10 : requireInt(max, "max", 1);
      this.db = new Kysely({ dialect: new MysqlDialect({ pool: () => Promise.resolve().then(() => new GuardedPool(buildPool(options, size), true, address).asKyselyPool()) }) });
      this.owned = true;
      this.multipleStatements = true;
    } else if (isKysely(target)) {
      if (max !== undefined) throw new InvalidArgument("max", "max sizes a pool the store builds; size your Kysely instance's pool where you create it");
      this.db = target;
      this.owned = false;
      this.multipleStatements = false;
    } else if (typeof target === "object" && target !== null && typeof target.getConnection === "function") {
      if (max !== undefined) throw new InvalidArgument("max", "max sizes a pool the store builds; size your pool where you create it");
      // Guarded like the store's own (statements over max_allowed_packet refused, broken connections destroyed); never ended.
      this.db = new Kysely({ dialect: new MysqlDialect({ pool: new GuardedPool(target, false, null).asKyselyPool() }) });
      this.owned = true;
      this.multipleStatements = false;
    } else {
      throw new InvalidArgument("target", "new MySQLStore(target) takes a mysql:// connection string, a mysql2 pool (require('mysql2').createPool) or a Kysely instance");
    }
  }
}

function isKysely(value: unknown): value is AnyKysely {
  return value instanceof Kysely || (typeof value === "object" && value !== null && typeof (value as { executeQuery?: unknown }).executeQuery === "function" && typeof (value as { transaction?: unknown }).transaction === "function");
}

function buildPool(connection: Readonly<Record<string, unknown>>, max: number): MySQLPool {
  const pool = loadMySQLDriver().createPool({
    ...connection,
    connectionLimit: max,
    // SUM() and other DECIMAL results as numbers, as the other stores' drivers give them.
    decimalNumbers: true,
    supportBigNumbers: true,
    // A plan of several statements (an UPDATE … RETURNING's update and read-back) goes in one round
    // trip. Only on the store's own pool; the statements are the core's, with every value bound.
    multipleStatements: true,
    charset: "UTF8MB4_BIN",
  });
  pool.on("connection", (connection: MySQLPoolConnection) => {
    for (const sql of SESSION_SETUP) connection.query(sql);
  });
  // An idle connection holds no process open (what pg's allowExitOnIdle does for the Postgres store's
  // pool): its socket is unreferenced while it sits in the free list, referenced again when handed out.
  // mysql2 emits `release` only when a connection goes to the free list (one handed straight to a queued
  // caller stays referenced) and `acquire` whenever one is handed out; a new connection's socket starts referenced.
  pool.on("release", (connection: MySQLPoolConnection) => holdProcess(connection, false));
  pool.on("acquire", (connection: MySQLPoolConnection) => holdProcess(connection, true));
  return pool;
}

/** The socket of a `mysql2` connection (`stream`: a `net.Socket`, or the `TLSSocket` over it once TLS starts, whose `ref`/`unref` reach the TCP handle). */
interface ReferencedSocket {
  ref?(): unknown;
  unref?(): unknown;
}

/** References (`hold`) or unreferences the socket of a pooled connection, so that only a connection in use keeps the process alive. */
function holdProcess(connection: MySQLPoolConnection, hold: boolean): void {
  const stream = (connection as { stream?: ReferencedSocket | null }).stream;
  if (stream === undefined || stream === null) return;
  if (hold) stream.ref?.();
  else stream.unref?.();
}
