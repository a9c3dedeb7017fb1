import { describe, expect, it } from "vitest";
import { InvalidArgument } from "../src/errors.js";
import {
  formatTraceparent,
  parseTraceparent,
  requireTraceableMetadata,
  TRACE_CONTEXT_METADATA_KEY,
  traceCarrierOf,
  withoutTraceCarrier,
  withTraceCarrier,
} from "../src/sdk.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("traceparent", () => {
  it("formats and parses version 00", () => {
    const text = formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
    expect(text).toBe(`00-${TRACE}-${SPAN}-01`);
    expect(parseTraceparent(text)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.traceFlags).toBe(0);
  });

  it.each([
    ["all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`],
    ["all-zero span id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ["another version", `01-${TRACE}-${SPAN}-01`],
    ["a short trace id", `00-${TRACE.slice(1)}-${SPAN}-01`],
    ["not a string", 42],
  ])("rejects %s", (_what, text) => {
    expect(parseTraceparent(text)).toBeNull();
  });
});

describe("the carrier in metadata", () => {
  it("is added beside the user's keys without changing their object, and read back", () => {
    const mine = { tenant: "acme" };
    const stored = withTraceCarrier(mine, { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: "v=1" });
    expect(mine).toEqual({ tenant: "acme" });
    expect(stored).toEqual({ tenant: "acme", [TRACE_CONTEXT_METADATA_KEY]: { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: "v=1" } });
    expect(traceCarrierOf(stored)).toEqual({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: "v=1", parent: { traceId: TRACE, spanId: SPAN, traceFlags: 1 } });
    expect(withoutTraceCarrier(stored)).toEqual({ tenant: "acme" });
  });

  it("metadata without a carrier is returned as is; a malformed carrier reads as none", () => {
    const plain = { a: 1 };
    expect(withoutTraceCarrier(plain)).toBe(plain);
    expect(traceCarrierOf(plain)).toBeNull();
    expect(traceCarrierOf({ [TRACE_CONTEXT_METADATA_KEY]: { traceparent: "garbage" } })).toBeNull();
    expect(traceCarrierOf({ [TRACE_CONTEXT_METADATA_KEY]: "00-x" })).toBeNull();
    expect(traceCarrierOf(null)).toBeNull();
  });

  it("metadata a peer stored as another JSON value (null, an array, a string, a number) comes back as stored, never an error", () => {
    const list = [1, { [TRACE_CONTEXT_METADATA_KEY]: { traceparent: `00-${TRACE}-${SPAN}-01` } }];
    for (const stored of [null, list, "text", 7, true]) {
      expect(withoutTraceCarrier(stored)).toBe(stored);
      expect(traceCarrierOf(stored)).toBeNull();
    }
  });
});

describe("a submit without metadata", () => {
  it("gets metadata holding only the carrier", () => {
    const carrier = { traceparent: formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 }) };
    expect(withTraceCarrier(null, carrier)).toEqual({ [TRACE_CONTEXT_METADATA_KEY]: carrier });
    expect(withTraceCarrier(undefined, carrier)).toEqual({ [TRACE_CONTEXT_METADATA_KEY]: carrier });
  });
});

describe("a traced submit's own metadata", () => {
  it("is what an untraced submit accepts: a plain object, {} when absent", () => {
    const mine = { tenant: "acme" };
    expect(requireTraceableMetadata(mine)).toBe(mine);
    const bare = Object.create(null) as Record<string, unknown>;
    expect(requireTraceableMetadata(bare)).toBe(bare);
    expect(requireTraceableMetadata(undefined)).toEqual({});
    expect(requireTraceableMetadata(null)).toEqual({});
  });

  // Spread into an object beside the carrier, each would be stored as an object ({"0":1,"1":2}, {}) the untraced submit refuses.
  it.each([
    ["an array", [1, 2], /got an array/],
    ["a string", "hello", /got "hello"/],
    ["a number", 7, /got 7/],
    ["a Map", new Map([["a", 1]]), /got a Map/],
    ["a Date", new Date(0), /got a Date/],
  ])("refuses %s with the untraced submit's InvalidArgument", (_what, metadata, message) => {
    expect(() => requireTraceableMetadata(metadata)).toThrow(InvalidArgument);
    expect(() => requireTraceableMetadata(metadata)).toThrow(/^metadata must be a plain object, /);
    expect(() => requireTraceableMetadata(metadata)).toThrow(message);
  });

  it("refuses the reserved key", () => {
    expect(() => requireTraceableMetadata({ [TRACE_CONTEXT_METADATA_KEY]: 1 })).toThrow(/'cairnq\.trace' is reserved/);
  });
});

describe("a stored carrier's tracestate", () => {
  it("is kept when it is a non-empty string and dropped otherwise", () => {
    const parent = { traceId: TRACE, spanId: SPAN, traceFlags: 1 };
    const traceparent = formatTraceparent(parent);
    expect(traceCarrierOf({ [TRACE_CONTEXT_METADATA_KEY]: { traceparent, tracestate: "k=v" } })).toEqual({ traceparent, tracestate: "k=v", parent });
    expect(traceCarrierOf({ [TRACE_CONTEXT_METADATA_KEY]: { traceparent, tracestate: "" } })).toEqual({ traceparent, parent });
    expect(traceCarrierOf({ [TRACE_CONTEXT_METADATA_KEY]: { traceparent, tracestate: 5 } })).toEqual({ traceparent, parent });
  });
});
