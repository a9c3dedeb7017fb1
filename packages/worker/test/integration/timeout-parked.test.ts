/**
 * A wait that times out on a task parked on a durable step, on a real store: the `TaskTimeout` says what the
 * task waits for (read from its journal), not that it is "delayed".
 */
import { describe, expect, it } from "vitest";
import type { TaskStepStore, TaskStore } from "@cairnq/protocol";
import { TaskTimeout } from "@cairnq/protocol";
import { waitForTask } from "@cairnq/protocol/sdk";
import { waitFor } from "../support/helpers.js";
import type { Backend } from "../support/stores.js";
import { BACKENDS, storePerTest } from "../support/stores.js";
import { makeWorker } from "../support/worker.js";

async function timeoutOf(store: TaskStore, id: string): Promise<TaskTimeout> {
  const error = await waitForTask(store, { id }, { timeoutMs: 20, pollMs: 5 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TaskTimeout);
  return error as TaskTimeout;
}

describe.each(BACKENDS as Backend[])("on $label", (backend) => {
  const open = storePerTest();

  it("a TaskTimeout of a parked task names the sleep, the message or the join it waits for", async () => {
    const store = await open(backend);
    const worker = makeWorker(store);
    worker.task("sleeper", async (ctx) => {
      await ctx.sleep("nap", 3_600_000);
    });
    worker.task("waiter", async (ctx) => {
      await ctx.waitFor("go");
    });
    worker.task("parent", async (ctx) => {
      const child = await ctx.spawn("kid", "nobody-runs-this", {});
      await ctx.join("kids", [child]);
    });
    const sleeper = await store.submit({ name: "sleeper" });
    const waiter = await store.submit({ name: "waiter" });
    const parent = await store.submit({ name: "parent" });
    const running = worker.run();
    const parked = async (id: string) => (await (store as TaskStepStore).steps(id)).some((step) => step.status === "waiting");
    await waitFor(async () => (await parked(sleeper.id)) && (await parked(waiter.id)) && (await parked(parent.id)), 10_000, "three parked tasks");
    await worker.stop();
    await running;
    expect((await timeoutOf(store, sleeper.id)).message).toMatch(/: parked, sleeping in step 'nap', waking in \d+ms — no worker holds it meanwhile/);
    expect((await timeoutOf(store, waiter.id)).message).toContain(": parked, waiting for a message 'go', with no timeout — ");
    expect((await timeoutOf(store, parent.id)).message).toContain(": parked, joining 1 child task (step 'kids') — ");
  });
});
