import fs from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { CHECKPOINT_INTERVAL_MS } from "../../src/sqlite-checkpointer.js";
import { openStore, tempFile } from "../helpers.js";

/** The tasks the main database file holds on its own: what checkpoints copied there, without the WAL. */
function checkpointedIds(file: string): Set<string> {
  const copy = `${file}.copy`;
  fs.copyFileSync(file, copy);
  const db = new Database(copy, { readonly: true });
  try {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'cairnq_tasks'").get();
    return new Set(table === undefined ? [] : (db.prepare("SELECT id FROM cairnq_tasks").pluck().all() as string[]));
  } finally {
    db.close();
    fs.rmSync(copy, { force: true });
  }
}

/**
 * The file copied while the thread copies pages into it can be torn ("database disk image is malformed":
 * the live database, read through its WAL, never is); such a copy counts as "not yet".
 */
function tornCopy(error: unknown): boolean {
  return (error as { code?: unknown }).code === "SQLITE_CORRUPT";
}

async function eventually(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if (check()) return true;
    } catch (error) {
      if (!tornCopy(error)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe("WAL checkpoints on a thread", () => {
  it("a store that writes copies its latest commits into the database file without a commit crossing the WAL threshold", async () => {
    const file = tempFile();
    const store = openStore(file);
    // Enough writes to start the thread; then one more, far below the 1,000 frames after which a commit checkpoints itself.
    for (let i = 0; i < 220; i++) await store.submit({ name: "n", payload: { i } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const marker = await store.submit({ name: "marker" });
    expect(await eventually(() => checkpointedIds(file).has(marker.id), CHECKPOINT_INTERVAL_MS * 3)).toBe(true);
    expect(await store.get(marker.id)).toMatchObject({ id: marker.id, status: "queued" });
  });

  it("a store that writes little starts no thread: its commits stay in the WAL until SQLite checkpoints on its own (at close)", async () => {
    const file = tempFile();
    const store = openStore(file);
    const task = await store.submit({ name: "n" });
    await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_INTERVAL_MS * 1.5));
    expect(checkpointedIds(file).has(task.id)).toBe(false);
    await store.close();
    // Closing the last connection checkpoints the WAL into the file, as SQLite always does.
    expect(checkpointedIds(file).has(task.id)).toBe(true);
  });
});
