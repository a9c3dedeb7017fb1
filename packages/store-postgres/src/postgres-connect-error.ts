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
