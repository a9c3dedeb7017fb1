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
  const startup = /unsupported startup parameter/i.test(cause.message);
  const why = startup
    ? "a connection pooler in front of the server (PgBouncer in transaction mode, for one) refuses that startup parameter. " +
      "CairnQ sends `options` only to set search_path for the `schema` option with a connection string: behind such a pooler " +
      "set search_path on the role or database (ALTER ROLE … SET search_path = …) and leave `schema` out, or give your own pg.Pool " +
      "with `schema` (then only checked); and remove any `options` from the connection string"
    : code === "57P03"
      ? "the server is starting up or shutting down"
      : /timeout/i.test(cause.message)
        ? "the server did not answer within connectTimeoutMs"
        : "the server is down, restarting or not reachable there";
  const failure = new Error(
    `could not open a connection to Postgres (${cause.message}): ${why}. The statement was not sent, so nothing was written` +
      (startup ? "" : "; retry once the server answers (a worker retries by itself, with backoff)"),
    { cause },
  );
  failure.name = "PostgresConnectError";
  if (code !== undefined) (failure as Error & { code?: unknown }).code = code;
  return failure;
}

/**
 * Whether `error` says the connection ended while a statement was in flight: pg's `Connection terminated
 * unexpectedly` (the socket closed with no error from the server: a crash, an immediate shutdown, a cut
 * network path) or a socket reset. Not a refused or failed connect (nothing was sent: {@link connectFailure})
 * nor an error the server answered with (it has a SQLSTATE).
 */
export function lostInFlight(error: unknown): error is Error {
  if (!(error instanceof Error) || error.name === CONNECTION_LOST) return false;
  const code = (error as { code?: unknown }).code;
  return error.message === "Connection terminated unexpectedly" || code === "ECONNRESET" || code === "EPIPE";
}

/** The name of {@link connectionLost}'s errors. */
export const CONNECTION_LOST = "PostgresConnectionLost";

/**
 * A connection lost while a statement was in flight, said plainly: the driver's words (kept as `cause`, its
 * `code` copied) and that the outcome is unknown — the server may have applied the statement (a lone
 * statement commits on its own; a `COMMIT` may have landed) or not. Raw, a submit made as the server stops
 * fails with a bare `Connection terminated unexpectedly`. Not a `CairnQError`: it stays transient, so a worker
 * retries it with backoff (its settlements are fenced by the lease; a retried claim finds the task taken).
 */
export function connectionLost(error: Error): Error {
  const failure = new Error(
    `the connection to Postgres ended while a statement was in flight (${error.message}): the server may or may not have applied it. ` +
      "Read before writing again, or retry a submit with a key (a keyed submit is idempotent); a worker retries by itself",
    { cause: error },
  );
  failure.name = CONNECTION_LOST;
  const code = (error as { code?: unknown }).code;
  if (code !== undefined) (failure as Error & { code?: unknown }).code = code;
  return failure;
}
