import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { DatabaseBusy } from "../../src/index.js";
import { exited, nextLine, openStore, spawnFixture, tempFile } from "../helpers.js";

/** Samples the event loop every 5 ms; `maxGap()` is the longest it went without running a timer. */
function watchEventLoop(): { stop(): number } {
  let last = performance.now();
  let maxGap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 5);
  return {
    stop(): number {
      clearInterval(timer);
      return Math.max(maxGap, performance.now() - last);
    },
  };
}

describe("SQLITE_BUSY handling (§13)", () => {
  it("a write waits out a lock held by another process without blocking the event loop", async () => {
    const file = tempFile();
    const store = openStore(file);
    const task = await store.submit({ name: "before" });
    const holder = spawnFixture("hold-lock.mjs", [file, "300"]);
    await nextLine(holder, (line) => line === "locked");
    const loop = watchEventLoop();
    const started = performance.now();
    const write = store.submit({ name: "during" });
    // Reads never join the write queue: they go on while the write waits.
    const readStarted = performance.now();
    expect(await store.get(task.id)).toMatchObject({ id: task.id });
    expect(await store.queueDepth("default", 10)).toBe(9);
    const readMs = performance.now() - readStarted;
    const written = await write;
    const waited = performance.now() - started;
    const gap = loop.stop();
    expect(written.name).toBe("during");
    expect(waited).toBeGreaterThan(150);
    expect(readMs).toBeLessThan(100);
    expect(gap).toBeLessThan(100);
    expect(await exited(holder)).toBe(0);
    expect(await store.list()).toHaveLength(2);
  });

  it("fails with a clear DatabaseBusy naming the file and the budget once busyTimeoutMs runs out", async () => {
    const file = tempFile();
    const store = openStore(file, { busyTimeoutMs: 100 });
    await store.connect();
    const holder = spawnFixture("hold-lock.mjs", [file, "600"]);
    await nextLine(holder, (line) => line === "locked");
    const started = performance.now();
    const err = await store.submit({ name: "n" }).catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(err).toBeInstanceOf(DatabaseBusy);
    expect(err).toMatchObject({ file, busyTimeoutMs: 100, code: "SQLITE_BUSY", name: "DatabaseBusy" });
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toContain("100ms");
    expect(took).toBeGreaterThanOrEqual(90);
    expect(took).toBeLessThan(500);
    // A write transaction (key lock, resolve, cancel) runs out of budget the same way.
    await expect(store.cancelByKey("k")).rejects.toBeInstanceOf(DatabaseBusy);
    expect(await exited(holder)).toBe(0);
    // Once the lock is gone the store works again; the failed submit wrote nothing.
    expect(await store.list()).toEqual([]);
    await store.submit({ name: "after" });
  });

  it("busyTimeoutMs 0 fails at the first busy error", async () => {
    const file = tempFile();
    const store = openStore(file, { busyTimeoutMs: 0 });
    await store.connect();
    const holder = spawnFixture("hold-lock.mjs", [file, "300"]);
    await nextLine(holder, (line) => line === "locked");
    await expect(store.submit({ name: "n" })).rejects.toBeInstanceOf(DatabaseBusy);
    await exited(holder);
  });
});
