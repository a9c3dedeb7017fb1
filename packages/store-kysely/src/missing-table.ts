/**
 * Whether `err` says a table does not exist, on the first-party backends: SQLite's "no such table"
 * message and Postgres's SQLSTATE 42P01 (undefined_table). The default of `StoreDialect.missingTable`,
 * which a dialect of another database overrides with its own error (MySQL: errno 1146).
 */
export function missingTable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  return code === "42P01" || (typeof message === "string" && message.includes("no such table: "));
}
