/**
 * The pool Kysely's `MysqlDialect` is given, in front of a `mysql2` pool.
 *
 * Words used here:
 * - **statement size**: the bytes of a query as `mysql2` sends it, its values
 *   bound into the text (`mysql2` formats client-side for `query`).
 * - **limit**: the server's `max_allowed_packet`, read once, on the first
 *   connection handed out. A statement larger than it would be refused and
 *   the connection dropped by the server.
 * - **broken connection**: one the server refused a packet on (errno 1153),
 *   one `mysql2` marked `fatal`, or one whose socket is closing or gone.
 *   Released to `mysql2`, it would go back to the free list before its
 *   socket's close is seen, and the next call on it fails with
 *   `write ECONNRESET` or "Can't add new command when connection is in
 *   closed state": it is destroyed instead, and never handed out.
 * - **lost connection**: one that ended under a statement in flight. Its
 *   error becomes a `MySQLConnectionLost` (`connectionLost`: the outcome is
 *   unknown). One found lost before a statement is sent (the loss seen after
 *   the connection was handed out) sends nothing: the first statement of a
 *   checkout moves, once, to a fresh connection; a later one fails with a
 *   `MySQLConnectionLost` saying it was not sent (`connectionGone`), except
 *   a `ROLLBACK`, which succeeds (the server rolled the session's
 *   transaction back as it ended), so the error that broke the transaction
 *   is the one its caller sees, not mysql2's "Can't add new command when
 *   connection is in closed state".
 */
import type { MysqlPool } from "kysely";
import type { MySQLPool, MySQLPoolConnection } from "./mysql-driver.js";
import { connectFailure, connectionGone, connectionLost, lostInFlight, StatementTooLarge, unusableServer } from "./mysql-errors.js";

/** MySQL's ER_NET_PACKET_TOO_LARGE: the server read a packet over `max_allowed_packet` and closes the connection. */
const ER_NET_PACKET_TOO_LARGE = 1153;

/** The parts of a `mysql2` connection the guard reads beyond {@link MySQLPoolConnection}; all optional (a pool you pass may differ). */
interface DriverConnection extends MySQLPoolConnection {
  destroy?(): void;
  format?(sql: string, values: readonly unknown[]): string;
  _closing?: boolean;
  _fatalError?: unknown;
  _protocolError?: unknown;
  stream?: { destroyed?: boolean; readableEnded?: boolean; writableEnded?: boolean };
}

type QueryCallback = (error: unknown, result: unknown) => void;

/** See the module comment. `owned`: `end()` ends the `mysql2` pool (the store built it), else leaves it to its owner. */
export class GuardedPool {
  #limit: number | null = null;
  #reading: Promise<void> | null = null;

  /**
   * @param pool - The `mysql2` pool (callback API).
   * @param owned - The store built it: `end()` ends it.
   * @param address - `host:port`, named in connect errors; `null` for a pool you pass.
   */
  constructor(
    private readonly pool: MySQLPool,
    private readonly owned: boolean,
    private readonly address: string | null,
  ) {}

  /** The server's `max_allowed_packet` once read, else `null`. */
  get maxAllowedPacket(): number | null {
    return this.#limit;
  }

  getConnection(callback: (error: unknown, connection: MySQLPoolConnection) => void): void {
    this.#usable((error, connection) => {
      if (error !== null) callback(error, connection as MySQLPoolConnection);
      else callback(null, new GuardedConnection(connection as DriverConnection, this.#limit, (replaced) => this.#usable(replaced)));
    });
  }

  /** A usable driver connection from the pool, the limit read: a connection closed since it was released (its close seen late) is destroyed, a fresh one in its place. */
  #usable(callback: (error: unknown, connection: DriverConnection | undefined) => void): void {
    this.pool.getConnection((error, raw) => {
      if (error !== null && error !== undefined) {
        callback(this.address === null ? (unusableServer(error, null) ?? error) : connectFailure(error, this.address), raw);
        return;
      }
      const connection = raw as DriverConnection;
      if (unusable(connection)) {
        connection.destroy?.();
        this.#usable(callback);
        return;
      }
      this.#readLimit(connection).then(
        () => callback(null, connection),
        (readError: unknown) => {
          connection.destroy?.();
          callback(readError, connection);
        },
      );
    });
  }

  end(callback: (error: unknown) => void): void {
    if (this.owned) this.pool.end(callback);
    else callback(null);
  }

  /** Reads `max_allowed_packet` on `connection` the first time a connection is handed out. */
  #readLimit(connection: DriverConnection): Promise<void> {
    if (this.#limit !== null) return Promise.resolve();
    this.#reading ??= new Promise<void>((resolve, reject) => {
      connection.query("SELECT @@SESSION.max_allowed_packet AS m", (error, rows) => {
        if (error !== null && error !== undefined) {
          this.#reading = null;
          reject(error instanceof Error ? error : new Error("could not read max_allowed_packet", { cause: error }));
          return;
        }
        const value = Number((rows as { m?: unknown }[] | undefined)?.[0]?.m);
        if (Number.isFinite(value) && value > 0) this.#limit = value;
        resolve();
      });
    });
    return this.#reading;
  }

  /** Kysely's pool type (it calls `getConnection` and `end` only). */
  asKyselyPool(): MysqlPool {
    return this as unknown as MysqlPool;
  }
}

/** A pooled connection that refuses statements over the limit, names lost connections and destroys itself on release when broken (see the module comment). */
class GuardedConnection implements MySQLPoolConnection {
  #broken = false;
  /** A statement was sent on this checkout: the session holds its state, so a lost connection cannot be swapped. */
  #sent = false;
  /** The checkout moved to a fresh connection once already. */
  #replaced = false;

  constructor(
    private raw: DriverConnection,
    private readonly limit: number | null,
    private readonly replacement: (callback: (error: unknown, connection: DriverConnection | undefined) => void) => void,
  ) {}

  query(sql: string, parameters: readonly unknown[], callback: QueryCallback): unknown;
  query(sql: string, callback?: QueryCallback): unknown;
  query(sql: string, second?: readonly unknown[] | QueryCallback, third?: QueryCallback): unknown {
    const parameters = typeof second === "function" || second === undefined ? [] : second;
    const callback = typeof second === "function" ? second : third;
    if (this.limit !== null) {
      const bytes = statementBytes(this.raw, sql, parameters, this.limit);
      if (bytes !== null) {
        const error = new StatementTooLarge(bytes, this.limit);
        if (callback !== undefined) process.nextTick(callback, error, undefined);
        return undefined;
      }
    }
    if (unusable(this.raw)) {
      this.#notSent(sql, parameters, callback, lossOf(this.raw));
      return undefined;
    }
    const first = !this.#sent;
    this.#sent = true;
    return this.raw.query(sql, parameters, (error, result) => {
      if (error === null || error === undefined) return callback?.(error, result);
      if (breaks(error)) this.#broken = true;
      if (closedState(error)) {
        // mysql2 refused the command before writing it: nothing was sent.
        this.#sent = !first;
        this.#notSent(sql, parameters, callback, error);
        return;
      }
      callback?.(lostInFlight(error) ? connectionLost(error) : error, result);
    });
  }

  /** `sql` was not sent: its connection is lost. See the module comment. */
  #notSent(sql: string, parameters: readonly unknown[], callback: QueryCallback | undefined, loss: Error): void {
    this.#broken = true;
    if (/^\s*rollback\s*;?\s*$/i.test(sql)) {
      if (callback !== undefined) process.nextTick(callback, null, { affectedRows: 0, insertId: 0 });
      return;
    }
    if (this.#sent || this.#replaced) {
      if (callback !== undefined) process.nextTick(callback, connectionGone(loss), undefined);
      return;
    }
    this.#replaced = true;
    this.raw.destroy?.();
    this.replacement((error, fresh) => {
      if (error !== null || fresh === undefined) {
        callback?.(error, undefined);
        return;
      }
      this.raw = fresh;
      this.#broken = false;
      this.query(sql, parameters, callback as QueryCallback);
    });
  }

  release(): void {
    if (this.#broken || unusable(this.raw)) this.raw.destroy?.();
    else this.raw.release();
  }
}

/**
 * The size of `sql` with `parameters` bound when it exceeds `limit`, else `null`. A bound of 3 bytes per
 * UTF-16 unit (UTF-8 of one unit is at most 3 bytes; an escaped ASCII character is 2) decides the usual
 * case with one pass over the lengths; only a statement that bound does not clear is formatted (the
 * driver's own `format`, what it would send) and measured. The server counts the command byte too.
 */
function statementBytes(connection: DriverConnection, sql: string, parameters: readonly unknown[], limit: number): number | null {
  if (1 + 3 * sql.length + roughBytes(parameters) < limit) return null;
  const text = connection.format === undefined ? null : connection.format(sql, parameters);
  const bytes = text === null ? 1 + Buffer.byteLength(sql) + roughBytes(parameters) : 1 + Buffer.byteLength(text);
  return bytes >= limit ? bytes : null;
}

function roughBytes(values: readonly unknown[]): number {
  let bytes = 0;
  for (const value of values) {
    if (typeof value === "string") bytes += 3 * value.length + 2;
    else if (value instanceof Uint8Array) bytes += 2 * value.byteLength + 3;
    else if (Array.isArray(value)) bytes += roughBytes(value) + 2 * value.length;
    else bytes += 64;
  }
  return bytes;
}

function breaks(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { errno, fatal } = error as { errno?: unknown; fatal?: unknown };
  return errno === ER_NET_PACKET_TOO_LARGE || fatal === true;
}

/** Closing or closed on our side, failed, or ended by the server (its end of the socket read: a MySQL server never reads on after closing its side). */
function unusable(connection: DriverConnection): boolean {
  const stream = connection.stream;
  return (
    connection._closing === true ||
    Boolean(connection._fatalError) ||
    Boolean(connection._protocolError) ||
    stream?.destroyed === true ||
    stream?.readableEnded === true ||
    stream?.writableEnded === true
  );
}

/** What ended an {@link unusable} connection, for the error's `cause`. */
function lossOf(connection: DriverConnection): Error {
  const known = connection._fatalError ?? connection._protocolError;
  return known instanceof Error ? known : new Error("the connection was closed");
}

/** mysql2's refusal of a command on a connection it already closed: nothing was written. */
function closedState(error: unknown): error is Error {
  return error instanceof Error && error.message === "Can't add new command when connection is in closed state";
}
