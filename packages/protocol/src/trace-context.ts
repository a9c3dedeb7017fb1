/**
 * The trace-context extension convention: where a submitter's W3C trace
 * context travels with a task, so the process that runs it can join the
 * submitter's trace.
 *
 * Words used here:
 * - *traceparent* / *tracestate* — the two W3C Trace Context headers
 *   (https://www.w3.org/TR/trace-context/), as text.
 * - *carrier* — the object stored under {@link TRACE_CONTEXT_METADATA_KEY}
 *   in the task's v1 `metadata` column: `{ "traceparent": "00-…", "tracestate"?: "…" }`.
 *
 * It rides in `metadata` rather than in an extension table because it must be
 * written in the same statement as the task (a submit inside a caller's
 * transaction included) and kept by every transition that keeps the row
 * (retries, lease recovery, parks), which the v1 column already is; a v1 peer
 * that does not know the key stores, returns and ignores it. No baggage is
 * carried: baggage is application data, and copying it into every row would
 * store it where the application never chose to.
 */

import { InvalidArgument } from "./errors.js";
import { requireMetadata } from "./inputs.js";

/** The `metadata` key that holds the carrier. Reserved: a submit's own metadata may not use it while tracing is on. */
export const TRACE_CONTEXT_METADATA_KEY = "cairnq.trace";

/** The stored form of a trace context. */
export interface TraceCarrier {
  /** `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
  readonly traceparent: string;
  /** The W3C `tracestate` list, when the span had one. */
  readonly tracestate?: string;
}

/** A span context in the parts the W3C header carries. */
export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE_ID = "0".repeat(32);
const INVALID_SPAN_ID = "0".repeat(16);

/**
 * The `traceparent` header of a span context (version `00`).
 *
 * @example
 * ```ts
 * formatTraceparent({ traceId: "4bf9…", spanId: "00f0…", traceFlags: 1 }); // "00-4bf9…-00f0…-01"
 * ```
 */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/**
 * Reads a `traceparent` header; `null` for anything that is not a valid
 * version-00 header (all-zero ids included), so a damaged carrier only loses
 * the link, never the task.
 */
export function parseTraceparent(text: unknown): TraceParent | null {
  if (typeof text !== "string") return null;
  const match = TRACEPARENT.exec(text);
  if (match === null) return null;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (traceId === INVALID_TRACE_ID || spanId === INVALID_SPAN_ID) return null;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

/**
 * A carrier read back from a task ({@link traceCarrierOf}), with the parts of its `traceparent`, which
 * reading it already checked: whoever continues the trace takes them as they are, without parsing the
 * header a second time.
 */
export interface ReadTraceCarrier extends TraceCarrier {
  readonly parent: TraceParent;
}

/** The carrier stored in a task's metadata, or `null` when it has none (or a malformed one). */
export function traceCarrierOf(metadata: unknown): ReadTraceCarrier | null {
  if (typeof metadata !== "object" || metadata === null) return null;
  const carrier = (metadata as Record<string, unknown>)[TRACE_CONTEXT_METADATA_KEY];
  if (typeof carrier !== "object" || carrier === null) return null;
  const { traceparent, tracestate } = carrier as Record<string, unknown>;
  const parent = parseTraceparent(traceparent);
  if (parent === null) return null;
  return typeof tracestate === "string" && tracestate !== "" ? { traceparent: traceparent as string, tracestate, parent } : { traceparent: traceparent as string, parent };
}

/**
 * A traced submit's own `metadata`, checked before the carrier is added to it: what the submit accepts without
 * tracing (a plain object, `{}` when absent — see {@link requireMetadata}), and without the reserved
 * {@link TRACE_CONTEXT_METADATA_KEY}. Check before the carrier is added: spreading an array, a string or a `Map`
 * into an object would turn it into one the store accepts, and the submit would store what it refuses untraced.
 *
 * @throws InvalidArgument naming `metadata`.
 */
export function requireTraceableMetadata(metadata: unknown): Record<string, unknown> {
  const checked = requireMetadata(metadata);
  if (Object.hasOwn(checked, TRACE_CONTEXT_METADATA_KEY)) {
    throw new InvalidArgument(
      "metadata",
      `metadata key '${TRACE_CONTEXT_METADATA_KEY}' is reserved: with tracing on, CairnQ stores the submitter's trace context under it; rename your key`,
    );
  }
  return checked;
}

/** `metadata` with the carrier added under {@link TRACE_CONTEXT_METADATA_KEY}; the caller's object is not changed. */
export function withTraceCarrier(metadata: Record<string, unknown> | null | undefined, carrier: TraceCarrier): Record<string, unknown> {
  return { ...(metadata ?? {}), [TRACE_CONTEXT_METADATA_KEY]: carrier };
}

/**
 * `metadata` as its submitter wrote it: without the carrier. Returns the same
 * value when there is no carrier, so the common case allocates nothing.
 *
 * Any JSON value is accepted, because the v1 column holds any JSON a peer wrote
 * (a submit turns only an absent or null input into `{}`): a value that is not
 * an object — JSON `null`, a string, a number — has no carrier (nor has an array)
 * and comes back as it is, never an error.
 */
export function withoutTraceCarrier(metadata: Record<string, unknown>): Record<string, unknown>;
export function withoutTraceCarrier(metadata: unknown): unknown;
export function withoutTraceCarrier(metadata: unknown): unknown {
  if (typeof metadata !== "object" || metadata === null || !Object.hasOwn(metadata, TRACE_CONTEXT_METADATA_KEY)) return metadata;
  const { [TRACE_CONTEXT_METADATA_KEY]: _carrier, ...rest } = metadata as Record<string, unknown>;
  return rest;
}
