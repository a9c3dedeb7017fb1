import { DatabaseUnusable, SerializationError } from "@cairnq/protocol";
import { brandErrorClass } from "@cairnq/protocol/adapter";
import { lostInFlightMessage, namedDriverError } from "@cairnq/runtime";

/**
 * A statement larger than the server's `max_allowed_packet`, refused by the
 * store before it is sent: nothing was written. Sent, MySQL/MariaDB would
 * answer "Got a packet bigger than 'max_allowed_packet' bytes" and drop the
 * connection. A `SerializationError` — a value the database cannot store —
 * so retrying does not help, and a worker whose handler returned such a
 * result fails that task (`unserializable_result`) instead of leaving it
 * `running` until its lease expires.
 *
 * @example
 * ```ts
 * try {
 *   await store.submit({ name: "ingest", payload: { blob } });
 * } catch (err) {
 *   if (err instanceof StatementTooLarge) console.log(err.statementBytes, err.maxAllowedPacket);
 * }
 * ```
 */
export class StatementTooLarge extends SerializationError {
  static {
    brandErrorClass(this, "cairnq.mysql.StatementTooLarge", "StatementTooLarge");
  }

  /** The statement's size in bytes, as it would have been sent (its values bound into the text). */
  readonly statementBytes: number;
  /** The server's `max_allowed_packet`, read when the store first connected. */
  readonly maxAllowedPacket: number;

  constructor(statementBytes: number, maxAllowedPacket: number) {
    const reason =
      `the statement carrying it would be ${statementBytes} bytes, not under the server's max_allowed_packet (${maxAllowedPacket} bytes), ` +
      "so it was not sent and nothing was written; keep large values out of payloads, results and step results (store them elsewhere " +
      "and pass a reference), or raise max_allowed_packet on the server";
    super("statement", reason, { message: `cannot send a value to MySQL: ${reason}` });
    this.statementBytes = statementBytes;
    this.maxAllowedPacket = maxAllowedPacket;
  }
}

/** The server's answers to a connect that retrying cannot fix: no such database, and a refused login or database grant. */
const UNUSABLE_CODES: Readonly<Record<string, "database" | "login">> = {
  ER_BAD_DB_ERROR: "database", // 1049 Unknown database
  ER_ACCESS_DENIED_ERROR: "login", // 1045 Access denied for user
  ER_DBACCESS_DENIED_ERROR: "login", // 1044 Access denied for user to database
  ER_ACCESS_DENIED_NO_PASSWORD_ERROR: "login", // 1698 Access denied (MariaDB, for a user its auth plugin refuses)
};

/**
 * The connect failures retrying cannot fix until the configuration or the
 * server changes, as a fatal {@link DatabaseUnusable} (so a worker stops, as
 * for a schema mismatch, instead of retrying forever): the database does not
 * exist (1049), or the server refused the login (1045, 1698) or the
 * database (1044). `null` for any other error. `address` is `host:port` when known.
 */
export function unusableServer(error: unknown, address: string | null): DatabaseUnusable | null {
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  const kind = typeof code === "string" ? UNUSABLE_CODES[code] : undefined;
  if (kind === undefined) return null;
  const named = /database '([^']*)'/i.exec(error.message)?.[1] ?? null;
  const what = named === null ? "the database" : `database '${named}'`;
  const reason =
    kind === "database"
      ? `the server has no ${what}: create it (CREATE DATABASE), then run cairnq migrate on it; or fix the database name in the connection string`
      : `the server refused the login${named === null ? "" : ` to ${what}`}: check the user and password in the connection string and the user's grants`;
  const at = address === null ? "" : ` at ${address}`;
  const failure = new DatabaseUnusable(named ?? (address ?? "(unnamed)"), reason, {
    message: `could not open a connection to MySQL${at} (${error.message}): ${reason}. Nothing was written; retrying cannot help until that changes, so a worker stops`,
    cause: error,
  });
  (failure as DatabaseUnusable & { code?: unknown }).code = code;
  return failure;
}

/**
 * A connection the pool could not open, said plainly: where (`host:port`,
 * never the password), the driver's words (kept as `cause`, its `code`
 * copied), that nothing was written, and what to do. Raw, an unreachable
 * host fails after mysql2's `connectTimeout` with a bare `connect ETIMEDOUT`.
 * Not a `CairnQError`: it stays transient, so a worker retries it with
 * backoff — except a missing database or a refused login
 * ({@link unusableServer}), which are fatal.
 */
export function connectFailure(error: unknown, address: string): Error {
  const unusable = unusableServer(error, address);
  if (unusable !== null) return unusable;
  const cause = error instanceof Error ? error : new Error(String(error));
  const code = (cause as { code?: unknown }).code;
  const why =
    code === "ETIMEDOUT"
      ? "the server did not answer within connectTimeout (mysql2's default 10000 ms; set ?connectTimeout=<ms> on the connection string)"
      : code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EHOSTUNREACH"
        ? "the server is down, restarting or not reachable there"
        : "the server refused the connection";
  return namedDriverError("MySQLConnectError", `could not open a connection to MySQL at ${address} (${cause.message}): ${why}. The statement was not sent, so nothing was written`, cause, ["code"]);
}

/** The name of {@link connectionLost}'s and {@link connectionGone}'s errors. */
export const CONNECTION_LOST = "MySQLConnectionLost";

/**
 * Server errors that end the session as they answer: MariaDB's ER_CONNECTION_KILLED (1927, a `KILL`
 * of the connection), ER_SERVER_SHUTDOWN (1053) and MySQL's ER_CLIENT_INTERACTION_TIMEOUT (4031, an
 * idle session closed by `wait_timeout`).
 */
const SESSION_ENDING_ERRNOS: ReadonlySet<number> = new Set([1927, 1053, 4031]);
/** `mysql2`'s and the socket's codes of a connection that ended under a statement. */
const LOST_CODES: ReadonlySet<string> = new Set(["PROTOCOL_CONNECTION_LOST", "ECONNRESET", "EPIPE", "ERR_STREAM_WRITE_AFTER_END", "ERR_STREAM_DESTROYED"]);

/**
 * Whether `error` says the connection ended while a statement was in flight: `mysql2`'s "Connection
 * lost: The server closed the connection." (`PROTOCOL_CONNECTION_LOST`), a socket reset or broken pipe,
 * or a server error that ends the session ({@link SESSION_ENDING_ERRNOS}). Not a refused connect
 * (nothing was sent: {@link connectFailure}) nor an error the server answered while the session lives on.
 */
export function lostInFlight(error: unknown): error is Error {
  if (!(error instanceof Error) || error.name === CONNECTION_LOST) return false;
  const { code, errno } = error as { code?: unknown; errno?: unknown };
  return (typeof code === "string" && LOST_CODES.has(code)) || (typeof errno === "number" && SESSION_ENDING_ERRNOS.has(errno));
}

/** A {@link CONNECTION_LOST} error: `cause` kept, its `code` and `errno` copied, `fatal` (as `mysql2` marks a lost connection: a combined write is never re-sent in halves). */
function named(message: string, cause: Error): Error {
  return namedDriverError(CONNECTION_LOST, message, cause, ["code", "errno"], { fatal: true });
}

/**
 * A connection lost while a statement was in flight, said plainly: the driver's words (kept as `cause`,
 * its `code` copied) and that the outcome is unknown — the server may have applied the statement (a lone
 * statement commits on its own; a `COMMIT` may have landed) or not. Raw, a submit made as its connection
 * is killed fails with a bare "Connection lost: The server closed the connection." Not a `CairnQError`:
 * it stays transient, so a worker retries it with backoff (its settlements are fenced by the lease; a
 * retried claim finds the task taken).
 */
export function connectionLost(error: Error): Error {
  return named(lostInFlightMessage("MySQL", error), error);
}

/**
 * A statement not sent because its connection had been lost after an earlier statement of the same
 * checkout (a transaction's, say): nothing of this statement reached the server, and a transaction open
 * on that connection ended uncommitted with its session. A fresh connection cannot take it over (the
 * earlier statements' session state is gone), so the call fails, transient as {@link connectionLost}.
 */
export function connectionGone(error: Error): Error {
  return named(
    `the connection to MySQL was lost before this statement was sent (${error.message}): it was not sent, and a transaction open on that ` +
      "connection was rolled back by the server as the session ended (statements it committed earlier stay); retry the call (a worker retries by itself)",
    error,
  );
}
