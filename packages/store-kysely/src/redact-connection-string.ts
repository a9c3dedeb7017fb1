/**
 * A connection string fit for an error message: its password hidden, quoted and cut to 120 characters.
 *
 * Shared by the SQL stores (and the test helpers) so every message that shows a connection string hides the
 * same things: the password of the user part (everything between `user:` and the last `@`, so a password
 * holding an unescaped `@` or `/`, which no parser reads, is hidden whole rather than in part) and the value of
 * any query parameter whose name holds `password` (`?password=`, `?sslpassword=`: pg-connection-string reads
 * its parameters as connection settings, so a password may be given there). It hides too much rather than too
 * little: a string it cannot read keeps what it cannot tell from a password hidden.
 *
 * @example
 * redactConnectionString("postgres://app:secret@db:5432/app?password=x");
 * // "\"postgres://app:***@db:5432/app?password=***\""
 */
export function redactConnectionString(connectionString: string): string {
  const shown = connectionString
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^?#]*@/i, "$1:***@")
    .replace(/(^|[?&\s])([^=&#\s]*)=([^&#\s]*)/g, (whole, separator: string, name: string) => (isPasswordName(name) ? `${separator}${name}=***` : whole));
  return JSON.stringify(shown.slice(0, 120));
}

function isPasswordName(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, " "));
  } catch {
    // Not percent-encoding a parser reads either: judged as written.
  }
  return decoded.toLowerCase().includes("password");
}
