import { describe, expect, it } from "vitest";
import { InvalidArgument } from "@cairnq/protocol";
import { ByTask, resolveMetrics, resolveTracing } from "@cairnq/runtime";

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

describe("ByTask", () => {
  it("makes one value per queue and task name, and hands the same one back (last pair or not)", () => {
    const made: string[] = [];
    const byTask = new ByTask((queue, name) => {
      made.push(`${queue}/${name}`);
      return { queue, name };
    });
    const a = byTask.get("q", "a");
    expect(byTask.get("q", "a")).toBe(a);
    const b = byTask.get("q", "b");
    const c = byTask.get("r", "a");
    expect(byTask.get("q", "a")).toBe(a);
    expect(byTask.get("q", "b")).toBe(b);
    expect(byTask.get("r", "a")).toBe(c);
    expect(made).toEqual(["q/a", "q/b", "r/a"]);
  });
});
