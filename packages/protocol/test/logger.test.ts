import { describe, expect, it, vi } from "vitest";
import type { Logger } from "../src/logger.js";
import { logSafely } from "../src/logger.js";

describe("logSafely", () => {
  it("calls the level's method with the message and fields, as a method of the logger", () => {
    const lines: unknown[] = [];
    const logger = {
      prefix: "cairnq",
      info(this: { prefix: string }, message: string, fields?: Record<string, unknown>) {
        lines.push([this.prefix, message, fields]);
      },
    };
    logSafely(logger, "info", "worker started", { workerId: "w" });
    logSafely(logger, "info", "no fields");
    expect(lines).toEqual([
      ["cairnq", "worker started", { workerId: "w" }],
      ["cairnq", "no fields", undefined],
    ]);
  });

  it("does nothing without a logger or without that level", () => {
    const warn = vi.fn();
    expect(() => logSafely(undefined, "error", "x", {})).not.toThrow();
    logSafely({ warn }, "debug", "x", {});
    logSafely({ debug: "not a function" } as unknown as Logger, "debug", "x", {});
    expect(warn).not.toHaveBeenCalled();
  });

  it("swallows what a broken logger throws", () => {
    const logger: Logger = {
      error: () => {
        throw new Error("disk full");
      },
    };
    expect(() => logSafely(logger, "error", "x", {})).not.toThrow();
  });

  it("accepts console as it is", () => {
    const debug = vi.spyOn(console, "debug").mockImplementation(() => {});
    try {
      logSafely(console, "debug", "hello", { queue: "q" });
      expect(debug).toHaveBeenCalledWith("hello", { queue: "q" });
    } finally {
      debug.mockRestore();
    }
  });
});
