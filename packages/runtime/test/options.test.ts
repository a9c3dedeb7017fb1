import { describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import {
  checkOptions,
  closest,
  MAX_DURATION_MS,
  optionalCount,
  optionalDurationMs,
  requireCount,
  requireDurationMs,
  requireHook,
} from "@cairnq/runtime";

const KEYS = ["queues", "concurrency", "leaseMs", "heartbeatIntervalMs", "logger"];

function thrown(fn: () => unknown): InvalidArgument {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgument);
    return err as InvalidArgument;
  }
  throw new Error("did not throw");
}

describe("checkOptions", () => {
  it("accepts known keys and treats undefined/null as no options", () => {
    const opts = { concurrency: 2 };
    expect(checkOptions(opts, "new Worker(store, options)", KEYS)).toBe(opts);
    expect(checkOptions(undefined, "x", KEYS)).toEqual({});
    expect(checkOptions(null, "x", KEYS)).toEqual({});
  });

  it("rejects an unknown key naming it, suggesting the close one and listing the valid ones", () => {
    const err = thrown(() => checkOptions({ concurency: 8 }, "new Worker(store, options)", KEYS));
    expect(err.argument).toBe("concurency");
    expect(err.message).toBe(
      "'concurency' is not an option of new Worker(store, options) (did you mean 'concurrency'?); the options are queues, concurrency, leaseMs, heartbeatIntervalMs, logger",
    );
    expect(thrown(() => checkOptions({ leaseMS: 1 }, "w", KEYS)).message).toContain("did you mean 'leaseMs'?");
    expect(thrown(() => checkOptions({ banana: 1 }, "w", KEYS)).message).not.toContain("did you mean");
  });

  it("rejects non-objects and arrays", () => {
    expect(thrown(() => checkOptions(5, "w", KEYS)).message).toBe("w options must be an object, got a number");
    expect(thrown(() => checkOptions([], "w", KEYS)).message).toBe("w options must be an object, got an array");
    // An option that holds an object is not itself a call with "options".
    expect(thrown(() => checkOptions(true, "the combine option", KEYS)).message).toBe("the combine option must be an object, got a boolean");
  });

  it("closest: case, edits and swaps, nothing for short or distant keys", () => {
    expect(closest("schmea", ["schema", "max"])).toBe("schema");
    expect(closest("QUEUES", ["queues"])).toBe("queues");
    expect(closest("mx", ["max"])).toBeNull();
    expect(closest("pollIntervalMsXYZ", ["pollIntervalMs"])).toBeNull();
    expect(closest("queuse", ["queues", "queue"])).toBe("queues");
  });
});

describe("durations", () => {
  it("accepts integers in range, including ≥ 2^31 (timers chain)", () => {
    expect(requireDurationMs(0, "stopTimeoutMs")).toBe(0);
    expect(requireDurationMs(2 ** 31, "stopTimeoutMs")).toBe(2 ** 31);
    expect(requireDurationMs(MAX_DURATION_MS, "x")).toBe(MAX_DURATION_MS);
    expect(optionalDurationMs(undefined, "x", null)).toBeNull();
    expect(optionalDurationMs(5, "x", null, { min: 1 })).toBe(5);
  });

  it("rejects non-integers, non-finite, out of range and non-numbers", () => {
    for (const bad of [1.5, Number.NaN, Number.POSITIVE_INFINITY, -1, "10", null, MAX_DURATION_MS + 1]) {
      expect(thrown(() => requireDurationMs(bad, "maxRunMs")).argument).toBe("maxRunMs");
    }
    expect(thrown(() => requireDurationMs(0, "leaseMs", { min: 1 })).message).toBe(
      "leaseMs must be an integer number of milliseconds ≥ 1, got 0",
    );
    expect(thrown(() => requireDurationMs(11, "x", { min: 1, max: 10 })).message).toBe(
      "x must be an integer number of milliseconds from 1 to 10, got 11",
    );
    expect(thrown(() => requireDurationMs({}, "x")).message).toContain("got an object");
    expect(thrown(() => requireDurationMs([], "x")).message).toContain("got an array");
    expect(thrown(() => requireDurationMs(3n, "x")).message).toContain("got 3n");
  });
});

describe("counts", () => {
  it("rejects 0, -1 and 1.5 instead of coercing them to 1", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, "2"]) {
      expect(thrown(() => requireCount(bad, "concurrency")).message).toMatch(/^concurrency must be an integer ≥ 1, got /);
    }
    expect(requireCount(3, "concurrency")).toBe(3);
    expect(requireCount(0, "x", 0)).toBe(0);
    expect(optionalCount(undefined, "x", null)).toBeNull();
    expect(optionalCount(2, "x", null)).toBe(2);
  });
});

describe("requireHook", () => {
  it("admits a function or undefined and refuses anything else, naming the option, the signature and the value", () => {
    expect(() => requireHook(undefined, "onError", "(error, info) => void")).not.toThrow();
    expect(() => requireHook(() => undefined, "onError", "(error, info) => void")).not.toThrow();
    for (const [value, shown] of [["log", '"log"'], [null, "null"], [{}, "an object"]] as const) {
      expect(() => requireHook(value, "onError", "(error, info) => void")).toThrow(
        expect.objectContaining({ name: "InvalidArgument", argument: "onError", message: `onError must be a function (error, info) => void, got ${shown}` }),
      );
    }
  });
});
