import { describe, expect, it } from "vitest";
import type { SubmitOptions } from "../src/submit-options.js";
import { childLineage, SUBMIT_OPTION_KEYS, submitInputOf } from "../src/submit-options.js";
import { defineTask } from "../src/task-def.js";

describe("submit options", () => {
  it("lists every option once", () => {
    expect([...SUBMIT_OPTION_KEYS].sort()).toEqual(
      ["conflict", "correlationId", "debounce", "group", "key", "maxAttempts", "metadata", "parentId", "priority", "queue", "rootId", "runAtDelayMs"],
    );
    expect(Object.isFrozen(SUBMIT_OPTION_KEYS)).toBe(true);
  });

  it("take the definition's queue, maxAttempts and priority as defaults", () => {
    const def = defineTask("summarize", { queue: "llm", maxAttempts: 5, priority: 2 });
    expect(submitInputOf(def, { url: "u" }, {})).toEqual({
      name: "summarize",
      payload: { url: "u" },
      queue: "llm",
      maxAttempts: 5,
      priority: 2,
      key: undefined,
      conflict: undefined,
      runAtDelayMs: undefined,
      correlationId: undefined,
      metadata: undefined,
      parentId: undefined,
      rootId: undefined,
    });
    // A group is passed only when given, so a store that predates groups sees the same input as before.
    expect(submitInputOf(def, {}, { group: "acme" }).group).toBe("acme");
  });

  it("override them, and pass every other option through", () => {
    const options: Required<SubmitOptions> = {
      key: "k",
      group: "acme",
      debounce: null,
      conflict: "replace",
      queue: "q",
      priority: 9,
      maxAttempts: 1,
      runAtDelayMs: 60_000,
      correlationId: "c",
      metadata: { a: 1 },
      parentId: "task_parent",
      rootId: null,
    };
    const input = submitInputOf(defineTask("x", { queue: "llm", maxAttempts: 5, priority: 2 }), undefined, { ...options, extra: 1 } as SubmitOptions);
    expect(input).toEqual({ name: "x", payload: undefined, ...options });
  });
});

describe("childLineage (§2.4)", () => {
  const parent = { id: "task_p", root_id: "task_r", correlation_id: "c1" };

  it("a child's parent is the running task; root and correlation id are the parent's", () => {
    expect(childLineage(parent)).toEqual({ parentId: "task_p", rootId: "task_r", correlationId: "c1" });
  });

  it("a parent without a root (a peer's row) is its own root", () => {
    expect(childLineage({ ...parent, root_id: null, correlation_id: null }, {})).toEqual({ parentId: "task_p", rootId: "task_p", correlationId: null });
  });

  it("explicit options win, null included", () => {
    expect(childLineage(parent, { parentId: null, rootId: "task_x", correlationId: null })).toEqual({ parentId: null, rootId: "task_x", correlationId: null });
  });
});
