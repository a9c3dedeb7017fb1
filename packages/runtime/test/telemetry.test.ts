import { describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import { resolveMetrics, resolveTracing } from "@cairnq/runtime";

describe("the tracing and metrics options", () => {
  it("resolve true and objects, and reject anything else with InvalidArgument", () => {
    expect(resolveTracing(true, "x")).toEqual({ tracerProvider: null, relation: "link" });
    expect(resolveTracing({ relation: "child" }, "x")).toEqual({ tracerProvider: null, relation: "child" });
    expect(resolveMetrics(true, "x")).toEqual({ meterProvider: null });
    const provider = { getMeter: () => ({}) };
    expect(resolveMetrics({ meterProvider: provider }, "x")).toEqual({ meterProvider: provider });
    expect(() => resolveTracing(1, "x")).toThrow(InvalidArgument);
    expect(() => resolveTracing([], "x")).toThrow(/got an array/);
    expect(() => resolveMetrics("yes", "x")).toThrow(/got "yes"/);
  });
});
