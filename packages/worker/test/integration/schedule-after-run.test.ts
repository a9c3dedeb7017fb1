/**
 * `worker.schedule()` called while the worker runs, on a real store: a schedule added after `run()` began
 * fires even when the worker had no schedule at all when it started (the in-process cases are in
 * scheduler.test.ts).
 */
import { describe, expect, it } from "vitest";
import { waitFor } from "../support/helpers.js";
import type { Backend } from "../support/stores.js";
import { BACKENDS, storePerTest } from "../support/stores.js";
import { makeWorker } from "../support/worker.js";

describe.each(BACKENDS as Backend[])("on $label", (backend) => {
  const open = storePerTest();

  it("a schedule added after run(), on a worker that started with none, submits its slots and they run", async () => {
    const store = await open(backend);
    const worker = makeWorker(store);
    let runs = 0;
    worker.task("tick", () => {
      runs += 1;
    });
    const running = worker.run();
    worker.schedule("tick", { everyMs: 100 });
    await waitFor(() => runs >= 2, 10_000, "two scheduled runs");
    await worker.stop();
    await running;
    const rows = await store.list({ name: "tick", limit: 100 });
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows) expect(row.run_at_ms % 100).toBe(0);
  });
});
