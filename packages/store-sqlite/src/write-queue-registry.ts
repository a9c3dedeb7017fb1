/**
 * One write queue per database file and process: every store of this process
 * on the same file shares it, so their writes never contend for SQLite's
 * write lock with each other ({@link WriteQueue} explains the queue itself).
 */
import { WriteQueue } from "./write-queue.js";

const registry = new Map<string, { queue: WriteQueue; refs: number }>();

/**
 * The queue of the database file `key` (a resolved path), shared by every
 * store of this process on that file; `null` gets a private queue (a bare
 * `:memory:` database). Pair with {@link releaseWriteQueue}.
 */
export function acquireWriteQueue(key: string | null): WriteQueue {
  if (key === null) return new WriteQueue();
  let entry = registry.get(key);
  if (entry === undefined) {
    entry = { queue: new WriteQueue(), refs: 0 };
    registry.set(key, entry);
  }
  entry.refs += 1;
  return entry.queue;
}

/** Drops one reference to the queue of `key`, forgetting it after the last. */
export function releaseWriteQueue(key: string | null): void {
  if (key === null) return;
  const entry = registry.get(key);
  if (entry === undefined) return;
  entry.refs -= 1;
  if (entry.refs <= 0) registry.delete(key);
}
