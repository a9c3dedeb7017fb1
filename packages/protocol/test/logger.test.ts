import { describe, expect, it, vi } from "vitest";
import type { Logger } from "../src/logger.js";
import { catchRejection, logSafely } from "../src/logger.js";

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

describe("catchRejection", () => {
  /** The process's unhandled rejections while `run` and a few turns after it. */
  async function unhandledDuring(run: () => void): Promise<unknown[]> {
    const seen: unknown[] = [];
    const record = (reason: unknown): void => void seen.push(reason);
    process.on("unhandledRejection", record);
    try {
      run();
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off("unhandledRejection", record);
    }
    return seen;
  }

  it("swallows an async logger's rejection in logSafely, which would otherwise be unhandled", async () => {
    const logger = { warn: async (): Promise<void> => Promise.reject(new Error("log sink down")) } as unknown as Logger;
    expect(await unhandledDuring(() => logSafely(logger, "warn", "x"))).toEqual([]);
  });

  it("hands a thenable's rejection to onRejected, and leaves anything else alone", async () => {
    const rejected: unknown[] = [];
    catchRejection(Promise.reject(new Error("boom")), (err) => rejected.push((err as Error).message));
    catchRejection({ then: (_: unknown, onRejected: (err: unknown) => void) => onRejected("thenable") }, (err) => rejected.push(err));
    for (const value of [undefined, null, 3, "text", { then: 1 }, () => 1]) catchRejection(value, (err) => rejected.push(err));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(rejected.sort()).toEqual(["boom", "thenable"]);
  });

  it("never throws, even for a thenable whose then getter throws", () => {
    const hostile = Object.defineProperty({}, "then", {
      get() {
        throw new Error("no");
      },
    });
    expect(() => catchRejection(hostile)).not.toThrow();
  });
});

