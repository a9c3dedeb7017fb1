import { SerializationError } from "@cairnq/protocol";
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

/**
 * A connection the pool could not open, said plainly: where (`host:port`,
 * never the password), the driver's words (kept as `cause`, its `code`
 * copied), that nothing was written, and what to do. Raw, an unreachable
 * host fails after mysql2's `connectTimeout` with a bare `connect ETIMEDOUT`.
 * Not a `CairnQError`: it stays transient, so a worker retries it with
 * backoff.
 */
export function connectFailure(error: unknown, address: string): Error {
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
