import { AlreadyExists, defineTask, InvalidArgument, KeyHeldByOtherTask } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { CairnQ } from "../src/index.js";
import { claimOne, RecordingStore } from "./support.js";

const other = defineTask<{ n: number }, number>("other");
const resize = defineTask<{ url: string }, { bytes: number }>("resize");

/** A store whose wait sleeps fail the test: a wait that should have failed at once must never sleep. */
function neverSleeping(): RecordingStore {
  const store = new RecordingStore();
  store.onWake = (taskId) => {
    throw new Error(`the wait slept on ${taskId}: the task's name was not checked on the first read`);
  };
  return store;
}

describe("a wait typed by a TaskDef checks the name on its first read", () => {
  it("wait(id, { task }) on an unfinished task of another name fails at once with InvalidArgument, not after its timeout", async () => {
    const store = neverSleeping();
    const client = new CairnQ(store);
    const queued = await client.submit("resize", { url: "u" });
    await expect(client.wait(queued.id, { task: other, timeoutMs: 60_000 })).rejects.toSatisfy(
      (err: unknown) => err instanceof InvalidArgument && err.argument === "task" && err.message.startsWith(`wait: task ${queued.id} is a 'resize' task, not a 'other' one`),
    );
    const running = await claimOne(store);
    expect(running.id).toBe(queued.id);
    await expect(client.wait(running.id, { task: other, timeoutMs: 60_000 })).rejects.toBeInstanceOf(InvalidArgument);
    expect(store.count("taskDoneWake")).toBe(0);
  });

  it("waitByKey(key, { task }) on an unfinished task of another name fails at once too", async () => {
    const store = neverSleeping();
    const client = new CairnQ(store);
    const queued = await client.submit("resize", { url: "u" }, { key: "img-1" });
    await expect(client.waitByKey("img-1", { task: other, timeoutMs: 60_000 })).rejects.toSatisfy(
      (err: unknown) => err instanceof InvalidArgument && err.message.startsWith(`waitByKey: task ${queued.id} is a 'resize' task, not a 'other' one`),
    );
    expect(store.count("taskDoneWake")).toBe(0);
  });

  it("a task of the definition's name is awaited as before, and a finished one is returned by that first read", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const task = await client.submit(resize, { url: "u" }, { key: "img-2" });
    const worker = await claimOne(store);
    store.onWake = async () => {
      await store.complete({ taskId: task.id, workerId: worker.workerId, result: { bytes: 7 } });
    };
    const done = await client.wait(task.id, { task: resize, pollMs: 5 });
    expect(done.result).toEqual({ bytes: 7 });
    const reads = store.count("get");
    expect((await client.waitByKey("img-2", { task: resize })).result).toEqual({ bytes: 7 });
    expect((await client.wait(task.id, { task: resize })).status).toBe("succeeded");
    expect(store.count("get")).toBe(reads + 1);
  });

  it("leaves a bad id and an aborted signal to the wait loop, as without a TaskDef", async () => {
    const client = new CairnQ(neverSleeping());
    await expect(client.wait("", { task: other })).rejects.toMatchObject({ argument: "id" });
    const reason = new Error("stop");
    await expect(client.wait("task_x", { task: other, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});

describe("a keyed submit given a TaskDef never returns another name's task", () => {
  const sum = defineTask<{ x: number; y: number }, { sum: number }>("math.sum");

  /** A store whose key 'order-42' holds a succeeded 'text.upper' task. */
  async function keyHeldByUpper(): Promise<{ store: RecordingStore; client: CairnQ; upperId: string }> {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const upper = await client.submit("text.upper", { s: "hi" }, { key: "order-42" });
    const worker = await claimOne(store);
    await store.complete({ taskId: upper.id, workerId: worker.workerId, result: { upper: "HI" } });
    return { store, client, upperId: upper.id };
  }

  it("call, submit and submitOutcome with reuse-succeeded refuse with AlreadyExists carrying the task, naming both names and the key", async () => {
    const { store, client, upperId } = await keyHeldByUpper();
    const refused = (method: string) => (err: unknown) =>
      err instanceof KeyHeldByOtherTask &&
      err instanceof AlreadyExists &&
      err.key === "order-42" &&
      err.taskName === "math.sum" &&
      err.task.id === upperId &&
      err.task.name === "text.upper" &&
      err.message.startsWith(`${method}: the key 'order-42' holds task ${upperId} of task name 'text.upper' (succeeded), not a 'math.sum' task`);
    const options = { key: "order-42", conflict: "reuse-succeeded" } as const;
    await expect(client.call(sum, { x: 1, y: 2 }, options)).rejects.toSatisfy(refused("call"));
    await expect(client.submit(sum, { x: 1, y: 2 }, options)).rejects.toSatisfy(refused("submit"));
    await expect(client.submitOutcome(sum, { x: 1, y: 2 }, options)).rejects.toSatisfy(refused("submitOutcome"));
    expect(store.count("getStatus") + store.count("get")).toBe(0); // the call refused before waiting
    expect((await client.list()).map((t) => t.name)).toEqual(["text.upper"]); // nothing written
  });

  it("conflict 'reuse' on an unfinished task of another name is refused the same way", async () => {
    const client = new CairnQ(new RecordingStore());
    const queued = await client.submit("text.upper", { s: "hi" }, { key: "k" });
    await expect(client.submit(sum, { x: 1, y: 2 }, { key: "k" })).rejects.toMatchObject({ name: "KeyHeldByOtherTask", task: { id: queued.id } });
  });

  it("by name, the row holding the key is returned as today; a definition of the key's own name reuses it", async () => {
    const { client, upperId } = await keyHeldByUpper();
    expect(await client.call("math.sum", { x: 1, y: 2 }, { key: "order-42", conflict: "reuse-succeeded" })).toEqual({ upper: "HI" });
    const outcome = await client.submitOutcome("math.sum", {}, { key: "order-42", conflict: "reuse-succeeded" });
    expect(outcome).toMatchObject({ created: false, task: { id: upperId } });
    const upper = defineTask<{ s: string }, { upper: string }>("text.upper");
    expect(await client.call(upper, { s: "x" }, { key: "order-42", conflict: "reuse-succeeded" })).toEqual({ upper: "HI" });
  });
});

describe("a Task row passed as a definition", () => {
  it("submits a new task of its name, queue and priority: the row's other fields (metadata, status…) are not options", async () => {
    const store = new RecordingStore();
    const client = new CairnQ(store);
    const row = await client.submit(resize, { url: "a" }, { key: "first", metadata: { tenant: "t1" }, priority: 3 });
    const again = await client.submit(row, row.payload);
    expect(again.id).not.toBe(row.id);
    expect([again.name, again.queue, again.priority]).toEqual(["resize", "default", 3]);
  });
});
