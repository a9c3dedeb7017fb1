/**
 * How an input is named in an `InvalidArgument` message ("got …"). A leaf
 * module: every validator (inputs, envelope, bulk, delay, task-def) uses it
 * without importing the others.
 */

/** A value for a "got …" message: a string quoted, a number, boolean or bigint as written, `null`/`undefined`, "an array", otherwise its kind. */
export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) return String(value);
  if (typeof value === "bigint") return `${value}n`;
  return Array.isArray(value) ? "an array" : typeof value;
}
