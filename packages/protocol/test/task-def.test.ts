import { describe, expect, expectTypeOf, it } from "vitest";
import { InvalidArgument } from "../src/errors.js";
import type { TaskDef, TaskPayload, TaskResult } from "../src/task-def.js";
import { defineTask } from "../src/task-def.js";

function invalid(fn: () => unknown): InvalidArgument {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgument);
    return err as InvalidArgument;
  }
  throw new Error("expected InvalidArgument");
}

describe("defineTask", () => {
  it("returns a frozen definition holding only the given options", () => {
    const def = defineTask("summarize");
    expect(def).toEqual({ name: "summarize" });
    expect(Object.keys(def)).toEqual(["name"]);
    expect(Object.isFrozen(def)).toBe(true);

    const full = defineTask("charge", { queue: "payments", maxAttempts: 5, priority: -2 });
    expect(full).toEqual({ name: "charge", queue: "payments", maxAttempts: 5, priority: -2 });
    expect(Object.isFrozen(full)).toBe(true);
    expect("__types" in full).toBe(false);
  });

  it("accepts the integer limits", () => {
    expect(defineTask("a", { maxAttempts: 1, priority: -(2 ** 31) })).toMatchObject({ maxAttempts: 1 });
    expect(defineTask("a", { maxAttempts: 2 ** 31 - 1, priority: 2 ** 31 - 1 })).toMatchObject({
      priority: 2 ** 31 - 1,
    });
  });

  it("rejects a name or queue that a submit would refuse: over TEXT_LIMITS, U+0000, a lone surrogate", () => {
    const longName = invalid(() => defineTask("n".repeat(1025)));
    expect([longName.argument, longName.message]).toEqual(["name", expect.stringContaining("1025 bytes long in UTF-8, over the limit of 1024 bytes")]);
    expect(invalid(() => defineTask("a\u0000b")).argument).toBe("name");
    const longQueue = invalid(() => defineTask("a", { queue: "q".repeat(257) }));
    expect([longQueue.argument, longQueue.message]).toEqual(["queue", expect.stringContaining("over the limit of 256 bytes")]);
    expect(invalid(() => defineTask("a", { queue: "\ud800" })).argument).toBe("queue");
    expect(defineTask("n".repeat(1024), { queue: "q".repeat(256) }).queue).toHaveLength(256);
  });

  it("rejects an empty or non-string name", () => {
    expect(invalid(() => defineTask("")).argument).toBe("name");
    expect(invalid(() => defineTask(undefined as unknown as string)).message).toContain("non-empty task name");
  });

  it("rejects an empty queue", () => {
    const err = invalid(() => defineTask("a", { queue: "" }));
    expect(err.argument).toBe("queue");
    expect(err.message).toContain("task 'a'");
    expect(invalid(() => defineTask("a", { queue: 1 as unknown as string })).argument).toBe("queue");
  });

  it("rejects maxAttempts that is not an integer ≥ 1", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      const err = invalid(() => defineTask("a", { maxAttempts: bad }));
      expect(err.argument).toBe("maxAttempts");
      expect(err.message).toContain(String(bad));
    }
  });

  it("rejects a priority outside 32-bit integers", () => {
    for (const bad of [0.5, 2 ** 31, -(2 ** 31) - 1, Number.POSITIVE_INFINITY]) {
      expect(invalid(() => defineTask("a", { priority: bad })).argument).toBe("priority");
    }
  });

  it("rejects a key that is not one of its options, so a typo does not send every task to 'default'", () => {
    const typo = invalid(() => defineTask("a", { queu: "mail" } as never));
    expect(typo.argument).toBe("queu");
    expect(typo.message).toBe("'queu' is not an option of defineTask('a'); the options are queue, maxAttempts, priority");
    for (const perSubmit of ["key", "runAtDelayMs", "metadata"]) {
      const err = invalid(() => defineTask("a", { [perSubmit]: 5 }));
      expect(err.argument).toBe(perSubmit);
      expect(err.message).toContain(`task 'a': '${perSubmit}' is a per-submit option, not a default a definition carries; pass it to each submit`);
    }
    // A key set to undefined is as good as absent, as in a submit's options.
    expect(defineTask("a", { queue: "q", other: undefined } as never)).toEqual({ name: "a", queue: "q" });
  });

  it("rejects options that are not an object; null is none", () => {
    for (const [bad, shown] of [
      [5, "5"],
      ["mail", '"mail"'],
      [true, "true"],
      [["mail"], "an array"],
      [() => ({ queue: "q" }), "a function"],
    ] as const) {
      const err = invalid(() => defineTask("a", bad as never));
      expect(err.argument).toBe("options");
      expect(err.message).toBe(`task 'a': defineTask's options must be an object of queue, maxAttempts, priority, got ${shown}`);
    }
    expect(defineTask("a", null as never)).toEqual({ name: "a" });
  });

  it("carries payload and result types for inference", () => {
    const summarize = defineTask<{ url: string }, { summary: string }>("summarize");
    expectTypeOf(summarize).toEqualTypeOf<TaskDef<{ url: string }, { summary: string }>>();
    expectTypeOf<TaskPayload<typeof summarize>>().toEqualTypeOf<{ url: string }>();
    expectTypeOf<TaskResult<typeof summarize>>().toEqualTypeOf<{ summary: string }>();

    // What a client's call(def, payload) signature can infer from a definition.
    const call = <P, R>(def: TaskDef<P, R>, payload: P): R => ({ def, payload }) as unknown as R;
    expectTypeOf(call(summarize, { url: "u" })).toEqualTypeOf<{ summary: string }>();
    // @ts-expect-error the payload type comes from the definition
    call(summarize, { nope: 1 });

    expectTypeOf(defineTask("untyped")).toEqualTypeOf<TaskDef<unknown, unknown>>();
  });
});
