import { describe, expect, it } from "vitest";
import { AlreadyExists, CairnQError } from "../src/errors.js";
import { KeyHeldByOtherTask, typedSubmitRow } from "../src/key-conflict.js";
import { defineTask } from "../src/task-def.js";
import type { SubmitInput } from "../src/store.js";
import type { Task } from "../src/task.js";

const held = { id: "task_upper", name: "text.upper", status: "succeeded" } as Task;
const input = { name: "math.sum", key: "order-42" } as SubmitInput;

describe("typedSubmitRow (§5.1 reuse by key, typed by a TaskDef)", () => {
  it("returns the row when it is of the def's name, or when the task was named by a string", () => {
    const own = { ...held, name: "math.sum" } as Task;
    expect(typedSubmitRow(own, defineTask("math.sum"), input, "submit")).toBe(own);
    expect(typedSubmitRow(held, "math.sum", input, "submit")).toBe(held);
  });

  it("refuses another name's row with KeyHeldByOtherTask, an AlreadyExists naming both names and the key", () => {
    let thrown: unknown;
    try {
      typedSubmitRow(held, defineTask("math.sum"), input, "ctx.submit");
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(KeyHeldByOtherTask);
    expect(thrown).toBeInstanceOf(AlreadyExists);
    expect(thrown).toBeInstanceOf(CairnQError);
    expect(thrown).toMatchObject({ name: "KeyHeldByOtherTask", key: "order-42", taskName: "math.sum", taskId: "task_upper", task: held });
    expect((thrown as Error).message).toMatch(/^ctx\.submit: the key 'order-42' holds task task_upper of task name 'text\.upper' \(succeeded\), not a 'math\.sum' task/);
  });

  it("an unkeyed input names no key", () => {
    expect(() => typedSubmitRow(held, defineTask("math.sum"), { name: "math.sum" }, "submit")).toThrow(/the key '' holds/);
  });
});
