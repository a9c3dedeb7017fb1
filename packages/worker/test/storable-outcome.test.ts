import { describe, expect, it } from "vitest";
import { storableEnvelope } from "../src/storable-outcome.js";
import { SQLITE } from "./support/stores.js";
import { deep, describeUnstorableOutcomes } from "./support/unstorable-outcomes.js";

describeUnstorableOutcomes(SQLITE);

describe("storableEnvelope", () => {
  it("pass storable values through untouched", () => {
    const envelope = { type: "TaskError", code: "c", message: "m", retryable: false, details: { a: [1, "x"] } };
    expect(storableEnvelope(envelope, false)).toBe(envelope);
  });

  it("drop cycles, over-deep parts, throwing getters and keys, and sanitise keys", () => {
    const cyclic: Record<string, unknown> = { keep: true };
    cyclic.self = cyclic;
    const details = {
      cyclic,
      deep: deep(2000),
      get broken(): never {
        throw new Error("x");
      },
      "k\u0000": "v",
      when: new Date(0),
      proxy: new Proxy({}, { ownKeys: () => { throw new Error("trap"); } }),
    };
    const out = storableEnvelope({ type: "T", code: "c", message: "m", retryable: true, details }, true) as { details: Record<string, unknown> };
    expect(out.details.cyclic).toEqual({ keep: true });
    expect(out.details.broken).toBeUndefined();
    expect(out.details["k\ufffd"]).toBe("v");
    expect(out.details.when).toBe("1970-01-01T00:00:00.000Z");
    expect(out.details.proxy).toBeUndefined();
    expect(JSON.stringify(out.details.deep).length).toBeLessThan(JSON.stringify(deep(2000)).length);
  });

  it("keep an Error's name and message (not own enumerable fields, so JSON would write {}), beside the fields added to it", () => {
    const details = { cause: Object.assign(new TypeError("disk full"), { code: 28 }), list: [new Error("a")] };
    const out = storableEnvelope({ type: "TaskError", code: "c", message: "m", retryable: false, details }, false);
    expect(out).toEqual({
      type: "TaskError",
      code: "c",
      message: "m",
      retryable: false,
      details: { cause: { name: "TypeError", message: "disk full", code: 28 }, list: [{ name: "Error", message: "a" }] },
    });
  });

  it("fall back to the bare envelope when details are not an object", () => {
    expect(storableEnvelope({ type: "T", code: "c", message: "m\u0000", details: 5n }, false)).toEqual({
      type: "T",
      code: "c",
      message: "m\ufffd",
      retryable: false,
      details: {},
    });
  });
});
