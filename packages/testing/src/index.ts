/**
 * `@cairnq/testing` — test CairnQ handlers, retries, delays, leases,
 * schedules and waits on a virtual clock: a store, a client and workers
 * whose time moves only when the test says so (`advance`), so a one-day
 * delay or a 30-second backoff takes milliseconds.
 *
 * @example
 * ```ts
 * import { createTestQueue } from "@cairnq/testing";
 *
 * const queue = await createTestQueue();
 * queue.worker().task("report.build", async () => ({ pages: 3 }));
 * const task = await queue.client.submit("report.build", {}, { runAtDelayMs: 86_400_000 });
 * await queue.advance(86_400_000);
 * console.log((await queue.client.get(task.id))?.status); // "succeeded"
 * await queue.close();
 * ```
 *
 * @packageDocumentation
 */
export { createTestQueue, TestQueue } from "./test-queue.js";
export type { DrainResult, TestQueueOptions, TestStoreFactory, TestWorkerOptions } from "./test-queue.js";
export { VirtualClock } from "./virtual-clock.js";
export type { VirtualClockOptions } from "./virtual-clock.js";
export type { RunningTask, RunOutcome, TaskRun } from "./run-log.js";
// The in-memory store of @cairnq/conformance, which createTestQueue uses by default: build one on a VirtualClock
// with new MemoryStore({ clock: () => clock.now() }).
export { MemoryStore } from "@cairnq/conformance";
