import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { killChildren, fixtureSpawner } from "@cairnq/test-support";
import type { SQLiteDialect, SQLiteStoreOptions } from "../src/index.js";
import { SQLiteStore } from "../src/index.js";
import type { SQLiteWakeups } from "../src/sqlite-wakeups.js";

const dirs: string[] = [];
const stores: SQLiteStore[] = [];

/** A database path in a fresh temp directory, removed after the test. */
export function tempFile(name = "cairnq.db"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-sqlite-"));
  dirs.push(dir);
  return path.join(dir, name);
}

/** A store closed after the test. */
export function openStore(file: string = tempFile(), options?: SQLiteStoreOptions): SQLiteStore {
  const store = new SQLiteStore(file, options);
  stores.push(store);
  return store;
}

/** Starts `node` on one of this package's fixtures (`fixtureSpawner` of @cairnq/test-support); killed after the test. */
export const spawnFixture = fixtureSpawner(new URL(".", import.meta.url));

export { exited, nextLine } from "@cairnq/test-support";

// Wake-up waits use long timeouts (10 s) so that "woke early" is told apart from
// "timed out" without asserting latencies; the numbers are measured, not tested.
export const LONG_MS = 10_000;

export function wakeupsOf(store: SQLiteStore): SQLiteWakeups {
  return (store.dialect as SQLiteDialect).wakeups;
}

/** Settles with the elapsed milliseconds; `settled()` tells whether it did yet. */
export function timed(start: () => Promise<unknown>): { done: Promise<number>; settled: () => boolean } {
  // The clock starts before the call: a wait's timer starts inside it, and the synchronous work after that (a read,
  // starting a watch) once took 13 ms on a busy machine, so a clock started after it measured 67 ms of an 80 ms wait.
  const started = performance.now();
  let settled = false;
  const done = start().then(() => {
    settled = true;
    return performance.now() - started;
  });
  return { done, settled: () => settled };
}

export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Kills the fixtures, closes the stores and removes the temp directories of the test; test/setup.ts runs it after each test. */
export async function cleanUp(): Promise<void> {
  killChildren();
  await Promise.all(stores.splice(0).map((store) => store.close()));
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}
