import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import { killChildren, fixtureSpawner } from "@cairnq/test-support";
import type { SQLiteStoreOptions } from "../src/index.js";
import { SQLiteStore } from "../src/index.js";

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

afterEach(async () => {
  killChildren();
  await Promise.all(stores.splice(0).map((store) => store.close()));
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
