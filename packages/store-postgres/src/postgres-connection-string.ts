/**
 * The connection strings the store takes (the target, and the `listen`
 * option), checked when the store is built. pg reads a string it cannot
 * connect with only when it opens a connection, and its error then looks
 * like the server being down: a worker would retry a mistyped port
 * (`:543O`) or another database's URL (`mysql://…`) forever. Refused here,
 * with `InvalidArgument`, it fails once, at construction.
 *
 * Accepted are the forms pg's parser (pg-connection-string) reads as a
 * server to reach: a `postgres://` or `postgresql://` URL (a socket directory
 * as `?host=/var/run/postgresql` or as an encoded host, `user@/db` for no
 * host, spaces and stray `%` as pg encodes them), a `socket:` URL, and pg's
 * short form `<socket directory> [database]`. Anything else pg would resolve
 * against a placeholder host, or fail to parse when it connects.
 */
import { InvalidArgument } from "@cairnq/protocol";

const CONNECTION_URL = /^(postgres(ql)?:\/\/|socket:)/i;

/**
 * Why pg could not connect with `dsn` whatever the server's state, or `null`
 * when it reads it. The URL is read as pg reads it: spaces and stray `%`
 * encoded first, and `user@/db` (no host) given a placeholder host.
 */
export function connectionStringProblem(dsn: string): string | null {
  if (dsn.startsWith("/")) return null;
  if (!CONNECTION_URL.test(dsn)) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(dsn)?.[0];
    return scheme === undefined ? "it is not a URL" : `its scheme is ${scheme}, not postgres:// or postgresql://`;
  }
  const text = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(dsn) ? encodeURI(dsn).replace(/%25(\d\d)/g, "%$1") : dsn;
  if (URL.canParse(text) || URL.canParse(text.replace("@/", "@___DUMMY___/"))) return null;
  return "it is not a valid URL (is the port a number?)";
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
    `the Postgres connection string ${redacted(dsn)} cannot be used: ${problem}. Write it as postgres://user:password@host:5432/database, or for a Unix socket postgres://user@/database?host=/var/run/postgresql`,
  );
}

/** `dsn` with any password replaced by `***`, cut to 120 characters, quoted. */
export function redacted(dsn: string): string {
  return JSON.stringify(dsn.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/i, "$1:***@").slice(0, 120));
}
