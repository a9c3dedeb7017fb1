import { InvalidArgument } from "@cairnq/protocol";
import { redactConnectionString } from "@cairnq/store-kysely";

/**
 * The query parameters a connection string may carry, passed to `mysql2` as
 * connection options (a value is read as JSON when it parses, else as text,
 * as `mysql2` reads its own URIs: `?ssl={"rejectUnauthorized":true}`). Any
 * other parameter is refused: `mysql2` would warn and ignore a misspelt one,
 * and one it knows could override a setting the store relies on
 * (`charset`, `multipleStatements`, `timezone`, number decoding).
 */
export const MYSQL_URL_PARAMETERS: readonly string[] = Object.freeze(["connectTimeout", "ssl", "compress", "enableKeepAlive", "keepAliveInitialDelay", "localAddress", "socketPath"]);

/** A connection string read into `mysql2` connection options, and where it points (`host:port`, for error messages). */
export interface ParsedConnectionString {
  readonly options: Readonly<Record<string, unknown>>;
  readonly address: string;
}

/**
 * Reads a `mysql://` (or `mariadb://`) connection string at construction,
 * so a mistake fails there with `InvalidArgument` rather than at the first
 * call: it must be a `mysql://` or `mariadb://` URL, name a database (the
 * path) and carry only {@link MYSQL_URL_PARAMETERS}. The password never
 * appears in a message. (The Postgres store's connection-string file does
 * the same job: its scheme check, then pg's own parser.)
 *
 * @example
 * parseConnectionString("mysql://app:secret@db:3306/app?connectTimeout=5000");
 * // { options: { host: "db", port: 3306, user: "app", password: "secret", database: "app", connectTimeout: 5000 }, address: "db:3306" }
 */
export function parseConnectionString(target: string): ParsedConnectionString {
  if (!/^(mysql|mariadb):\/\//.test(target)) {
    throw new InvalidArgument("target", `a MySQL connection string starts with mysql:// (got ${JSON.stringify(target.slice(0, 12))}…)`);
  }
  let url: URL;
  try {
    url = new URL(target.replace(/^mariadb:/, "mysql:"));
  } catch (cause) {
    throw new InvalidArgument("target", `the MySQL connection string is not a valid URL (${redactConnectionString(target)}): is the port a number? Write it as mysql://user:password@host:3306/database`, { cause });
  }
  const host = decodeURIComponent(url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname);
  const port = url.port === "" ? 3306 : Number(url.port);
  const database = decodeURIComponent(url.pathname.slice(1));
  if (database === "" || database.includes("/")) {
    throw new InvalidArgument(
      "target",
      `the MySQL connection string ${redactConnectionString(target)} names no database: add it as the path, e.g. mysql://user@${host || "host"}:${port}/app (the store's tables live in that database)`,
    );
  }
  const options: Record<string, unknown> = { host, port, database, user: decodeURIComponent(url.username) };
  if (url.password !== "") options.password = decodeURIComponent(url.password);
  const unknown: string[] = [];
  for (const [key, value] of url.searchParams) {
    if (!MYSQL_URL_PARAMETERS.includes(key)) unknown.push(key);
    else options[key] = jsonOrText(value);
  }
  if (unknown.length > 0) {
    throw new InvalidArgument(
      "target",
      `the MySQL connection string has parameters the store does not accept: ${unknown.join(", ")}; accepted: ${MYSQL_URL_PARAMETERS.join(", ")} (the store sets charset, multipleStatements, time zone and number decoding itself)`,
    );
  }
  return { options, address: `${host}:${port}` };
}

function jsonOrText(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}
