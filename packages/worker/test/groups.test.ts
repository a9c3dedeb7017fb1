import { describe, expect, it } from "vitest";
import { UnsupportedBackend } from "@cairnq/protocol";
import { MemoryStore, waitFor } from "./support/helpers.js";
import { makeWorker } from "./support/worker.js";

describe("group limits (task options groupConcurrency, groupRateLimit)", () => {
  it("groupConcurrency caps each group while groups run side by side, and every task runs", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store, { concurrency: 10 });
    const now = new Map<string, number>();
    const most = new Map<string, number>();
    let overall = 0;
    let mostOverall = 0;
    let done = 0;
    worker.task("export", { groupConcurrency: 2 }, async (_ctx, { tenant }: { tenant: string }) => {
      now.set(tenant, (now.get(tenant) ?? 0) + 1);
      overall += 1;
      most.set(tenant, Math.max(most.get(tenant) ?? 0, now.get(tenant) as number));
      mostOverall = Math.max(mostOverall, overall);
      await new Promise((resolve) => setTimeout(resolve, 15));
      now.set(tenant, (now.get(tenant) as number) - 1);
      overall -= 1;
      done += 1;
      return null;
    });
    for (const tenant of ["a", "b", "c"]) for (let i = 0; i < 4; i++) await store.submit({ name: "export", group: tenant, payload: { tenant } });
    void worker.run();
    await waitFor(() => done === 12, 5000, "12 tasks done");
    expect(Math.max(...most.values())).toBe(2);
    expect(mostOverall).toBeGreaterThan(2);
  });

  it("a store without capabilities.groups refuses group limits at registration", () => {
    const plain = new MemoryStore();
    Object.defineProperty(plain, "capabilities", { value: { ...plain.capabilities, groups: false } });
    const worker = makeWorker(plain);
    expect(() => worker.task("x", { groupConcurrency: 1 }, () => null)).toThrow(UnsupportedBackend);
    expect(() => worker.task("x", { groupRateLimit: { max: 1, perMs: 10 } }, () => null)).toThrow(/capabilities.groups is not true/);
  });

  it("ctx.submit passes a group to the child", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    let child = "";
    worker.task("parent", async (ctx) => {
      child = (await ctx.submit("child", {}, { group: "acme" })).id;
      return null;
    });
    await store.submit({ name: "parent" });
    void worker.run();
    await waitFor(() => child !== "");
    // The child is in group acme: a claim with a group limit of 1 takes it, and nothing more of acme.
    await store.submit({ name: "child", group: "acme" });
    const taken = await store.claim({ queues: ["default"], workerId: "w", names: ["child"], limit: 5, flowControl: { child: { groupConcurrency: 1 } } });
    expect(taken).toHaveLength(1);
  });
});

describe("schedules with a group", () => {
  it("every slot task is in the schedule's group (counted per group), and a store without groups refuses it", async () => {
    const store = new MemoryStore();
    const worker = makeWorker(store);
    worker.schedule("tick", { everyMs: 50 }, { group: "tenant-a", name: "ticks" });
    void worker.run();
    await waitFor(async () => (await store.groupStats("tick")).some((g) => g.group === "tenant-a" && g.queued >= 2), 5000, "two slot tasks in tenant-a");
    await worker.stop();
    const plain = new MemoryStore();
    Object.defineProperty(plain, "capabilities", { value: { ...plain.capabilities, groups: false } });
    expect(() => makeWorker(plain).schedule("tick", { everyMs: 50 }, { group: "tenant-a" })).toThrow(UnsupportedBackend);
  });
});
