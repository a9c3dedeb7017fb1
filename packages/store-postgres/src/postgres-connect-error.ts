import { DatabaseUnusable } from "@cairnq/protocol";
import { lostInFlightMessage, namedDriverError } from "@cairnq/runtime";

/** SQLSTATE `invalid_catalog_name`: the database named in the connection does not exist. */
export const INVALID_CATALOG_NAME = "3D000";
/** SQLSTATEs of a refused login: `invalid_authorization_specification` (no such role, no pg_hba.conf entry) and `invalid_password`. */
export const LOGIN_REFUSED: readonly string[] = ["28000", "28P01"];

/**
 * The connect failures retrying cannot fix until the configuration or the
 * server changes, as a fatal {@link DatabaseUnusable} (so a worker stops, as
 * for a schema mismatch, instead of retrying forever): the database does not
 * exist (3D000), or the server refused the login (28000, 28P01). `null` for
 * any other error. `database` names the database the connection asked for,
 * when known.
 */
export function unusableServer(error: unknown, database: string | null): DatabaseUnusable | null {
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  if (code !== INVALID_CATALOG_NAME && !LOGIN_REFUSED.includes(code as string)) return null;
  const named = code === INVALID_CATALOG_NAME ? (/database "([^"]*)"/.exec(error.message)?.[1] ?? database) : database;
  const what = named === null ? "the database" : `database "${named}"`;
  const reason =
    code === INVALID_CATALOG_NAME
      ? `the server has no ${what}: create it (CREATE DATABASE, or createdb), then run cairnq migrate on it; or fix the database name in the connection string`
      : `the server refused the login: check the user and password in the connection string (or PGUSER/PGPASSWORD) and the server's pg_hba.conf`;
  const failure = new DatabaseUnusable(named ?? "(unnamed)", reason, {
    message: `could not open a connection to Postgres (${error.message}, SQLSTATE ${String(code)}): ${reason}. Nothing was written; retrying cannot help until that changes, so a worker stops`,
    cause: error,
  });
  (failure as DatabaseUnusable & { code?: unknown }).code = code;
  return failure;
}

/** SQLSTATE `too_many_connections`: the server's `max_connections`, a role's or a database's `CONNECTION LIMIT` is reached. */
export const TOO_MANY_CONNECTIONS = "53300";

/**
 * A connection the pool could not open, said plainly: the driver's words
 * (kept as `cause`, its `code` copied), that nothing was written, and what
 * to do. Raw, a submit made while the server restarts fails with a bare
 * `connect ECONNREFUSED 127.0.0.1:5432` or `the database system is
 * shutting down`. Not a `CairnQError`: it stays transient, so a worker
 * retries it with backoff — except a missing database or a refused login
 * ({@link unusableServer}), which are fatal. A server out of connection
 * slots (53300) is up and answering, so it is told apart from one that is
 * down: connections free up as other clients close theirs, so it stays
 * transient too.
 */
export function connectFailure(error: unknown, database: string | null = null): Error {
  const unusable = unusableServer(error, database);
  if (unusable !== null) return unusable;
  const cause = error instanceof Error ? error : new Error(String(error));
  const code = (cause as { code?: unknown }).code;
  const { why, retry } = connectFailureWords(cause.message, code);
  return namedDriverError("PostgresConnectError", `could not open a connection to Postgres (${cause.message}): ${why}. The statement was not sent, so nothing was written${retry}`, cause, ["code"]);
}

/** Why a connect failed (the driver's `message` and SQLSTATE `code`) and the retry hint that ends the message (none for a pooler's refusal). */
function connectFailureWords(message: string, code: unknown): { why: string; retry: string } {
  const answers = "; retry once the server answers (a worker retries by itself, with backoff)";
  if (/unsupported startup parameter/i.test(message)) {
    return {
      why:
        "a connection pooler in front of the server (PgBouncer in transaction mode, for one) refuses that startup parameter. " +
        "CairnQ sends `options` only to set search_path for the `schema` option with a connection string: behind such a pooler " +
        "set search_path on the role or database (ALTER ROLE … SET search_path = …) and leave `schema` out, or give your own pg.Pool " +
        "with `schema` (then only checked); and remove any `options` from the connection string",
      retry: "",
    };
  }
  if (code === "57P03") return { why: "the server is starting up or shutting down", retry: answers };
  if (code === TOO_MANY_CONNECTIONS) {
    return {
      why:
        "the server is up but its connection budget is spent (SQLSTATE 53300: its max_connections, or the CONNECTION LIMIT of the role or the database, is reached). " +
        "Open fewer connections: fewer or smaller pools (the `max` option; a worker needs about three whatever its concurrency), " +
        "`listen: false` where push wakeups are not needed, or a transaction-mode pooler in front (see \"Running many workers\" in the @cairnq/store-postgres README); " +
        "or raise the server's max_connections or the role's limit (ALTER ROLE … CONNECTION LIMIT …)",
      retry: "; retry once connections free up (a worker retries by itself, with backoff)",
    };
  }
  if (/timeout/i.test(message)) return { why: "the server did not answer within connectTimeoutMs", retry: answers };
  return { why: "the server is down, restarting or not reachable there", retry: answers };
}

/**
 * Whether `code` is a SQLSTATE the server sends as it ends the session itself: class 57P, each raised
 * FATAL — 57P01 `admin_shutdown` (`pg_terminate_backend`, or a fast shutdown or restart: `pg_ctl stop`'s
 * default mode), 57P02 `crash_shutdown` (another backend crashed), 57P03 `cannot_connect_now`, 57P04
 * `database_dropped`, 57P05 `idle_session_timeout`. Not 57014 `query_canceled` (class 57, but the session
 * lives on: a statement timeout or a cancel, answered like any other statement error).
 */
export function endsSession(code: unknown): boolean {
  return typeof code === "string" && code.startsWith("57P");
}

/**
 * Whether `error` says the connection ended while a statement was in flight: pg's `Connection terminated
 * unexpectedly` (the socket closed with no error from the server: a crash, an immediate shutdown, a cut
 * network path), a socket reset, or the server ending the session with a FATAL error ({@link endsSession}:
 * a fast shutdown or restart sends 57P01 to every backend). Not a refused or failed connect (nothing was
 * sent: {@link connectFailure}) nor an error the server answered while the session lives on.
 */
export function lostInFlight(error: unknown): error is Error {
  if (!(error instanceof Error) || error.name === CONNECTION_LOST) return false;
  const code = (error as { code?: unknown }).code;
  return error.message === "Connection terminated unexpectedly" || code === "ECONNRESET" || code === "EPIPE" || endsSession(code);
}

/** The name of {@link connectionLost}'s errors. */
export const CONNECTION_LOST = "PostgresConnectionLost";

/**
 * A connection lost while a statement was in flight, said plainly: the driver's words (kept as `cause`, its
 * `code` copied) and that the outcome is unknown — the server may have applied the statement (a lone
 * statement commits on its own; a `COMMIT` may have landed) or not. Raw, a submit made as the server stops
 * fails with a bare `Connection terminated unexpectedly`, or with the server's own `terminating connection due to
 * administrator command` (57P01) on a fast shutdown or a `pg_terminate_backend`. Not a `CairnQError`: it stays transient, so a worker
 * retries it with backoff (its settlements are fenced by the lease; a retried claim finds the task taken).
 */
export function connectionLost(error: Error): Error {
  return namedDriverError(CONNECTION_LOST, lostInFlightMessage("Postgres", error), error, ["code"]);
}

/** SQLSTATEs of a named prepared statement the session does not hold as the client believes: `invalid_sql_statement_name` (gone) and `duplicate_prepared_statement` (there already). */
const LOST_PREPARED = new Set(["26000", "42P05"]);
/** The names the store gives its prepared statements (`postgres-prepared.ts`): an application's own are left alone. */
const STORE_PREPARED = /prepared statement "cairnq_\d+"/;
const PREPARED_HINT =
  "; CairnQ sends its statements as named prepared statements, and this session does not keep them between transactions — " +
  "behind a transaction-mode pooler that cannot (PgBouncer before 1.21 or without max_prepared_statements, Supavisor, RDS Proxy) set the store's option preparedStatements: false";

/**
 * A failed statement's error as the store rethrows it: a connection lost in flight said plainly
 * ({@link connectionLost}); one of the store's prepared statements missing (26000) or already there (42P05) —
 * what a transaction-mode pooler that hands each transaction another server session answers — with the
 * `preparedStatements: false` hint added to the driver's own error (its class and `code` kept); any other
 * error as it is.
 */
export function statementFailure(error: Error): Error;
export function statementFailure(error: unknown): unknown;
export function statementFailure(error: unknown): unknown {
  if (lostInFlight(error)) return connectionLost(error);
  if (error instanceof Error && LOST_PREPARED.has((error as { code?: unknown }).code as string) && STORE_PREPARED.test(error.message) && !error.message.endsWith(PREPARED_HINT)) {
    error.message += PREPARED_HINT;
  }
  return error;
}
