import { describe, expect, it } from "vitest";
import {
  LEASE_EXPIRED_ENVELOPE,
  envelopeForCtxFail,
  envelopeFromThrown,
  errorEnvelope,
  fallbackEnvelope,
  handlerTimeoutEnvelope,
  noHandlerEnvelope,
  unserializableResultEnvelope,
} from "../src/envelope.js";
import { SerializationError, TaskError } from "../src/errors.js";

const KEYS = ["type", "code", "message", "retryable", "details"];

/** An object whose every property read throws, and which has no string form. */
function hostile(): object {
  return new Proxy(Object.create(null) as object, {
    get() {
      throw new Error("trap");
    },
  });
}

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

describe("errorEnvelope", () => {
  it("writes the five keys in order and defaults details to {}", () => {
    const envelope = errorEnvelope({ details: undefined, retryable: false, message: "m", code: "c", type: "T" });
    expect(Object.keys(envelope)).toEqual(KEYS);
    expect(envelope).toEqual({ type: "T", code: "c", message: "m", retryable: false, details: {} });
  });

  it("keeps the given details", () => {
    const details = { a: 1 };
    expect(errorEnvelope({ type: "T", code: "c", message: "m", retryable: true, details }).details).toBe(details);
  });
});

describe("fixed envelopes", () => {
  it("LEASE_EXPIRED_ENVELOPE is exactly the protocol literal and frozen", () => {
    expect(JSON.stringify(LEASE_EXPIRED_ENVELOPE)).toBe(
      '{"type":"LeaseExpired","code":"lease_expired","message":"task lease expired and max attempts reached","retryable":false,"details":{}}',
    );
    expect(Object.isFrozen(LEASE_EXPIRED_ENVELOPE)).toBe(true);
    expect(Object.isFrozen(LEASE_EXPIRED_ENVELOPE.details)).toBe(true);
  });

  it("handlerTimeoutEnvelope is a retryable handler_timeout naming the limit", () => {
    const envelope = handlerTimeoutEnvelope(5000);
    expect(Object.keys(envelope)).toEqual(KEYS);
    expect(envelope).toMatchObject({ type: "HandlerTimeout", code: "handler_timeout", retryable: true, details: {} });
    expect(envelope.message).toContain("5000ms");
  });

  it("noHandlerEnvelope is a permanent no_handler naming the task", () => {
    const envelope = noHandlerEnvelope("summarize");
    expect(envelope).toMatchObject({ type: "NoHandler", code: "no_handler", retryable: false, details: {} });
    expect(envelope.message).toContain("'summarize'");
  });

  it("unserializableResultEnvelope keeps the SerializationError's message", () => {
    const envelope = unserializableResultEnvelope(new SerializationError("result.n", "NaN is not finite"));
    expect(envelope).toMatchObject({
      type: "SerializationError",
      code: "unserializable_result",
      retryable: false,
      details: {},
    });
    expect(envelope.message).toContain("cannot encode result.n as JSON: NaN is not finite");
  });

  it("unserializableResultEnvelope tolerates non-errors", () => {
    expect(unserializableResultEnvelope("odd").message).toContain(": odd");
    expect(unserializableResultEnvelope(Object.create(null)).message).toContain("[object Object]");
  });
});

describe("fallbackEnvelope (§5.16)", () => {
  it("stringifies type, code and message of the given object and drops details", () => {
    const envelope = fallbackEnvelope({ type: 7, code: "c", message: "m", details: { n: 1n } }, true);
    expect(Object.keys(envelope)).toEqual(KEYS);
    expect(envelope).toEqual({ type: "7", code: "c", message: "m", retryable: true, details: {} });
  });

  it("uses the defaults for missing fields and non-objects", () => {
    const defaults = { type: "TaskError", code: "task_error", message: "", retryable: false, details: {} };
    expect(fallbackEnvelope({}, false)).toEqual(defaults);
    expect(fallbackEnvelope({ type: null, code: undefined }, false)).toEqual(defaults);
    expect(fallbackEnvelope(null, false)).toEqual(defaults);
    expect(fallbackEnvelope(12n, false)).toEqual(defaults);
    expect(fallbackEnvelope(hostile(), false)).toEqual(defaults);
  });

  it("reads fields off functions too", () => {
    const fn = Object.assign(() => 1, { code: "fn_code" });
    expect(fallbackEnvelope(fn, true).code).toBe("fn_code");
  });
});

describe("envelopeFromThrown (§8.4 settlement table)", () => {
  it("a TaskError gives its own envelope and retryable flag", () => {
    const err = new TaskError("bad", { code: "bad_input", details: { f: "x" } });
    expect(envelopeFromThrown(err)).toEqual({ envelope: err.envelope(), retryable: false });
    expect(envelopeFromThrown(new TaskError("later", { retryable: true })).retryable).toBe(true);
  });

  it("a TaskError subclass's envelope() is called once, and what it returned is what is stored", () => {
    let calls = 0;
    class Counted extends TaskError {
      override envelope() {
        calls += 1;
        return { ...super.envelope(), details: { call: calls } };
      }
    }
    expect(envelopeFromThrown(new Counted("m")).envelope).toMatchObject({ details: { call: 1 } });
    expect(calls).toBe(1);
  });

  it("a TaskError that cannot be stored as it stands becomes a permanent invalid_task_error saying why", () => {
    const err = Object.assign(new TaskError("upstream down", { retryable: true }), { retryable: "yes" });
    const result = envelopeFromThrown(err);
    expect(result.retryable).toBe(false);
    expect(Object.keys(result.envelope)).toEqual(KEYS);
    expect(result.envelope).toMatchObject({ type: "InvalidTaskError", code: "invalid_task_error", retryable: false, details: {} });
    expect(result.envelope.message).toMatch(/\(retryable must be a boolean, got "yes"\).*its message: upstream down\./);
    expect(envelopeForCtxFail(Object.assign(new TaskError("m"), { code: 1 }), { retryable: true })).toMatchObject({
      envelope: { code: "invalid_task_error" },
      retryable: false,
    });
    const noMessage = Object.assign(new TaskError("m"), { retryable: 0 });
    Object.defineProperty(noMessage, "message", { value: undefined });
    expect(envelopeFromThrown(noMessage).envelope.message).toMatch(/its message: \./);
  });

  it("any other Error is a retryable handler_error named after the error", () => {
    const result = envelopeFromThrown(new RangeError("out of range"));
    expect(result.retryable).toBe(true);
    expect(Object.keys(result.envelope)).toEqual(KEYS);
    expect(result.envelope).toEqual({
      type: "RangeError",
      code: "handler_error",
      message: "out of range",
      retryable: true,
      details: {},
    });
  });

  it("an Error with a missing name or message still settles", () => {
    const err = new Error("x");
    Object.defineProperty(err, "name", { value: undefined });
    Object.defineProperty(err, "message", { value: undefined });
    expect(envelopeFromThrown(err).envelope).toMatchObject({ type: "Error", message: "" });
    const trapped = new Error("y");
    Object.defineProperty(trapped, "message", {
      get() {
        throw new Error("getter");
      },
    });
    expect(envelopeFromThrown(trapped).envelope.message).toBe("");
  });

  it("a plain object is a retryable handler_error using its name and message", () => {
    expect(envelopeFromThrown({ name: "HttpError", message: "503" })).toEqual({
      envelope: { type: "HttpError", code: "handler_error", message: "503", retryable: true, details: {} },
      retryable: true,
    });
  });

  it("a plain object without name or message uses Error and its string form", () => {
    expect(envelopeFromThrown({ status: 503 }).envelope).toMatchObject({
      type: "Error",
      code: "handler_error",
      message: "[object Object]",
    });
    expect(envelopeFromThrown({ name: 5, message: 6 }).envelope).toMatchObject({ type: "5", message: "6" });
    expect(envelopeFromThrown(Object.create(null)).envelope.message).toBe("[object Object]");
    expect(envelopeFromThrown(hostile()).envelope).toMatchObject({ type: "Error", message: "[unprintable value]" });
    expect(envelopeFromThrown(revoked()).envelope.message).toBe("[unprintable value]");
  });

  it("a primitive is a retryable TaskError-shaped envelope", () => {
    for (const [value, message] of [
      ["boom", "boom"],
      [42, "42"],
      [undefined, "undefined"],
      [null, "null"],
      [Symbol("s"), "Symbol(s)"],
    ] as const) {
      expect(envelopeFromThrown(value)).toEqual({
        envelope: { type: "TaskError", code: "task_error", message, retryable: true, details: {} },
        retryable: true,
      });
    }
  });
});

describe("envelopeForCtxFail (§8.6)", () => {
  it("defaults to a retryable 'task failed'", () => {
    expect(envelopeForCtxFail()).toEqual({
      envelope: { type: "TaskError", code: "task_error", message: "task failed", retryable: true, details: {} },
      retryable: true,
    });
    expect(envelopeForCtxFail(null).envelope).toMatchObject({ message: "task failed" });
  });

  it("a string reason takes the caller's retryability", () => {
    const result = envelopeForCtxFail("quota exceeded", { retryable: false });
    expect(result.retryable).toBe(false);
    expect(result.envelope).toEqual({
      type: "TaskError",
      code: "task_error",
      message: "quota exceeded",
      retryable: false,
      details: {},
    });
    expect(envelopeForCtxFail("again", {}).retryable).toBe(true);
  });

  it("never throws for a flag that is not a boolean (the caller checks it with requireRetryable): it reads as absent", () => {
    expect(envelopeForCtxFail("x", { retryable: "yes" as never }).retryable).toBe(true);
    expect(envelopeForCtxFail(new TaskError("verdict", { retryable: false }), { retryable: "yes" as never }).retryable).toBe(false);
  });

  it("other primitives use their string form", () => {
    expect(envelopeForCtxFail(7).envelope).toMatchObject({ message: "7", code: "task_error" });
  });

  it("an Error is a handler_error with the caller's flag", () => {
    expect(envelopeForCtxFail(new TypeError("bad"), { retryable: false })).toEqual({
      envelope: { type: "TypeError", code: "handler_error", message: "bad", retryable: false, details: {} },
      retryable: false,
    });
    expect(envelopeForCtxFail(new TypeError("bad")).retryable).toBe(true);
  });

  it("a TaskError's own envelope and flag win over the caller's", () => {
    const err = new TaskError("final", { code: "nope" });
    expect(envelopeForCtxFail(err, { retryable: true })).toEqual({ envelope: err.envelope(), retryable: false });
  });

  it("a plain object is stored as-is with the caller's flag", () => {
    const reason = { code: "boom" };
    const result = envelopeForCtxFail(reason, { retryable: false });
    expect(result.envelope).toBe(reason);
    expect(result.retryable).toBe(false);
  });
});
