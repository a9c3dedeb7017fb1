/**
 * A worker whose store is closed under it (the application closed the store
 * before stopping the worker) stops: run() rejects with the store's error
 * instead of the claim loop retrying a closed store for ever.
 */
import { describe, expect, it } from "vitest";
import { isFatalError } from "@cairnq/protocol";
import { Worker } from "../../src/index.js";
import { POSTGRES, SQLITE, storePerTest } from "../support/stores.js";
import type { Backend } from "../support/stores.js";

describe.each([POSTGRES, SQLITE] as Backend[])("on $label", (backend) => {
  const open = storePerTest();

  it("a worker whose store was closed under it stops, and run() rejects with the store's closed error", async () => {
    const store = await open(backend);
    const reported: unknown[] = [];
    const worker = new Worker(store, { pollIntervalMs: 20, onError: (err) => reported.push(err), logger: null });
    worker.task("noop", () => null);
    const running = worker.run();
    const outcome = running.then(
      () => null,
      (err: unknown) => err,
    );
    await store.close();
    const error = await outcome;
    expect(error).toBeInstanceOf(Error);
    expect(isFatalError(error)).toBe(true);
    expect((error as Error).message).toMatch(/store is closed/);
    await worker.close();
  });
});
