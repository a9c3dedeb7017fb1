import { DatabaseUnusable, SerializationError } from "@cairnq/protocol";
import { brandErrorClass } from "@cairnq/protocol/adapter";

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
  const failure = new Error(`could not open a connection to MySQL at ${address} (${cause.message}): ${why}. The statement was not sent, so nothing was written`, { cause });
  failure.name = "MySQLConnectError";
  if (code !== undefined) (failure as Error & { code?: unknown }).code = code;
  return failure;
}
