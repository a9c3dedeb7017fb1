import { describe, expect, it } from "vitest";
import { SettlementsInFlight, settlementFence } from "../src/settlements-in-flight.js";

/** A promise and the functions that settle it. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve: (value: T) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

describe("SettlementsInFlight", () => {
  it("names a settlement by its task, attempt and worker, as the sweep builds it from the row", () => {
    expect(settlementFence({ taskId: "task_1", attempt: 3, workerId: "w#1" })).toBe("task_1#3#w#1");
  });

  it("holds a fence while any settlement with it is unanswered, whether it resolves or rejects, and returns each unchanged", async () => {
    const inFlight = new SettlementsInFlight();
    // Not followed before the store's first group claim: nothing to pay for a store that never draws groups.
    void inFlight.track(Promise.resolve("early"), "z#1#w");
    expect(inFlight.fences()).toEqual([]);
    inFlight.follow();
    const first = deferred<string>();
    const retried = deferred<string>();
    const other = deferred<string>();
    const tracked = inFlight.track(first.promise, "a#1#w");
    inFlight.track(retried.promise, "a#1#w").catch(() => {});
    void inFlight.track(other.promise, "b#1#w");
    expect(tracked).toBe(first.promise);
    expect(inFlight.fences().sort()).toEqual(["a#1#w", "b#1#w"]);

    first.resolve("done");
    await expect(tracked).resolves.toBe("done");
    // The retried settlement of the same attempt is still on its way.
    expect(inFlight.fences().sort()).toEqual(["a#1#w", "b#1#w"]);

    retried.reject(new Error("lost"));
    other.resolve("done");
    await Promise.allSettled([retried.promise, other.promise]);
    await Promise.resolve();
    expect(inFlight.fences()).toEqual([]);
  });
});
