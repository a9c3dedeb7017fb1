/**
 * The connection strings the store takes (the target, and the `listen`
 * option), checked when the store is built. pg reads a string it cannot
 * connect with only when it opens a connection, and its error then looks
 * like the server being down: a worker would retry a mistyped port
 * (`:543O`) or another database's URL (`mysql://…`) forever. Refused here,
 * with `InvalidArgument`, it fails once, at construction.
 *
 * Read by pg's own parser, pg-connection-string (what pg does when it
 * connects), after a scheme check, since that parser reads any scheme as
 * Postgres: accepted are `postgres://` and `postgresql://` URLs, `socket:`
 * URLs and pg's short form `<socket directory> [database]`, exactly as pg
 * reads them.
 */
import { InvalidArgument } from "@cairnq/protocol";
import { redactConnectionString } from "@cairnq/store-kysely";
import { parse } from "pg-connection-string";

const CONNECTION_URL = /^(postgres(ql)?:\/\/|socket:)/i;

/** Why pg could not connect with `dsn` whatever the server's state, or `null` when it reads it. */
export function connectionStringProblem(dsn: string): string | null {
  if (!dsn.startsWith("/") && !CONNECTION_URL.test(dsn)) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(dsn)?.[0];
    return scheme === undefined ? "it is not a URL" : `its scheme is ${scheme}, not postgres:// or postgresql://`;
  }
  try {
    parse(dsn);
    return null;
  } catch {
    return "it is not a valid URL (is the port a number?)";
  }
}

/**
 * Refuses a target connection string pg could never connect with (see {@link connectionStringProblem}).
 *
 * @throws InvalidArgument naming `connectionString`; the password is never shown.
 */
export function requireConnectionString(dsn: string): void {
  if (dsn.length === 0) throw new InvalidArgument("connectionString", "the connection string is empty; pass e.g. 'postgres://user@host:5432/db'");
  const problem = connectionStringProblem(dsn);
  if (problem === null) return;
  throw new InvalidArgument(
    "connectionString",
    `the Postgres connection string ${redactConnectionString(dsn)} cannot be used: ${problem}. Write it as postgres://user:password@host:5432/database, or for a Unix socket postgres://user@/database?host=/var/run/postgresql`,
  );
}
