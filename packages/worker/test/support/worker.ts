import type { TaskStore } from "@cairnq/protocol";
import { Worker } from "../../src/index.js";
import type { WorkerOptions } from "../../src/index.js";

/** Short intervals so tests run in tens of ms; silent unless a test passes its own logger or onError. */
export const FAST: WorkerOptions = { leaseMs: 1000, heartbeatIntervalMs: 20, pollIntervalMs: 10, retryBackoffMs: 0, stopTimeoutMs: 2000, logger: null };

const open: Worker[] = [];

/** Closes every worker {@link makeWorker} opened; test/setup.ts runs it after each test of every file. */
export async function closeWorkers(): Promise<void> {
  const workers = open.splice(0);
  await Promise.all(workers.map((w) => w.close()));
}

/** A worker closed after the test. */
export function makeWorker(store: TaskStore, options: WorkerOptions = {}): Worker {
  const worker = new Worker(store, { ...FAST, ...options });
  open.push(worker);
  return worker;
}
