/**
 * The in-memory store after close(): every call rejects, as a closed SQL
 * store's do (kept out of memory-store.test.ts, which the README shows
 * verbatim).
 */
import { CairnQError } from "@cairnq/protocol";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/memory-store.js";

describe("MemoryStore after close()", () => {
  it("rejects every call with a fatal CairnQError saying the store is closed, as a closed SQL store does", async () => {
    const store = new MemoryStore();
    const task = await store.submit({ name: "job" });
    await store.close();
    await store.close();
    const calls: [string, () => Promise<unknown>][] = [
      ["connect", () => store.connect()],
      ["submit", () => store.submit({ name: "job" })],
      ["get", () => store.get(task.id)],
      ["list", () => store.list({})],
      ["stats", () => store.stats()],
      ["queueDepth", () => store.queueDepth("default", 10)],
      ["claim", () => store.claim({ queues: ["default"], workerId: "w1", leaseMs: 1000 })],
      ["cancel", () => store.cancel(task.id)],
      ["retryBatch", () => store.retryBatch({})],
      ["purge", () => store.purge({ olderThanMs: 0 })],
      ["steps", () => store.steps(task.id)],
      ["submitScheduleSlots", () => store.submitScheduleSlots({ schedule: "s", slotsMs: [0], task: { name: "job" } })],
    ];
    for (const [label, call] of calls) {
      const err: unknown = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, label).toBeInstanceOf(CairnQError);
      expect((err as CairnQError).fatal, label).toBe(true);
      expect((err as Error).message, label).toMatch(/^this memory store is closed, so the call was not run/);
    }
  });

  it("writes nothing for a submit the gate held while the store closed", async () => {
    const store = new MemoryStore();
    let release = (): void => {};
    store.queueDepthGate = { acquire: () => new Promise<void>((resolve) => (release = resolve)) };
    const submitting = store.submit({ name: "job" });
    await new Promise((resolve) => setImmediate(resolve));
    await store.close();
    release();
    await expect(submitting).rejects.toThrow(/memory store is closed/);
  });
});
