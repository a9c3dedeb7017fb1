/**
 * `ctx.spawn(name, task, payload, { group })` on every store: the children are written in their group in the
 * spawn's transaction, so they are claimed under the child's `groupConcurrency` (and its rotation), and the
 * parent's join returns their results. It was refused at run time ("a spawned child cannot have a group yet"),
 * as a retryable error that spent every attempt of the parent.
 */
import { describe, expect, it } from "vitest";
import type { GroupReadStore, Task, TaskStore } from "@cairnq/protocol";
import { waitForTask } from "@cairnq/protocol/sdk";
import { delay, MemoryStore } from "../support/helpers.js";
import type { Backend } from "../support/stores.js";
import { BACKENDS, MYSQL, storePerTest } from "../support/stores.js";
import { makeWorker } from "../support/worker.js";

const MEMORY: Backend = {
  label: "memory",
  open: async () => ({ store: new MemoryStore(), close: async () => {} }),
};

const TENANTS = ["a", "b"] as const;
const PER_TENANT = 3;

async function runParent(store: TaskStore): Promise<{ parent: Task; most: Map<string, number>; kids: string[] }> {
  const worker = makeWorker(store, { concurrency: 2 * TENANTS.length * PER_TENANT });
  const running = new Map<string, number>();
  const most = new Map<string, number>();
  worker.task("kid", { groupConcurrency: 1 }, async (_ctx, { tenant, i }: { tenant: string; i: number }) => {
    running.set(tenant, (running.get(tenant) ?? 0) + 1);
    most.set(tenant, Math.max(most.get(tenant) ?? 0, running.get(tenant) as number));
    // Held long enough that a claim without the group's limit would take the tenant's next child meanwhile.
    await delay(40);
    running.set(tenant, (running.get(tenant) as number) - 1);
    return `${tenant}${i}`;
  });
  let kids: string[] = [];
  worker.task("parent", async (ctx) => {
    const ids: string[] = [];
    for (const tenant of TENANTS) for (let i = 0; i < PER_TENANT; i++) ids.push(await ctx.spawn(`kid ${tenant}${i}`, "kid", { tenant, i }, { group: tenant }));
    kids = ids;
    const rows = await ctx.join("kids", ids);
    return rows.map((row) => row?.result ?? null);
  });
  const submitted = await store.submit({ name: "parent", maxAttempts: 3 });
  const run = worker.run();
  const parent = await waitForTask(store, { id: submitted.id }, { timeoutMs: 30_000, pollMs: 20 }).catch((err: unknown) => err);
  await worker.stop();
  await run;
  return { parent: parent as Task, most, kids };
}

describe.each([MEMORY, ...BACKENDS, MYSQL] as Backend[])("ctx.spawn with a group on $label", (backend) => {
  const open = storePerTest();

  it("the children run one at a time per group (groupConcurrency: 1) and the join returns their results", async () => {
    const store = await open(backend);
    const { parent, most, kids } = await runParent(store);
    expect(parent).toMatchObject({ status: "succeeded", attempt: 1, error: null, result: ["a0", "a1", "a2", "b0", "b1", "b2"] });
    expect(Object.fromEntries(most)).toEqual({ a: 1, b: 1 });
    const reads = store as unknown as GroupReadStore;
    for (const [n, id] of kids.entries()) {
      expect((await store.get(id))?.parent_id).toBe(parent.id);
      expect((await reads.taskGroup(id))?.group).toBe(TENANTS[Math.floor(n / PER_TENANT)]);
    }
  });
});
