/**
 * The JSON boundary (§2.2): encoding values for the JSON columns and
 * normalizing what drivers hand back.
 *
 * `JSON.stringify` silently coerces (`NaN` → `null`, an `undefined` array
 * element → `null`, a top-level `undefined` → no output, a function or symbol
 * property → left out, a `Map`, `Set` or `Error` → `{}`) and reports cycles without
 * saying where. A task queue must not store something other than what
 * the caller submitted, so `encodeJson` rejects those cases with a
 * `SerializationError` naming the path, and otherwise produces exactly what
 * `JSON.stringify` would.
 *
 * It also rejects what one of the backends cannot hold, so that a value means
 * the same on every backend (it round-trips exactly everywhere, or is refused
 * everywhere, before anything is written):
 * - U+0000 in a string or a key: Postgres `jsonb` refuses `\u0000` (and `text`
 *   cannot hold it at all); SQLite would store it.
 * - A lone UTF-16 surrogate in a string or a key: `jsonb` refuses the escape
 *   `JSON.stringify` writes for it; SQLite would store it.
 * - Nesting deeper than {@link MAX_JSON_DEPTH}: SQLite's `json_valid` answers 0
 *   beyond 1000 levels (so the row's CHECK fails), and a deep enough value
 *   overflows the stack of Postgres' parser and of the encoder itself.
 */
import { isPlainObject } from "./describe.js";
import { SerializationError } from "./errors.js";

/**
 * The deepest nesting of arrays and objects a JSON column accepts: 1000, the
 * limit of SQLite's JSON functions (`json_valid` fails at 1001, which the
 * column's CHECK turns into a failed write). Deeper values are rejected with
 * `SerializationError` on every backend.
 */
export const MAX_JSON_DEPTH = 1000;

/** Matches the first code unit that may make a string unstorable: U+0000 or any surrogate (paired ones are fine). */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what this looks for.
const SUSPECT = /[\u0000\ud800-\udfff]/;

/**
 * Why a string cannot be stored in a JSON or text column on every backend,
 * or `null` when it can: it holds U+0000, or a UTF-16 surrogate that is not
 * half of a pair. Both are refused by Postgres and kept by SQLite, so the
 * protocol refuses them everywhere.
 *
 * @example
 * ```ts
 * unstorableText("café"); // null
 * unstorableText("a\u0000b"); // "it contains U+0000 (NUL) at index 1, which CairnQ refuses on every backend; …"
 * ```
 */
export function unstorableText(text: string): string | null {
  if (!SUSPECT.test(text)) return null;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === 0) return `it contains U+0000 (NUL) at index ${i}, which CairnQ refuses on every backend (one database must mean the same on each); remove it or encode the data (e.g. base64)`;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return `it contains a lone UTF-16 surrogate (\\u${unit.toString(16)}) at index ${i}, which is not valid Unicode and which CairnQ refuses on every backend; fix the string (e.g. do not cut it between the halves of a surrogate pair)`;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) {
      return `it contains a lone UTF-16 surrogate (\\u${unit.toString(16)}) at index ${i}, which is not valid Unicode and which CairnQ refuses on every backend; fix the string (e.g. do not cut it between the halves of a surrogate pair)`;
    }
  }
  return null;
}

/**
 * `text` with every U+0000 and every lone surrogate replaced by U+FFFD, so it
 * can be stored on every backend. For values that must be stored even when
 * they are not clean — an error's message in the §5.16 fallback envelope —
 * never for user data, which is rejected instead ({@link unstorableText}).
 *
 * @example
 * ```ts
 * sanitizeText("a\u0000b"); // "a\ufffdb"
 * ```
 */
export function sanitizeText(text: string): string {
  if (unstorableText(text) === null) return text;
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += text.slice(i, i + 2);
        i++;
        continue;
      }
      out += "\ufffd";
    } else if (unit === 0 || (unit >= 0xdc00 && unit <= 0xdfff)) {
      out += "\ufffd";
    } else {
      out += text[i];
    }
  }
  return out;
}

/** Keys that can be written `a.b` in a path; anything else is written `a["b c"]`. */
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Encodes `value` as compact JSON for a JSON column, refusing anything JSON would coerce.
 *
 * Rejected with `SerializationError` (its `path` rooted at `what`): non-finite
 * numbers at any depth, BigInt, cycles, a function or symbol anywhere (as an
 * object property too, which `JSON.stringify` would silently leave out),
 * `undefined` as an array element or as the whole value; strings or keys holding U+0000 or a
 * lone surrogate, and nesting deeper than {@link MAX_JSON_DEPTH} (what some
 * backend cannot store, see the module comment); a getter, `toJSON` or
 * proxy trap that throws (the error is the `cause`); a `Map`, `Set`, typed
 * array, `ArrayBuffer`, `RegExp` or `Error` without `toJSON`, which `JSON.stringify`
 * would write as `{}` (or numbered keys, or an Error's added fields without its message). Object properties holding
 * `undefined` are omitted, and `toJSON` is honoured (its
 * output is checked too), as in `JSON.stringify`. The same object may appear
 * twice as long as it does not contain itself.
 *
 * One walk builds the output; cycle detection tracks only the current
 * ancestors, so the cost is linear in the size of the value. Paths are only
 * formatted when an error is raised.
 *
 * @param what - Names the root in error paths, e.g. `"payload"`.
 * @example
 * ```ts
 * encodeJson({ at: new Date(0), tags: ["a"] }, "payload"); // '{"at":"1970-01-01T00:00:00.000Z","tags":["a"]}'
 * encodeJson({ n: NaN }, "payload"); // throws SerializationError, path "payload.n"
 * encodeJson({ a: undefined, b: 1 }, "payload"); // '{"b":1}'
 * encodeJson({ f: () => 1 }, "payload"); // throws SerializationError, path "payload.f"
 * ```
 */
export function encodeJson(value: unknown, what: string): string {
  return new Encoder(what).encodeRoot(value);
}

class Encoder {
  /** Keys from the root to the value being encoded. */
  private readonly keys: (string | number)[] = [];
  /** Objects being encoded (the current ancestors) → their depth in `keys`. */
  private readonly ancestors = new Map<object, number>();

  constructor(private readonly what: string) {}

  encodeRoot(value: unknown): string {
    let out: string | undefined;
    try {
      out = this.encode(value, "");
    } catch (err) {
      if (err instanceof SerializationError) throw err;
      // A getter, toJSON or proxy trap threw while the value was read: `keys` still points at it.
      throw this.error(`reading it threw (${describeThrown(err)}); make the value plain data before passing it`, err);
    }
    if (out === undefined) {
      throw this.error(`the value is ${describeOmitted(value)}, which has no JSON form; pass null or an object instead`);
    }
    return out;
  }

  /**
   * Encodes one value; `undefined` means "omit" (JSON.stringify's undefined result). `property` says the value is
   * an object property's, where a function or symbol is refused here (elsewhere the caller refuses what is omitted).
   */
  private encode(input: unknown, key: string, property = false): string | undefined {
    let value = input;
    if ((typeof value === "object" && value !== null) || typeof value === "function" || typeof value === "bigint") {
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") value = toJSON.call(value, key) as unknown;
    }
    if (typeof value === "object" && value !== null) {
      // Boxed primitives serialize as their primitive, as in JSON.stringify.
      if (value instanceof Number) value = Number(value);
      else if (value instanceof String) value = String(value);
      else if (value instanceof Boolean) value = value.valueOf();
      else if (value instanceof BigInt) value = value.valueOf();
      else if (!Array.isArray(value) && !isPlainObject(value)) {
        const lost = lostByJson(value);
        if (lost !== null) throw this.error(lost);
      }
    }
    switch (typeof value) {
      case "string":
        this.checkText(value, null);
        return JSON.stringify(value);
      case "number":
        if (!Number.isFinite(value)) {
          throw this.error(`${String(value)} is not a finite number and JSON has none; send null or a string instead`);
        }
        return String(value);
      case "boolean":
        return value ? "true" : "false";
      case "bigint":
        throw this.error(`a BigInt (${String(value)}n) has no JSON form; convert it to a string or a number first`);
      case "object":
        if (value === null) return "null";
        return Array.isArray(value) ? this.encodeArray(value) : this.encodeObject(value);
      case "function":
      case "symbol":
        // Refused even as an object property, where JSON.stringify would leave it out: a payload or result would
        // lose data without a word (an `undefined` property holds none, so that one stays omitted).
        if (property) {
          throw this.error(
            `the property is ${article(typeof value)}, which has no JSON form (JSON.stringify would silently leave it out); remove the property or store data in its place, such as a string`,
          );
        }
        return undefined;
      case "undefined":
        // No JSON form: the caller omits it (object property) or rejects it.
        return undefined;
    }
  }

  private encodeArray(array: readonly unknown[]): string {
    this.enter(array);
    let out = "[";
    for (let i = 0; i < array.length; i++) {
      this.keys.push(i);
      const element = array[i];
      const encoded = this.encode(element, String(i));
      if (encoded === undefined) {
        throw this.error(
          `an array element is ${describeOmitted(element)}, which JSON.stringify would turn into null; use null explicitly or remove it`,
        );
      }
      this.keys.pop();
      out += i === 0 ? encoded : "," + encoded;
    }
    this.leave(array);
    return out + "]";
  }

  private encodeObject(object: object): string {
    this.enter(object);
    let out = "{";
    let first = true;
    for (const key of Object.keys(object)) {
      this.keys.push(key);
      this.checkText(key, key);
      const encoded = this.encode((object as Record<string, unknown>)[key], key, true);
      this.keys.pop();
      if (encoded === undefined) continue;
      out += (first ? "" : ",") + JSON.stringify(key) + ":" + encoded;
      first = false;
    }
    this.leave(object);
    return out + "}";
  }

  /** Rejects a string (or, when `key` is given, the key just pushed) that some backend cannot store. */
  private checkText(text: string, key: string | null): void {
    const problem = unstorableText(text);
    if (problem === null) return;
    throw this.error(key === null ? `the string cannot be stored: ${problem}` : `the key ${JSON.stringify(key)} cannot be stored: ${problem}`);
  }

  private enter(value: object): void {
    if (this.keys.length >= MAX_JSON_DEPTH) {
      throw this.error(
        `the value is nested more than ${MAX_JSON_DEPTH} levels deep, more than SQLite's JSON functions accept; flatten it or store the deep part as a string`,
      );
    }
    const depth = this.ancestors.get(value);
    if (depth !== undefined) {
      throw this.error(
        `the value contains itself (a cycle back to ${this.format(depth)}), and JSON can only encode trees; remove the back-reference`,
      );
    }
    this.ancestors.set(value, this.keys.length);
  }

  private leave(value: object): void {
    this.ancestors.delete(value);
  }

  private error(reason: string, cause?: unknown): SerializationError {
    return new SerializationError(this.format(this.keys.length), reason, cause === undefined ? undefined : { cause });
  }

  /** The path of the first `depth` keys, e.g. `payload.items[2]`. */
  private format(depth: number): string {
    let path = this.what;
    for (let i = 0; i < depth; i++) {
      const key = this.keys[i] as string | number;
      if (typeof key === "number") path += `[${key}]`;
      else if (IDENTIFIER.test(key)) path += `.${key}`;
      else path += `[${JSON.stringify(key)}]`;
    }
    return path;
  }
}

/**
 * Why `JSON.stringify` would store something other than `value` (a built-in object without `toJSON` whose content
 * lives where JSON does not look), or `null`. A `Map` or `Set` would be stored as `{}`, a typed array as
 * `{"0":…}`: the task would run with data it was never given. A `Date` is not here: its `toJSON` gives the ISO
 * string, as §2.2 documents. Other class instances keep their own fields, which is what they hold.
 */
function lostByJson(value: object): string | null {
  if (value instanceof Map || value instanceof WeakMap) {
    return `a ${value instanceof Map ? "Map" : "WeakMap"}, whose entries JSON.stringify drops (it writes {}); send a plain object (Object.fromEntries(map)) or an array of [key, value] pairs`;
  }
  if (value instanceof Set || value instanceof WeakSet) {
    return `a ${value instanceof Set ? "Set" : "WeakSet"}, whose members JSON.stringify drops (it writes {}); send an array ([...set])`;
  }
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return `binary data (${value.constructor.name}), which JSON.stringify writes as an object of numbered keys or {}; send it as a base64 string or an array of numbers`;
  }
  if (value instanceof RegExp) return "a RegExp, which JSON.stringify writes as {}; send its source as a string";
  // Also an Error from another realm (a vm context, a worker's structured clone), which instanceof misses.
  if (value instanceof Error || Object.prototype.toString.call(value) === "[object Error]") {
    return `an Error (${String((value as Error).name)}), whose message and stack JSON.stringify drops (it writes {} or only the fields added to it); send the fields you need, such as { name, message }, or a string`;
  }
  return null;
}

/** A thrown value, briefly, for a message: `TypeError: boom`; never throws itself. */
function describeThrown(err: unknown): string {
  try {
    if (err instanceof Error) return `${err.name}: ${err.message}`;
    return String(err);
  } catch {
    return "an unprintable value";
  }
}

/** Describes a value that encodes to nothing, as it was before `toJSON`. */
function describeOmitted(value: unknown): string {
  if (typeof value === "undefined") return "undefined";
  // Only toJSON can make an object encode to nothing.
  if (typeof value === "object") return "an object whose toJSON() returned nothing";
  return article(typeof value);
}

/** `a function`, `an object`. */
function article(word: string): string {
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

/**
 * Normalizes a JSON column as read from a driver (§2.2).
 *
 * Parses only strings (SQLite TEXT, or a `jsonb` column selected as text);
 * SQL NULL (`null`/`undefined`) becomes `null`; anything else is returned
 * as-is because `jsonb` drivers decode already. A store must therefore not
 * let its driver decode `jsonb` *and* pass the result here when a column may
 * hold a JSON string scalar: the decoded string would be parsed a second time.
 *
 * @example
 * ```ts
 * decodeJson('{"a":1}'); // { a: 1 }
 * decodeJson(null); // null
 * ```
 */
export function decodeJson(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value) as unknown;
  } catch (err) {
    const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
    throw new SyntaxError(
      `a JSON column held text that is not valid JSON (${JSON.stringify(shown)}); the row was written by something that bypassed the JSON checks — inspect or repair it`,
      { cause: err },
    );
  }
}

/**
 * Normalizes a `*_ms` column to a number, keeping SQL NULL as `null` (§2.2).
 *
 * Postgres drivers return `bigint` as text (or as a BigInt); SQLite returns a
 * number. Throws `TypeError` on anything that is not a finite number, since a
 * wrong time would silently corrupt lease and schedule decisions.
 *
 * @example
 * ```ts
 * toMs("1700000000000"); // 1700000000000
 * toMs(null); // null
 * ```
 */
export function toMs(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  let ms: number;
  if (typeof value === "number") ms = value;
  else if (typeof value === "bigint") ms = Number(value);
  else if (typeof value === "string" && value.trim() !== "") ms = Number(value);
  else ms = Number.NaN;
  if (!Number.isFinite(ms)) {
    const shown =
      typeof value === "string" ? JSON.stringify(value) : typeof value === "number" ? String(value) : article(typeof value);
    throw new TypeError(
      `expected epoch milliseconds (a number, bigint or numeric text) but got ${shown}; the column is not a *_ms integer — check the query's column mapping`,
    );
  }
  return ms;
}
