/**
 * How an input is named in an `InvalidArgument` message ("got …"). A leaf
 * module: every validator (inputs, envelope, bulk, delay, task-def) uses it
 * without importing the others.
 */

/**
 * A value for a "got …" message: a string quoted, a number, boolean or bigint as written, `null`/`undefined`,
 * "an array", a class instance by its constructor ("a Map", "a Date"), otherwise its kind with its article
 * ("an object", "a function", "a symbol"). Protocol's validators, runtime's option checks, retention, the dashboard and the SQLite store use it (`@cairnq/protocol/adapter`); a few messages that show only a value's kind keep runtime's `describeKind`.
 */
export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) return String(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && !isPlainObject(value)) {
    const name: unknown = (value as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === "string" && name !== "") return `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}`;
  }
  const kind = typeof value;
  return `${kind === "object" ? "an" : "a"} ${kind}`;
}

/** An object whose prototype is `Object.prototype` or `null`: not an array, a `Map`, a `Date` or another class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
