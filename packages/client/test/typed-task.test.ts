import { defineTask, InvalidArgument } from "@cairnq/protocol";
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
