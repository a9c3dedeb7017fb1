import { describe, expect, it } from "vitest";
import { abortPromise, deferred, keepAlive } from "@cairnq/runtime";

describe("deferred", () => {
  it("resolves and rejects from outside", async () => {
    const a = deferred<number>();
    a.resolve(3);
    await expect(a.promise).resolves.toBe(3);
    const b = deferred();
    const err = new Error("x");
    b.reject(err);
    await expect(b.promise).rejects.toBe(err);
  });
});

describe("abortPromise", () => {
  it("resolves on abort, at once when already aborted, and dispose removes the listener", async () => {
    const controller = new AbortController();
    const pending = abortPromise(controller.signal);
    controller.abort();
    await expect(pending.promise).resolves.toBeUndefined();
    pending.dispose();
    await expect(abortPromise(controller.signal).promise).resolves.toBeUndefined();

    const other = new AbortController();
    const disposed = abortPromise(other.signal);
    disposed.dispose();
    let settled = false;
    void disposed.promise.then(() => {
      settled = true;
    });
    other.abort();
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
  });
});

describe("keepAlive", () => {
  it("holds a ref'd handle until released (idempotent)", () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const hold = keepAlive();
    expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBe(before + 1);
    hold.release();
    hold.release();
    expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBe(before);
  });
});
