/**
 * What the worker checks before it writes a failure (§8.4, §5.16): a
 * settlement write that throws leaves the task `running` until its lease
 * expires, and then the handler runs again. So an error envelope that cannot
 * be encoded is stored sanitised — `type`, `code` and `message` kept as text
 * every backend can hold, and of `details` the part JSON can represent. A
 * failure the store still refuses as too large is written again cut down
 * (`failure-write.ts`).
 *
 * A result is not checked here: the store encodes it, and one it cannot
 * encode rejects the complete with `SerializationError` before anything is
 * written (conformance s38); the call runner then fails the attempt for good
 * with `unserializable_result` (one handler run, the reason kept).
 */
import type { ErrorEnvelope } from "@cairnq/protocol";
import { encodeJson, MAX_JSON_DEPTH, sanitizeText } from "@cairnq/protocol/adapter";
import { fallbackEnvelope } from "@cairnq/protocol/sdk";


/**
 * The envelope to write for a failure: `envelope` itself when it encodes;
 * otherwise the §5.16 fallback (text fields sanitised, the code kept) with
 * the representable part of its `details`.
 */
export function storableEnvelope(envelope: unknown, retryable: boolean): unknown {
  try {
    encodeJson(envelope ?? {}, "error");
    return envelope;
  } catch {
    // Fall through to the sanitised form.
  }
  const fallback: ErrorEnvelope = fallbackEnvelope(envelope, retryable);
  const details = readDetails(envelope);
  if (details !== undefined) {
    const kept = representable(details, new Set(), 1);
    if (kept !== undefined && typeof kept === "object" && kept !== null && !Array.isArray(kept)) {
      const withDetails = { ...fallback, details: kept as Record<string, unknown> };
      try {
        encodeJson(withDetails, "error");
        return withDetails;
      } catch {
        // Still not storable: the fallback alone always is.
      }
    }
  }
  return fallback;
}

/** `value[key]`, or `undefined` when the getter throws. */
function readSafely(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function readDetails(envelope: unknown): unknown {
  if (typeof envelope !== "object" || envelope === null) return undefined;
  try {
    return (envelope as { details?: unknown }).details;
  } catch {
    return undefined;
  }
}

/**
 * A JSON-representable copy of `value`: values JSON has no form for (BigInt,
 * non-finite numbers, functions, symbols, cycles, anything whose getter,
 * `toJSON` or proxy trap throws, nesting past the depth limit) are left out
 * — as `null` inside arrays — and strings are made storable on every
 * backend. `undefined` when nothing of `value` is representable.
 */
function representable(input: unknown, ancestors: Set<object>, depth: number): unknown {
  let value = input;
  try {
    if ((typeof value === "object" && value !== null) || typeof value === "bigint") {
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") value = toJSON.call(value) as unknown;
    }
  } catch {
    return undefined;
  }
  switch (typeof value) {
    case "string":
      return sanitizeText(value);
    case "number":
      return Number.isFinite(value) ? value : undefined;
    case "boolean":
      return value;
    case "object":
      break;
    case "bigint":
    case "function":
    case "symbol":
    case "undefined":
      return undefined;
  }
  if (value === null) return null;
  // Two levels are the envelope and its details; stay within what every backend's JSON accepts.
  if (depth >= MAX_JSON_DEPTH - 2 || ancestors.has(value)) return undefined;
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (let i = 0; i < value.length; i++) out.push(representable(value[i], ancestors, depth + 1) ?? null);
      return out;
    }
    const out: Record<string, unknown> = {};
    // An Error's name and message are not own enumerable properties, so a plain copy would keep only the fields
    // added to it (often none: `{}`); they are kept first, as JSON has no form for the Error itself.
    if (value instanceof Error) {
      for (const key of ["name", "message"] as const) {
        const kept = representable(readSafely(value, key), ancestors, depth + 1);
        if (typeof kept === "string") out[key] = kept;
      }
    }
    for (const key of Object.keys(value)) {
      const kept = representable(readSafely(value, key), ancestors, depth + 1);
      if (kept !== undefined) out[sanitizeText(key)] = kept;
    }
    return out;
  } catch {
    // A proxy whose ownKeys or isArray trap throws.
    return undefined;
  } finally {
    ancestors.delete(value);
  }
}
