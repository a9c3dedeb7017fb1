/**
 * The stores' driver-error wrappers (`PostgresConnectionLost`, `MySQLConnectionLost`, `PostgresConnectError`,
 * `MySQLConnectError`): plain `Error`s, not `CairnQError`s, so they stay transient and a worker retries them with backoff.
 */

/**
 * An `Error` named `name` with `message`, the driver's error as `cause` and its `fields` (`code`, `errno`, …)
 * copied when the driver set them, and `extra` set on it.
 */
export function namedDriverError(name: string, message: string, cause: Error, fields: readonly string[], extra: Readonly<Record<string, unknown>> = {}): Error {
  const failure = new Error(message, { cause });
  failure.name = name;
  const from = cause as unknown as Record<string, unknown>;
  const to = failure as unknown as Record<string, unknown>;
  for (const field of fields) if (from[field] !== undefined) to[field] = from[field];
  Object.assign(failure, extra);
  return failure;
}

/**
 * What a connection lost while a statement was in flight means, said plainly: the driver's words and that the
 * outcome is unknown (the server may have applied the statement: a lone statement commits on its own, a `COMMIT`
 * may have landed), and what to do about it.
 *
 * @param product - The server, for the message: `"Postgres"`, `"MySQL"`.
 */
export function lostInFlightMessage(product: string, cause: Error): string {
  return (
    `the connection to ${product} ended while a statement was in flight (${cause.message}): the server may or may not have applied it. ` +
    "Read before writing again, or retry a submit with a key (a keyed submit is idempotent); a worker retries by itself"
  );
}
